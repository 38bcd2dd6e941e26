"""Search on OpenSearch: one document per entity, merged from per-aspect analyses.

Version guard: an entity's document keeps, per aspect, the version it reflects and the
aspect's analysis (a deleted aspect keeps its version and no analysis). A batch reads the
documents it touches (realtime get), applies only changes above the versions held (or equal,
with `replace_equal`), merges each changed document again from its aspects and writes it back
conditionally on the sequence number it read (`if_seq_no`), so a concurrent writer (a restore
beside the processor) makes the write fail and retry from the newer document instead of
losing an aspect. Replays and duplicates change nothing. Deleting an entity deletes its
document; the next versions start over.

Refresh policy: the indices refresh only at the end of `apply`, for the indices it touched
(`refresh_interval` is off), so a reader sees a batch whole once `apply` returns, which is
what `waitForIndex` waits for. A staging index (a rebuild, `replay --into NAME`: the indices
`<prefix>_search-NAME_<entity type>`) refreshes before its own reads and at the switch, which
makes the live names aliases of its indices in one alias change (IndexFamily.adopt). See
`opensearch_mapping` for the document and `opensearch_query` for the translation of queries.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from opensearchpy import OpenSearch

from mcl_processor.annotations import Annotations, entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence, compare_versions
from mcl_processor.opensearch.indices import (
    DEFAULT_PREFIX,
    IndexFamily,
    Operation,
    bulk,
    search,
    search_page,
)
from mcl_processor.query_syntax import Query, parse, tokens
from mcl_processor.search import SearchHit, SearchIndex, SearchResult, Suggestion, checked_options
from mcl_processor.search.cdap import Expr
from mcl_processor.search.document import (
    UPSTREAM_TAGS,
    Analyzer,
    FragmentPreparer,
    is_derived,
    tags_of,
    upstream_tags_part,
)
from mcl_processor.search.matching import has_tokens, hit_matches, hit_tags
from mcl_processor.search.opensearch_mapping import (
    decode_analysis,
    encode_analysis,
    entity_source,
    facet_names,
    index_body,
    parse_suggestion,
    suggestion_prefix,
)
from mcl_processor.search.opensearch_query import (
    MAX_WORDS,
    VISIBLE,
    any_column,
    search_body,
    select_body,
    starting_with,
    starts,
    too_many_words,
)

MODEL = "search"
MAX_ID_BYTES = 512  # OpenSearch's limit on a document id; longer URNs are hashed
CAS_ATTEMPTS = 50  # rounds of conditional writes before a batch gives up
LATER_TOKEN_DOCUMENTS = 50  # autocomplete looks for later-token matches in this many documents
Update = Callable[[dict[str, Any]], bool]  # changes a document's aspects in place; whether it changed them


def doc_id(urn: str) -> str:
    """The document id of an entity: its URN, or a hash of a URN too long for an id."""
    if len(urn.encode()) <= MAX_ID_BYTES:
        return urn
    return "sha256:" + hashlib.sha256(urn.encode()).hexdigest()


class AnalysisPreparer(FragmentPreparer):
    """Computes, in any process, the encoded analyses `apply` reads from `AspectChange.prepared`."""

    @staticmethod
    def encode(analyzer: Analyzer, value: Any) -> str:
        return encode_analysis(analyzer.analyse(value))


class OpenSearchSearchIndex(SearchIndex):
    """The search index in the OpenSearch indices `<prefix>_search_<entity type>`."""

    def __init__(self, client: OpenSearch, annotations: Annotations, prefix: str = DEFAULT_PREFIX,
                 shards: int = 1, replicas: int = 0, indices: IndexFamily | None = None):
        self.client = client
        self.annotations = annotations
        self.analyzers = {name: Analyzer(a) for name, a in annotations.by_aspect.items() if annotations.searched(name)}
        self.entity_types = {name.lower(): name for name in annotations.registry.entities}
        self.indices = indices or IndexFamily(client, prefix, MODEL,
                                              lambda key: index_body(annotations, self.entity_types[key.lower()]),
                                              shards, replicas)
        self.facets = facet_names(annotations)

    def _type_of(self, urn: str) -> str | None:
        """The registry's name of a URN's entity type (None when it has none)."""
        return self.entity_types.get(entity_type_of(urn).lower())

    # -- writes ---------------------------------------------------------------------------

    def apply(self, batch: ChangeBatch) -> None:
        touched: set[str] = set()
        if batch.resets:
            touched |= self._reset(batch.resets)
        by_urn: dict[str, list[tuple[AspectChange, dict[str, Any]]]] = defaultdict(list)
        for change in batch.changes:
            if change.aspect in self.analyzers:
                by_urn[change.urn].append((change, self._entry(change)))
        if by_urn:
            touched |= self._write(by_urn, batch.replace_equal)
        self.indices.written(touched)

    def _entry(self, change: AspectChange) -> dict[str, Any]:
        analysis = None
        if not change.deleted:
            prepared = change.prepared
            analysis = prepared or AnalysisPreparer.encode(self.analyzers[change.aspect], change.value)
        return {"version": change.version, "analysis": analysis}

    def preparer(self) -> AnalysisPreparer:
        """Computes ahead, in any process, the analyses of (aspect, value JSON) pairs."""
        return AnalysisPreparer({name: analyzer.annotations for name, analyzer in self.analyzers.items()})

    def _reset(self, urns: Sequence[str]) -> set[str]:
        types = {urn: entity_type for urn in urns if (entity_type := self._type_of(urn))}
        self.indices.ensure(set(types.values()))
        targets = [(self.indices.name(entity_type), urn) for urn, entity_type in types.items()]
        bulk(self.client, [({"delete": {"_index": index, "_id": doc_id(urn)}}, None) for index, urn in targets],
             accept=frozenset({404}))
        return {index for index, _ in targets}

    def _write(self, by_urn: Mapping[str, list[tuple[AspectChange, dict[str, Any]]]], replace_equal: bool) -> set[str]:
        """Write the changed documents (see `_update`): each change above the version held."""
        def update(changes: list[tuple[AspectChange, dict[str, Any]]]) -> Update:
            def apply(aspects: dict[str, Any]) -> bool:
                fresh = False
                for change, entry in changes:
                    held = aspects.get(change.aspect)
                    if held is None or change.version > held["version"] or (
                            replace_equal and change.version == held["version"]):
                        aspects[change.aspect] = entry
                        fresh = True
                return fresh
            return apply
        return self._update({urn: update(changes) for urn, changes in by_urn.items()},
                            {urn: changes[0][0].entity_type for urn, changes in by_urn.items()})

    def _update(self, updates: Mapping[str, Update], types: Mapping[str, str]) -> set[str]:
        """Write the documents an update changes, conditionally; those another writer changed
        meanwhile are read and updated again. Returns the indices written."""
        self.indices.ensure(set(types.values()))
        pending = list(updates)
        touched: set[str] = set()
        for _ in range(CAS_ATTEMPTS):
            stored = self._get(pending, types)
            operations: list[Operation] = []
            written = []
            for urn in pending:
                found = stored.get(urn)
                aspects = dict(found["_source"]["aspects"]) if found else {}
                if not updates[urn](aspects):
                    continue
                index = self.indices.name(types[urn])
                target: dict[str, Any] = {"_index": index, "_id": doc_id(urn)}
                if found:
                    target.update(if_seq_no=found["_seq_no"], if_primary_term=found["_primary_term"])
                operations.append(({"index" if found else "create": target}, entity_source(urn, types[urn], aspects)))
                written.append((urn, index))
            results = bulk(self.client, operations, accept=frozenset({409}))
            touched.update(index for (_, index), result in zip(written, results, strict=True) if result["status"] < 300)
            pending = [urn for (urn, _), result in zip(written, results, strict=True) if result["status"] == 409]
            if not pending:
                return touched
        raise RuntimeError(f"search documents kept changing under {len(pending)} conditional writes, e.g. {pending[0]}")

    def field_tags(self, urns: Collection[str], upstream: bool = False) -> dict[str, set[str]]:
        types = {urn: entity_type for urn in urns if (entity_type := self._type_of(urn))}
        found = {urn: set().union(*(tags_of(decode_analysis(entry["analysis"]).fragment, upstream)
                                    for aspect, entry in doc["_source"]["aspects"].items()
                                    if entry.get("analysis") and is_derived(aspect) == upstream))
                 for urn, doc in self._get(list(types), types).items()}
        return {urn: tags for urn, tags in found.items() if tags}

    def set_upstream_tags(self, tags: Mapping[str, Collection[str]]) -> None:
        def update(urn: str, values: Collection[str]) -> Update:
            part = upstream_tags_part(self.annotations, self.analyzers, urn, values)
            entry = part and {"version": 0, "analysis": encode_analysis(part)}

            def apply(aspects: dict[str, Any]) -> bool:
                if aspects.get(UPSTREAM_TAGS) == entry or (entry is None and UPSTREAM_TAGS not in aspects):
                    return False
                if entry is None:
                    del aspects[UPSTREAM_TAGS]
                else:
                    aspects[UPSTREAM_TAGS] = entry
                return True
            return apply
        types = {urn: entity_type for urn in tags if (entity_type := self._type_of(urn))}
        if types:
            self.indices.written(self._update({urn: update(urn, tags[urn]) for urn in types}, types))

    def _get(self, urns: Sequence[str], types: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """The stored documents of these entities (realtime: with their sequence numbers and
        aspects), by URN."""
        found: dict[str, dict[str, Any]] = {}
        for chunk in chunks(list(urns), 1000):
            docs = [{"_index": self.indices.name(types[urn]), "_id": doc_id(urn), "_source": ["aspects"]}
                    for urn in chunk]
            for urn, doc in zip(chunk, self.client.mget(body={"docs": docs})["docs"], strict=True):
                if doc.get("found"):
                    found[urn] = doc
                elif "error" in doc and doc["error"].get("type") != "index_not_found_exception":
                    raise RuntimeError(f"reading the search document of {urn}: {doc['error']}")
        return found

    def clear(self) -> None:
        self.indices.delete_where({"match_all": {}})

    def drop(self) -> None:
        """Delete this prefix's search indices."""
        self.indices.drop()

    # -- rebuilds -------------------------------------------------------------------------

    def staging(self, name: str, fresh: bool) -> OpenSearchSearchIndex:
        if fresh and self.indices.adopted(name):
            raise ValueError(f"{name!r} names the live search indices now: choose another name")
        index = OpenSearchSearchIndex(self.client, self.annotations, indices=self.indices.staging(name))
        if fresh:
            index.drop()
        return index

    def switch_to(self, name: str) -> None:
        """The live names become aliases of the staging indices in one alias change (an entity
        type the staging index has no documents of gets an empty index first)."""
        staging = self.indices.staging(name)
        staging.ensure(key for key in self.indices.held_keys() if key in self.entity_types)
        self.indices.adopt(staging)

    def switched(self, name: str) -> bool:
        return not self.indices.building(name)

    def building(self, name: str) -> bool:
        return self.indices.building(name)

    # -- queries --------------------------------------------------------------------------

    def _targets(self, types: Sequence[str] | None) -> str | None:
        """The indices to search: those of the given (known) entity types, or all."""
        self.indices.readable()
        if types is None:
            return self.indices.pattern
        names = sorted({self.indices.name(t) for t in types if t.lower() in self.entity_types})
        return ",".join(names) or None

    def query(self, query: str, types: Sequence[str] | None = None, start: int = 0, count: int = 10,
              include_removed: bool = False, sort: str = "relevance", scope: str | None = None,
              within: Expr | None = None) -> SearchResult:
        scope, start, count = checked_options(sort, scope, start, count)
        parsed = parse(query)
        if too_many_words(parsed):
            raise ValueError(f"a query may have at most {MAX_WORDS} words in free-text and schema terms")
        targets = self._targets(types)
        if parsed.matches_nothing or targets is None:
            return SearchResult(0, [], {})
        body = search_body(parsed, include_removed, scope, sort, self.facets, within)
        response, hits = search_page(self.client, targets, body, start, count)
        total = response["hits"]["total"]["value"]
        if total == 0:
            return SearchResult(0, [], {})
        facets = {name: [(b["key"], b["doc_count"]) for b in agg["buckets"]]
                  for name, agg in sorted(response.get("aggregations", {}).items()) if agg["buckets"]}
        return SearchResult(total, [self._hit(hit["_source"], parsed) for hit in hits], facets)

    def select(self, expr: Expr, exclude: Expr | None = None, start: int = 0, count: int = 10,
               sort: str = "name") -> SearchResult:
        checked_options(sort, None, start, count)
        if sort == "relevance":
            raise ValueError("a CDAP search sorts by name or urn")
        self.indices.readable()
        response, hits = search_page(self.client, self.indices.pattern, select_body(expr, exclude, sort),
                                     max(0, start), max(0, count))
        return SearchResult(response["hits"]["total"]["value"],
                            [SearchHit(h["_source"]["urn"], h["_source"]["entityType"], h["_source"].get("title"),
                                       h["_source"].get("description")) for h in hits], {})

    @staticmethod
    def _hit(source: Mapping[str, Any], parsed: Query) -> SearchHit:
        parts = [analysis.fragment for analysis in (decode_analysis(entry["analysis"])
                 for _, entry in sorted(source["aspects"].items()) if entry.get("analysis"))]
        return SearchHit(source["urn"], source["entityType"], source.get("title"), source.get("description"),
                         hit_matches(parts, parsed), hit_tags(parts))

    def autocomplete(self, prefix: str, limit: int = 10) -> list[Suggestion]:
        wanted = tokens(prefix)
        if not wanted or limit <= 0:
            return []
        low = prefix.strip().lower()
        self.indices.readable()
        found = self._whole_values(low, limit)
        if len(found) < limit:  # then values with a later token starting with the prefix
            found.update((key, value) for key, value in self._later_tokens(low, wanted).items() if key not in found)
        ranked = sorted(found.items(), key=lambda kv: (not kv[0][0].startswith(low), -kv[1][1], kv[0]))
        return [Suggestion(value, kind, count) for (_, kind), (value, count) in ranked[:limit]]

    def _whole_values(self, low: str, limit: int) -> dict[tuple[str, str], tuple[str, int]]:
        """Up to 2 * limit suggestions starting with the prefix, the first in order, with how many
        visible entities carry them (none for a prefix too long to compile into a query)."""
        keyword = suggestion_prefix(low)
        try:
            starting = starts("suggestions", keyword)
        except ValueError:
            return {}
        response = search(self.client, self.indices.pattern, {
            "size": 0,
            "query": {"bool": {"filter": [*VISIBLE, starting]}},
            "aggs": {"values": {"terms": {"field": "suggestions", "include": starting_with(keyword),
                                          "size": 4 * limit, "order": {"_key": "asc"}}}}})
        found: dict[tuple[str, str], tuple[str, int]] = {}
        for bucket in response.get("aggregations", {}).get("values", {}).get("buckets", []):
            lvalue, kind, value = parse_suggestion(bucket["key"])
            if (lvalue, kind) in found:  # the same value in another case: one suggestion
                shown, count = found[(lvalue, kind)]
                found[(lvalue, kind)] = (shown, count + bucket["doc_count"])
            elif lvalue.startswith(low) and len(found) < 2 * limit:
                found[(lvalue, kind)] = (value, bucket["doc_count"])
        return found

    def _later_tokens(self, low: str, wanted: list[str]) -> dict[tuple[str, str], tuple[str, int]]:
        """Suggestions of the first documents matching the prefix whose later token starts with it."""
        response = search(self.client, self.indices.pattern, {
            "size": LATER_TOKEN_DOCUMENTS, "sort": [{"urn": "asc"}], "_source": ["aspects"],
            "query": {"bool": {"filter": [*VISIBLE, any_column(wanted, ("name", "schema", "keywords"))]}}})
        later: dict[tuple[str, str], tuple[str, set[int]]] = {}
        for n, hit in enumerate(response["hits"]["hits"]):
            for entry in hit["_source"]["aspects"].values():
                if not entry.get("analysis"):
                    continue
                for lvalue, kind, value in decode_analysis(entry["analysis"]).fragment.suggestions:
                    if not lvalue.startswith(low) and has_tokens(lvalue, wanted):
                        later.setdefault((lvalue, kind), (value, set()))[1].add(n)
        return {key: (value, len(docs)) for key, (value, docs) in later.items()}

    # -- consistency ----------------------------------------------------------------------

    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        types = {urn: entity_type for urn in urns if (entity_type := self._type_of(urn))}
        stored: dict[tuple[str, str], tuple[int, str]] = {}
        for urn, doc in self._get(list(types), types).items():
            for aspect, entry in doc["_source"]["aspects"].items():
                if entry.get("analysis") and not is_derived(aspect):
                    stored[(urn, aspect)] = (entry["version"], entry["analysis"])
        wanted = {(c.urn, c.aspect): c for c in expected if c.aspect in self.analyzers}
        return compare_versions(MODEL, stored, wanted,
                                lambda change: AnalysisPreparer.encode(self.analyzers[change.aspect], change.value))

    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        body = {"query": {"bool": {"filter": [{"term": {"live": True}}, {"range": {"urn": {"gt": after}}}],
                                   "must_not": [{"term": {"derivedOnly": True}}]}},
                "sort": [{"urn": "asc"}], "_source": ["urn"], "track_total_hits": False}
        self.indices.readable()
        _, hits = search_page(self.client, self.indices.pattern, body, 0, limit)
        return [hit["_source"]["urn"] for hit in hits]

