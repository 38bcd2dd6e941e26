"""Lodestar's search language (`query_syntax.Query`) as OpenSearch query DSL.

Queries are built as data: user text only ever becomes the value of a query (a phrase to
analyse, a keyword, an escaped regular expression), never DSL, so no input can change a
query's structure.

Ranking follows the port's tiers. Each tier is a condition; a document scores in the best
tier it meets: the tiers are `script_score` clauses of a `dis_max`, tier i of n (best first)
scoring n - i plus a part below 1 that orders within the tier (the shorter shown name in name
tiers, the column's BM25 relevance squashed into [0, 1) in the others), and hits sort by
[_score desc, urn asc].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcl_processor.query_syntax import Query, Term
from mcl_processor.search import SCOPES
from mcl_processor.search.cdap import All, Atom, Expr
from mcl_processor.search.document import TAGS_KEY
from mcl_processor.search.opensearch_mapping import column_field, entry, entry_prefix, facet_field

TIER_COLUMNS = ("name", "schema", "keywords", "text")  # where a free-text term matched, best first
MAX_WORDS = 48  # tokens of the free-text and schema terms of one query (each adds clauses to every tier)
MAX_EXPANSIONS = 10_000  # terms a prefix longer than the indexed prefixes may expand to
MAX_REGEX = 900  # characters of a regular expression (OpenSearch takes up to 1000)
MAX_PREFIX_BYTES = 900  # of a keyword prefix (Lucene compiles automata of up to 1000 steps)
FACET_VALUES = 20
FACET_SHARD_VALUES = 200
SHORTER_NAME = "params.tier + 1.0 / (2.0 + doc['titleLength'].value)"
RELEVANCE = "params.tier + _score / (_score + 1.0)"
SORTS: dict[str, list[dict[str, Any]]] = {
    "urn": [{"urn": "asc"}],
    "-urn": [{"urn": "desc"}],
    "name": [{"sortName": {"order": "asc", "missing": "_first"}}, {"urn": "asc"}],
    "-name": [{"sortName": {"order": "desc", "missing": "_last"}}, {"urn": "desc"}],
}
RANKED = [{"_score": "desc"}, {"urn": "asc"}]
VISIBLE: list[dict[str, Any]] = [{"term": {"live": True}}, {"term": {"removed": False}}]


def phrase(field: str, words: Sequence[str], prefix: bool) -> dict[str, Any]:
    """The words in order in a field, the last as a prefix when `prefix`."""
    text = " ".join(words)
    if prefix:
        return {"match_phrase_prefix": {field: {"query": text, "max_expansions": MAX_EXPANSIONS}}}
    return {"match_phrase": {field: {"query": text}}}


def starts(field: str, prefix: str) -> dict[str, Any]:
    """Keywords starting with `prefix`; raises ValueError for a prefix longer than OpenSearch
    compiles into a query (MAX_PREFIX_BYTES)."""
    if len(prefix.encode()) > MAX_PREFIX_BYTES:
        raise ValueError(f"a prefix may have at most {MAX_PREFIX_BYTES} bytes")
    return {"prefix": {field: {"value": prefix}}}


def any_of(queries: list[dict[str, Any]]) -> dict[str, Any]:
    return queries[0] if len(queries) == 1 else {"bool": {"should": queries, "minimum_should_match": 1}}


def filters(parsed: Query, include_removed: bool, scope: str | None) -> list[dict[str, Any]]:
    """What every hit satisfies: live, not soft-deleted (unless include_removed), the
    `key:value`, `tags:` and `schema:` terms."""
    scopes = (scope,) if scope else SCOPES
    out: list[dict[str, Any]] = list(VISIBLE if not include_removed else VISIBLE[:1])
    for key, flt in [(f.key, f) for f in parsed.filters] + [(TAGS_KEY, f) for f in parsed.tags]:
        if flt.prefix:
            out.append(any_of([starts("properties", entry_prefix(s, key, flt.value)) for s in scopes]))
        else:
            out.append({"terms": {"filters": [entry(s, key, flt.value) for s in scopes]}})
    out.extend(phrase(column_field("schema"), term.tokens, term.prefix) for term in parsed.schema)
    return out


def tiers(terms: Sequence[Term]) -> list[tuple[dict[str, Any], bool]]:
    """(condition, whether the tier orders by relevance rather than the shorter name) per tier,
    best first: a name equal to a term; names holding every term; then per column
    (TIER_COLUMNS) a term matching exactly, then as a prefix."""
    exact = [t for t in terms if not t.prefix]
    out: list[tuple[dict[str, Any], bool]] = []
    names = [t.text for t in exact if t.text]
    if names:
        out.append(({"terms": {"names": names}}, False))
    if len(terms) > 1:
        out.append(({"bool": {"filter": [phrase(column_field("name"), t.tokens, t.prefix) for t in terms]}}, False))
    for column in TIER_COLUMNS:
        field, by_relevance = column_field(column), column != "name"
        if exact:
            out.append((any_of([phrase(field, t.tokens, False) for t in exact]), by_relevance))
        out.append((any_of([phrase(field, t.tokens, True) for t in terms]), by_relevance))
    return out


def ranked(terms: Sequence[Term]) -> dict[str, Any]:
    """A query matching the documents a free-text term matches in any column, scored by tier.
    A relevance tier is scored by its own condition: the BM25 score of its phrases in its column."""
    conditions = tiers(terms)
    clauses = []
    for i, (condition, by_relevance) in enumerate(conditions):
        query = condition if by_relevance else {"constant_score": {"filter": condition}}
        script = {"source": RELEVANCE if by_relevance else SHORTER_NAME, "params": {"tier": float(len(conditions) - i)}}
        clauses.append({"script_score": {"query": query, "script": script}})
    return {"dis_max": {"queries": clauses, "tie_breaker": 0.0}}


def search_body(parsed: Query, include_removed: bool, scope: str | None, sort: str,
                facets: Sequence[str], within: Expr | None = None) -> dict[str, Any]:
    """The request body of a search (without from/size); `within`: CDAP terms every hit has."""
    query: dict[str, Any] = {"bool": {"filter": filters(parsed, include_removed, scope)
                                      + ([cdap_query(within)] if within is not None else [])}}
    order = SORTS.get(sort, SORTS["urn"])
    if parsed.terms:
        query["bool"]["must"] = [ranked(parsed.terms)]
        if sort == "relevance":
            order = RANKED
    return {
        "query": query,
        "sort": order,
        "track_total_hits": True,
        "_source": ["urn", "entityType", "title", "description", "aspects"],
        "aggs": {name: {"terms": {"field": facet_field(name), "size": FACET_VALUES,
                                  "shard_size": FACET_SHARD_VALUES,
                                  "order": [{"_count": "desc"}, {"_key": "asc"}]}} for name in facets},
    }


def cdap_query(expr: Expr) -> dict[str, Any]:
    """The DSL of CDAP terms (search/cdap.py) over the `cdap` keyword field."""
    if isinstance(expr, Atom):
        kind = "prefix" if expr.prefix else "term"
        return any_of([{kind: {"cdap": {"value": token}}} for token in expr.tokens()])
    parts = [cdap_query(part) for part in expr.parts]
    if isinstance(expr, All):
        return {"bool": {"filter": parts}} if parts else {"match_all": {}}
    return {"bool": {"should": parts, "minimum_should_match": 1}} if parts else {"match_none": {}}


def select_body(expr: Expr, exclude: Expr | None, sort: str) -> dict[str, Any]:
    """The request body of a CDAP search (without from/size)."""
    query: dict[str, Any] = {"bool": {"filter": [*VISIBLE, cdap_query(expr)]}}
    if exclude is not None:
        query["bool"]["must_not"] = [cdap_query(exclude)]
    return {"query": query, "sort": SORTS[sort], "track_total_hits": True,
            "_source": ["urn", "entityType", "title", "description"]}


def starting_with(prefix: str, limit: int = MAX_REGEX) -> str:
    """A Lucene regular expression of the strings starting with `prefix`, every character but
    letters and digits escaped; past `limit` characters of expression the prefix is cut (the
    expression then matches more, which callers filter)."""
    out: list[str] = []
    size = 2
    for ch in prefix:
        part = ch if ch.isalnum() else "\\" + ch
        if size + len(part) > limit:
            break
        out.append(part)
        size += len(part)
    return "".join(out) + ".*"


def any_column(words: Sequence[str], columns: Sequence[str]) -> dict[str, Any]:
    """The words as a phrase, the last a prefix, in any of the columns."""
    return any_of([phrase(column_field(c), words, True) for c in columns])


def too_many_words(parsed: Query) -> bool:
    """Whether the terms would make more clauses than OpenSearch takes in one query (1024)."""
    return sum(len(t.tokens) for t in (*parsed.terms, *parsed.schema)) > MAX_WORDS

