"""The query engine of SQLite search (sqlite.py writes the tables it reads): free text in
tiers (an exact name, every term in the name, then per column exact before prefix matches),
filters as FTS5 expressions, sorts by name or URN (walking the URN index for many hits),
totals counted up to TOTAL_LIMIT, facet counts from a sample, autocomplete, and CDAP's search
over `search_terms`. Each reads hits in FTS5's document order up to what its answer needs,
never all of a broad query's hits (long prefixes become words first: `_phrases`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

import orjson

from mcl_processor.changes import chunks
from mcl_processor.query_syntax import Query, parse, tokens
from mcl_processor.readmodels_db import Database, consistent_read
from mcl_processor.search import SCOPES, TOTAL_LIMIT, SearchHit, SearchResult, Suggestion, cdap, checked_options
from mcl_processor.search.document import (
    BM25_WEIGHTS,
    TAGS_KEY,
    Fragment,
    everything_token,
    name_token,
    pair_token,
    property_token,
    removed_token,
    suggested,
    suggestion_prefix,
    type_token,
)
from mcl_processor.search.matching import has_tokens as _has_tokens
from mcl_processor.search.matching import hit_matches, hit_tags
from mcl_processor.staging import staging_name

TEXT_COLUMNS = "{name schema text keywords}"
TIERS = ("name", "schema", "keywords", "text")  # where a free-text term matched, best first
SORT_LIMIT = 2000  # up to this many hits are sorted by URN; more are found by walking the URN index
WALK_SET_LIMIT = TOTAL_LIMIT  # up to this many hits are fetched at once for the walk; more are probed
WALKS = {  # indexed document orders: key columns, ORDER BY, comparison with the last key seen
    "urn": ("urn", "urn", ">"),
    "-urn": ("urn", "urn DESC", "<"),
}
RANK_LIMIT = 5000  # a tier with more hits than this orders by the shorter name instead of bm25
FEW_LIMIT = 1000  # a tier of every term in the name with up to this many hits is read whole once
EXPAND_LIMIT = 256  # a prefix filter with up to this many values becomes exact filter tokens
EXPAND_WORDS = 32  # a prefix starting up to this many indexed words is matched as those words
PREFIX_INDEXED = 3  # FTS5 keeps an index of the prefixes up to this long (`prefix = '2 3'`)
PAIRS_MARK = "lodestarwordpairs1"  # in the lexicon of an index whose documents all have their word pairs
FACET_SAMPLE = 1000  # broader queries count facets on this many hits and scale the counts
FACET_VALUES = 20
SUGGESTION_COUNT = 50  # autocomplete counts carriers of a value up to this many
NAME_LENGTH_LIMIT = (1 << 20) - 1  # longer shown names order as this long
SHORTER_NAME = f"min(coalesce(length(d.name), 0), {NAME_LENGTH_LIMIT})"  # the order of name tiers, ties by URN
DOC_ID_MASK = (1 << 32) - 1
T = TypeVar("T")
FacetTally = tuple[Counter[tuple[str, str]], int]  # hits of a sample per (facet, value), and the sample's size
Total = tuple[int, bool]  # a number of hits, and whether it is estimated


class Tables:
    """The table names of a search model: the live `search_*` ones, or a staging model's
    `search_*__NAME`."""

    def __init__(self, staging: str | None = None):
        suffix = "" if staging is None else f"__{staging_name(staging)}"
        self.docs, self.versions, self.properties, self.fts, self.names, self.terms, self.suggest, self.lexicon = (
            f"search_{table}{suffix}" for table in ("docs", "versions", "properties", "fts", "names", "terms",
                                                    "suggest", "lexicon"))
        self.old_suggestions = f"search_suggestions{suffix}"  # of an index made before `search_suggest`

    def __iter__(self) -> Iterator[str]:
        """Every table, those referring to documents before `docs`."""
        return iter((self.properties, self.versions, self.fts, self.names, self.terms, self.suggest, self.lexicon,
                     self.docs))


class SqliteSearchQueries:
    """The query methods of `SqliteSearchIndex` (the port's `query`, `select`, `autocomplete`),
    on the tables `t` of the database `db`; `_aside` runs counts beside a ranking."""

    db: Database
    t: Tables
    field_keys: frozenset[str]  # the filter keys fields (not maps' entries) add: `field_filter_keys`
    _aside: ThreadPoolExecutor

    @consistent_read
    def query(self, query: str, types: Sequence[str] | None = None, start: int = 0, count: int = 10,
              include_removed: bool = False, sort: str = "relevance", scope: str | None = None,
              within: cdap.Expr | None = None) -> SearchResult:
        scope, start, count = checked_options(sort, scope, start, count)
        parsed = parse(query)
        restriction = None if within is None else cdap.fts5(within)
        if parsed.matches_nothing or (types is not None and not types) or (within is not None and restriction is None):
            return SearchResult(0, [], {})
        conn = self.db.reader()
        hits = _Hits.of(conn, self.t, parsed, types, include_removed, scope, self.field_keys, restriction)
        if parsed.terms and sort == "relevance":  # the total and the facet sample are read beside the ranking
            # A sample of exact terms streams: it is read after the count. One of prefix terms
            # evaluates them whole, as the count does: both are read at once (two connections,
            # SQLite runs without the GIL).
            reads = [hits.total_and_tally] if hits.exact else [hits.total, hits.facet_tally]
            pending = [self._aside.submit(self._in_snapshot, read) for read in reads]
            found = self._hits(conn, _ranked(conn, parsed, hits, start, count), parsed)
            results = [future.result() for future in pending]
            (total, estimated), tally = results[0] if hits.exact else results
            if not total:
                return SearchResult(0, found, {})
            return SearchResult(total, found, *hits.facet_counts(tally, total), total_estimated=estimated)
        (total, estimated), tally = hits.total_and_tally(conn)
        if total == 0:
            return SearchResult(0, [], {})
        page = hits.page(conn, sort, start, count, total)
        return SearchResult(total, self._hits(conn, page, parsed), *hits.facet_counts(tally, total),
                            total_estimated=estimated)

    @consistent_read
    def select(self, expr: cdap.Expr, exclude: cdap.Expr | None = None, start: int = 0, count: int = 10,
               sort: str = "name") -> SearchResult:
        _, start, count = checked_options(sort, None, start, count)
        if sort == "relevance":
            raise ValueError("a CDAP search sorts by name or urn")
        wanted, unwanted = cdap.fts5(expr), None if exclude is None else cdap.fts5(exclude)
        if wanted is None:
            return SearchResult(0, [], {})
        matching = f"meta : ({wanted})" if wanted else _any_of([everything_token()])
        if unwanted:
            matching = f"({matching}) NOT (meta : ({unwanted}))"
        hits = _Hits(self.t, "", "", matching, f" NOT {_any_of([removed_token()])}", "", [], False, self.t.terms)
        conn = self.db.reader()
        total = hits.count(conn)
        if total == 0:
            return SearchResult(0, [], {})
        page = hits.page(conn, sort, start, count, total)
        return SearchResult(total, self._hits(conn, page, Query()), {})

    def _in_snapshot(self, read: Callable[[sqlite3.Connection], T]) -> T:
        with self.db.snapshot() as conn:  # this thread's own connection
            return read(conn)

    def _hits(self, conn: sqlite3.Connection, page: list[int], parsed: Query) -> list[SearchHit]:
        if not page:
            return []
        marks = ",".join("?" * len(page))
        docs = {row[0]: row[1:] for row in conn.execute(
            f"SELECT id, urn, entity_type, name, description FROM {self.t.docs} WHERE id IN ({marks})", page)}
        fragments = stored_fragments(conn, self.t, page)
        out = []
        for doc_id in page:
            urn, entity_type, name, description = docs[doc_id]
            parts = [fragment for _, fragment in fragments.get(doc_id, [])]
            out.append(SearchHit(urn, entity_type, name, description, hit_matches(parts, parsed), hit_tags(parts)))
        return out

    @consistent_read
    def autocomplete(self, prefix: str, limit: int = 10) -> list[Suggestion]:
        wanted = tokens(prefix)
        if not wanted or limit <= 0:
            return []
        conn = self.db.reader()
        low = prefix.strip().lower()
        carried: dict[tuple[str, str], list[int]] = {}
        for token in _suggestion_tokens(conn, self.t, low, 2 * limit):  # whole values first
            carriers = self._carriers(conn, f"SELECT rowid AS doc_id FROM {self.t.suggest} WHERE {self.t.suggest}"
                                      " MATCH ? LIMIT ?", (f'"{token}"', SUGGESTION_COUNT))
            if carriers:
                carried[suggested(token)] = carriers
        shown = self._shown(conn, carried)
        found = {key: (shown[key], len(carriers)) for key, carriers in carried.items()}
        if len(found) < limit:  # then values with a later token starting with the prefix
            words = _phrases(conn, self.t, tuple(wanted), True)
            matching = f"{{name schema keywords}} : ({words}) NOT {_any_of([removed_token()])}"
            later: dict[tuple[str, str], tuple[str, set[int]]] = {}
            for doc_id, data in conn.execute(
                    f"SELECT v.doc_id, v.fragment FROM (SELECT rowid FROM {self.t.fts} WHERE {self.t.fts} MATCH ?"
                    f" LIMIT 50) h JOIN {self.t.versions} v ON v.doc_id = h.rowid WHERE v.fragment IS NOT NULL",
                    (matching,)):
                for lvalue, kind, value in Fragment.decode(data).suggestions:
                    if not lvalue.startswith(low) and _has_tokens(lvalue, wanted):
                        later.setdefault((lvalue, kind), (value, set()))[1].add(doc_id)
            found.update((key, (value, len(docs))) for key, (value, docs) in later.items() if key not in found)
        ranked = sorted(found.items(), key=lambda kv: (not kv[0][0].startswith(low), -kv[1][1], kv[0]))
        return [Suggestion(value, kind, count) for (_, kind), (value, count) in ranked[:limit]]

    def _shown(self, conn: sqlite3.Connection, carried: dict[tuple[str, str], list[int]]) -> dict[tuple[str, str], str]:
        """How each suggested (lower-cased value, kind) is written (its case) by its first carrier."""
        fragments = stored_fragments(conn, self.t, {carriers[0] for carriers in carried.values()})
        written: dict[tuple[str, str, int], str] = {}
        for doc_id, parts in fragments.items():  # in aspect order: the first aspect's writing
            for _, fragment in parts:
                for lvalue, kind, value in fragment.suggestions:
                    written.setdefault((lvalue, kind, doc_id), value)
        return {(lvalue, kind): written.get((lvalue, kind, carriers[0]), lvalue)
                for (lvalue, kind), carriers in carried.items()}

    def _carriers(self, conn: sqlite3.Connection, select_ids: str, params: tuple) -> list[int]:
        """The visible documents among those the query selects."""
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM ({select_ids}) h JOIN {self.t.docs} d ON d.id = h.doc_id"
            " WHERE d.live = 1 AND d.removed = 0", params)]


def stored_fragments(conn: sqlite3.Connection, t: Tables,
                     doc_ids: Iterable[int]) -> dict[int, list[tuple[str, Fragment]]]:
    """The live fragments of documents, in aspect order."""
    found: dict[int, list[tuple[str, Fragment]]] = defaultdict(list)
    for chunk in chunks(sorted(set(doc_ids))):
        marks = ",".join("?" * len(chunk))
        for doc_id, aspect, data in conn.execute(
                f"SELECT doc_id, aspect, fragment FROM {t.versions} WHERE doc_id IN ({marks})"
                " AND fragment IS NOT NULL ORDER BY doc_id, aspect", chunk):
            found[doc_id].append((aspect, Fragment.decode(data)))
    return found


def names_rowid(doc_id: int, name: str | None) -> int:
    """A document's `search_names` rowid: the length of its shown name above its id, so that
    rowid order is shorter-name order (doc_id = rowid & DOC_ID_MASK)."""
    return (min(len(name or ""), NAME_LENGTH_LIMIT) << 32) | doc_id


def _phrase(words: tuple[str, ...], prefix: bool) -> str:
    """An FTS5 phrase of sanitised tokens (letters and digits only, each quoted)."""
    return " + ".join(f'"{w}"' for w in words) + (" *" if prefix else "")


def _vocabulary(conn: sqlite3.Connection, table: str) -> str:
    """The (per connection) table of an FTS5 table's words."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_words USING fts5vocab(main, {table}, row)")
    return f"temp.{table}_words"


def _lexicon_has(conn: sqlite3.Connection, t: Tables, word: str) -> bool:
    return conn.execute(f"SELECT 1 FROM {_vocabulary(conn, t.lexicon)} WHERE term = ?", (word,)).fetchone() is not None


def _phrases(conn: sqlite3.Connection, t: Tables, words: tuple[str, ...], prefix: bool) -> str:
    """The FTS5 phrase of words, the last a prefix or not. A prefix longer than FTS5's prefix
    index covers becomes the phrases of the indexed words it starts (at most EXPAND_WORDS, read
    from the lexicon): FTS5 reads a word's hits lazily, in document order, and stops where the
    page or a capped count does, but merges every hit of every word a prefix starts before it
    yields the first (a cost that grows with the corpus)."""
    last = words[-1] if words else ""
    if not prefix or len(last) <= PREFIX_INDEXED or not last.isascii():
        return _phrase(words, prefix)
    started = [row[0] for row in conn.execute(f"SELECT term FROM {_vocabulary(conn, t.lexicon)} WHERE term >= ?"
                                              " AND term < ? LIMIT ?", (last, last + "\U0010ffff", EXPAND_WORDS + 1))]
    if not started or len(started) > EXPAND_WORDS:
        return _phrase(words, prefix)
    return " OR ".join(_phrase((*words[:-1], word), False) for word in started)


def _any_of(words: Sequence[str]) -> str:
    return "meta : (" + " OR ".join(f'"{w}"' for w in words) + ")"


class _Hits:
    """The documents a query matches: free text (`exact` and `prefix` phrases of its terms, over
    the text columns) and `filters`, an FTS5 expression of exact filters, entity types and the
    soft-deleted state, plus an SQL condition for the rare prefix filters that are not expanded.
    `by_type_only`: the filters are of entity types at most, so `search_names` can evaluate them."""

    def __init__(self, t: Tables, exact: str, prefix: str, filters: str, hidden: str, sql: str,
                 params: list[str | int], by_type_only: bool, table: str | None = None,
                 by_properties: _PropertyProbe | None = None):
        self.t = t
        self.by_properties = by_properties  # how the walk may tell its hits without FTS5
        self.exact = exact
        self.prefix = prefix
        self.filters = filters  # positive filters, "" when none
        self.hidden = hidden  # " NOT <removed>", or "" with include_removed
        self.sql = sql
        self.params = params
        self.by_type_only = by_type_only
        self.table = table or t.fts  # or t.terms, for expressions of CDAP terms only
        self.excluded: tuple[int, ...] = ()  # documents left out (`narrowed`)
        self.expression = self._with_filters(f"{TEXT_COLUMNS} : ({prefix})" if prefix else "")

    def _with_filters(self, expression: str) -> str:
        both = " AND ".join(f"({e})" for e in (expression, self.filters) if e) or _any_of([everything_token()])
        return f"({both}){self.hidden}"

    @classmethod
    def of(cls, conn: sqlite3.Connection, t: Tables, parsed: Query, types: Sequence[str] | None, include_removed: bool,
           scope: str | None, field_keys: frozenset[str], restriction: str | None = None) -> _Hits:
        """`restriction`: CDAP terms (search/cdap.py) every hit has, e.g. the caller's readable
        resources. `field_keys`: the filter keys fields add entries under (`field_filter_keys`)."""
        scopes = (scope,) if scope else SCOPES
        parts = [_any_of([type_token(t) for t in types])] if types is not None else []
        sql: list[str] = []
        params: list[str | int] = []
        exact_filters: list[tuple[str, list[str]]] = []
        if restriction:
            sql.append(f" AND +{t.fts}.rowid IN (SELECT rowid FROM {t.terms} WHERE {t.terms} MATCH ?)")
            params.append(f"meta : ({restriction})")
        for key, flt in [(f.key, f) for f in parsed.filters] + [(TAGS_KEY, f) for f in parsed.tags]:
            values = _expand(conn, t, key, flt.value) if flt.prefix else [flt.value]
            if values is not None:
                parts.append(_any_of([property_token(s, key, v) for s in scopes for v in values] or ["none"]))
                exact_filters.append((key, values))
            else:
                sql.append(f" AND +{t.fts}.rowid IN (SELECT doc_id FROM {t.properties} WHERE key = ? AND lvalue >= ?"
                           f" AND lvalue < ? AND scope IN ({','.join('?' * len(scopes))}))")
                params.extend([key, flt.value, flt.value + "\U0010ffff", *scopes])
        parts.extend(f"schema : ({_phrases(conn, t, term.tokens, term.prefix)})" for term in parsed.schema)
        pairs = [pair_token(a, b) for term in parsed.schema  # a prefix's last word may end further on
                 for a, b in pairwise(term.tokens[:-1] if term.prefix else term.tokens) if a.isascii() and b.isascii()]
        if pairs and _lexicon_has(conn, t, PAIRS_MARK):  # the few documents with the pairs, found first
            parts.append(" AND ".join(_any_of([pair]) for pair in pairs))
        hidden = "" if include_removed else f" NOT {_any_of([removed_token()])}"
        exact = " OR ".join(_phrase(t.tokens, False) for t in parsed.terms if not t.prefix)
        prefix = " OR ".join(_phrases(conn, t, term.tokens, True) for term in parsed.terms)
        by_type_only = not (parsed.filters or parsed.tags or parsed.schema or restriction)
        by_properties = None
        if exact_filters and not (parsed.terms or parsed.schema or restriction or sql) \
                and not any(key in field_keys for key, _ in exact_filters):
            by_properties = _PropertyProbe(t, exact_filters, scopes, types, include_removed)
        return cls(t, exact, prefix, " AND ".join(parts), hidden, "".join(sql), params, by_type_only,
                   by_properties=by_properties)

    def narrowed(self, expression: str, excluded: Sequence[int] = ()) -> _Hits:
        """The hits matching `expression` too, but for the documents `excluded`."""
        sql, params = self.sql, [*self.params]
        if excluded:
            sql += f" AND {self.table}.rowid NOT IN ({','.join('?' * len(excluded))})"
            params.extend(excluded)
        narrowed = _Hits(self.t, self.exact, "", self.filters, self.hidden, sql, params, self.by_type_only,
                         self.table)  # no property probe: the narrowing expression is more than property filters
        narrowed.expression = narrowed._with_filters(expression)
        narrowed.excluded = tuple(excluded)
        return narrowed

    def _select(self, what: str = "rowid") -> str:
        return f"SELECT {what} FROM {self.table} WHERE {self.table} MATCH ?{self.sql}"

    def count(self, conn: sqlite3.Connection, cap: int | None = None) -> int:
        """How many hits; with a cap, at most cap (the index stops looking there)."""
        if cap is None:
            return conn.execute(self._select("count(*)"), (self.expression, *self.params)).fetchone()[0]
        return conn.execute(f"SELECT count(*) FROM ({self._select()} LIMIT ?)",
                            (self.expression, *self.params, cap)).fetchone()[0]

    def total(self, conn: sqlite3.Connection) -> Total:
        """How many hits: counted up to TOTAL_LIMIT; past it, estimated from how far into the
        index (in document id order, in which FTS5 yields hits) the counted ones reach."""
        counted, last = conn.execute(f"SELECT count(*), max(rowid) FROM ({self._select()} LIMIT ?)",
                                     (self.expression, *self.params, TOTAL_LIMIT + 1)).fetchone()
        if counted <= TOTAL_LIMIT:
            return counted, False
        documents = conn.execute(f"SELECT max(id) FROM {self.t.docs}").fetchone()[0]
        return max(counted, round(counted * documents / last)), True

    def ranked(self, conn: sqlite3.Connection, start: int, count: int) -> list[int]:
        """A page by bm25 relevance (column-weighted); ties by URN."""
        return [row[0] for row in conn.execute(
            f"SELECT {self.t.fts}.rowid FROM {self.t.fts} JOIN {self.t.docs} d ON d.id = {self.t.fts}.rowid"
            f" WHERE {self.t.fts} MATCH ?{self.sql} ORDER BY bm25({self.t.fts}, {', '.join(map(str, BM25_WEIGHTS))}),"
            f" d.urn LIMIT ? OFFSET ?", (self.expression, *self.params, count, start))]

    def page(self, conn: sqlite3.Connection, sort: str, start: int, count: int, total: int) -> list[int]:
        """A page in a sort of SORTS but relevance: by shown name (any case), or by URN."""
        if sort.lstrip("-") == "name":
            return self.sorted(conn, f"d.name COLLATE NOCASE{' DESC' if sort[0] == '-' else ''}", start, count)
        if total <= SORT_LIMIT:
            return self.sorted(conn, "d.urn DESC" if sort == "-urn" else "d.urn", start, count)
        return self.walk(conn, "-urn" if sort == "-urn" else "urn", start, count, total)

    def sorted(self, conn: sqlite3.Connection, order: str, start: int, count: int) -> list[int]:
        tie = "d.urn DESC" if order.endswith("DESC") else "d.urn"
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM ({self._select()}) h JOIN {self.t.docs} d ON d.id = h.rowid"
            f" ORDER BY {order}, {tie} LIMIT ? OFFSET ?", (self.expression, *self.params, count, start))]

    def shortest_names(self, conn: sqlite3.Connection, start: int, count: int) -> tuple[list[int], int | None]:
        """A page in (shown name length, URN) order of an expression over names, entity types and
        the soft-deleted state only, read from `search_names` in rowid order: up to the page's
        last name length, never further. Also the number of hits when there are no more than
        start + count (else None)."""
        wanted = start + count
        marks = ",".join("?" * len(self.excluded))
        excluding = f" AND (rowid & {DOC_ID_MASK}) NOT IN ({marks})" if self.excluded else ""
        rowids = [row[0] for row in conn.execute(
            f"SELECT rowid FROM {self.t.names} WHERE {self.t.names} MATCH ?{excluding} ORDER BY rowid LIMIT ?",
            (self.expression, *self.excluded, wanted))]
        if len(rowids) < wanted:
            size: int | None = len(rowids)
            if size <= start:
                return [], size
            bound = rowids[-1] + 1
        else:
            size, bound = None, ((rowids[-1] >> 32) + 1) << 32  # the rest of the last length too: ties go by URN
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM (SELECT rowid AS r FROM {self.t.names} WHERE {self.t.names} MATCH ? AND rowid < ?"
            f"{excluding}) h JOIN {self.t.docs} d ON d.id = h.r & {DOC_ID_MASK} ORDER BY h.r >> 32, d.urn"
            " LIMIT ? OFFSET ?", (self.expression, bound, *self.excluded, count, start))], size

    def few(self, conn: sqlite3.Connection, limit: int) -> list[int] | None:
        """Every hit, when there are at most `limit`; else None."""
        if self.by_type_only:  # search_names holds the names in fewer, shorter postings
            found = [row[0] & DOC_ID_MASK for row in conn.execute(
                f"SELECT rowid FROM {self.t.names} WHERE {self.t.names} MATCH ? LIMIT ?", (self.expression, limit + 1))]
        else:
            found = [row[0] for row in conn.execute(f"{self._select()} LIMIT ?",
                                                    (self.expression, *self.params, limit + 1))]
        return found if len(found) <= limit else None

    def by_shorter_name(self, conn: sqlite3.Connection, doc_ids: Sequence[int], start: int, count: int) -> list[int]:
        """A page of these documents in (shown name length, URN) order."""
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM {self.t.docs} d WHERE d.id IN ({','.join('?' * len(doc_ids))})"
            f" ORDER BY {SHORTER_NAME}, d.urn LIMIT ? OFFSET ?", (*doc_ids, count, start))]

    def walk(self, conn: sqlite3.Connection, order: str, start: int, count: int, total: int) -> list[int]:
        """Many hits in an indexed document order (WALKS): walk the documents in that order and
        keep the hits. Up to WALK_SET_LIMIT hits (or with prefix phrases, which the index would
        evaluate again per probed document) are fetched as a set first; more are so dense that
        probing the few documents walked is cheaper: in `search_properties` when the query is
        of property filters only (`_PropertyProbe`), else in FTS5 (which evaluates its whole
        expression again for each document, a cost that grows with the index)."""
        keys, order_by, beyond = WALKS[order]
        every = None
        if "*" in self.expression or total <= WALK_SET_LIMIT:
            every = {row[0] for row in conn.execute(self._select(), (self.expression, *self.params))}
        documents = conn.execute(f"SELECT max(id) FROM {self.t.docs}").fetchone()[0] or 1
        batch = min(4096, 16 + (start + count) * documents // max(total, 1))  # about enough to walk past
        page: list[int] = []
        cursor: tuple = ()
        while len(page) < count:
            after = f" AND ({keys}) {beyond} ({','.join('?' * len(cursor))})" if cursor else ""
            rows = conn.execute(f"SELECT id, {keys} FROM {self.t.docs} WHERE live = 1{after} ORDER BY {order_by}"
                                " LIMIT ?", (*cursor, batch)).fetchall()
            if not rows:
                break
            ids = [row[0] for row in rows]
            found = every if every is not None else self._probe(conn, ids)
            for doc_id in ids:
                if doc_id in found:
                    if start:
                        start -= 1
                    else:
                        page.append(doc_id)
                        if len(page) == count:
                            break
            cursor, batch = tuple(rows[-1][1:]), min(batch * 4, 4096)  # hits may be sparse here: look further
        return page

    def _probe(self, conn: sqlite3.Connection, ids: list[int]) -> set[int]:
        """Which of these documents are hits."""
        if self.by_properties is not None:
            return self.by_properties.matching(conn, ids)
        return {row[0] for row in conn.execute(self._select() + f" AND rowid IN ({','.join('?' * len(ids))})",
                                               (self.expression, *self.params, *ids))}

    def in_index_order(self, conn: sqlite3.Connection, start: int, count: int) -> list[int]:
        """A page in document id order (the order documents were first indexed), in which FTS5
        yields hits: it reads up to the page's end and no further."""
        return [row[0] for row in conn.execute(self._select() + " ORDER BY rowid LIMIT ? OFFSET ?",
                                               (self.expression, *self.params, count, start))]

    def total_and_tally(self, conn: sqlite3.Connection) -> tuple[Total, FacetTally]:
        """The number of hits (`total`), and the facet tally of all of them or of a sample
        (`facet_counts` gives the facets)."""
        total = self.total(conn)
        return total, self.facet_tally(conn, exact_first=total[0] > FACET_SAMPLE) if total[0] else (Counter(), 0)

    def facet_tally(self, conn: sqlite3.Connection, exact_first: bool = True) -> FacetTally:
        """How many of up to FACET_SAMPLE hits (every hit when there are no more) carry each
        (facet, value), and how many hits that sample holds: those matching the terms exactly
        when there are enough (unlike prefix phrases, exact ones stream, so the sample costs
        no full evaluation), else the first hits."""
        rows: list[tuple[bytes]] = []
        if exact_first and self.exact:
            rows = self._facet_rows(conn, self._with_filters(f"{TEXT_COLUMNS} : ({self.exact})"))
        if len(rows) < FACET_SAMPLE:
            rows = self._facet_rows(conn, self.expression)
        counts: Counter[tuple[str, str]] = Counter()
        for (facets,) in rows:
            counts.update((facet, value) for facet, value in orjson.loads(facets))
        return counts, len(rows)

    @staticmethod
    def facet_counts(tally: FacetTally, total: int) -> tuple[dict[str, list[tuple[str, int]]], bool]:
        """The facets of `total` hits from a tally of a sample of them (scaled to the total when
        the sample could not hold every hit), and whether they were scaled."""
        counts, size = tally
        sampled = total > FACET_SAMPLE
        grouped: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for (facet, value), n in counts.items():
            grouped[facet].append((value, round(n * total / size) if sampled else n))
        return {facet: sorted(values, key=lambda v: (-v[1], v[0]))[:FACET_VALUES]
                for facet, values in sorted(grouped.items())}, sampled

    def _facet_rows(self, conn: sqlite3.Connection, expression: str) -> list[tuple[bytes]]:
        return conn.execute(f"SELECT d.facets FROM ({self._select()} LIMIT ?) h JOIN {self.t.docs} d ON d.id = h.rowid",
                            (expression, *self.params, FACET_SAMPLE)).fetchall()


class _PropertyProbe:
    """Which of some documents match a query of exact filters on keys only maps' entries (and
    upstream tags) use, with entity types and the soft-deleted state: read from
    `search_properties` and `search_docs`, which hold the same entries and flags as the
    documents' filter tokens, in a few B-tree seeks per document."""

    def __init__(self, t: Tables, filters: list[tuple[str, list[str]]], scopes: Sequence[str],
                 types: Sequence[str] | None, include_removed: bool):
        conditions, self.params = [], []
        if not include_removed:
            conditions.append("d.removed = 0")
        if types is not None:
            conditions.append(f"lower(d.entity_type) IN ({','.join('?' * len(types))})")
            self.params.extend(entity_type.lower() for entity_type in types)
        for key, values in filters:
            conditions.append(f"EXISTS (SELECT 1 FROM {t.properties} p WHERE p.key = ?"
                              f" AND p.lvalue IN ({','.join('?' * len(values))})"
                              f" AND p.scope IN ({','.join('?' * len(scopes))}) AND p.doc_id = d.id)")
            self.params.extend([key, *values, *scopes])
        self.docs = t.docs
        self.condition = "".join(f" AND {condition}" for condition in conditions)

    def matching(self, conn: sqlite3.Connection, ids: Sequence[int]) -> set[int]:
        return {row[0] for row in conn.execute(
            f"SELECT d.id FROM {self.docs} d WHERE d.id IN ({','.join('?' * len(ids))}){self.condition}",
            (*ids, *self.params))}


def _expand(conn: sqlite3.Connection, t: Tables, key: str, prefix: str) -> list[str] | None:
    """The values of a key starting with prefix, when there are at most EXPAND_LIMIT of them."""
    values: list[str] = []
    bound, operator = prefix, ">="
    while len(values) <= EXPAND_LIMIT:
        row = conn.execute(f"SELECT lvalue FROM {t.properties} WHERE key = ? AND lvalue {operator} ?"
                           " AND lvalue < ? ORDER BY lvalue LIMIT 1", (key, bound, prefix + "\U0010ffff")).fetchone()
        if row is None:
            return values
        values.append(row[0])
        bound, operator = row[0], ">"
    return None


def _ranked(conn: sqlite3.Connection, parsed: Query, hits: _Hits, start: int, count: int) -> list[int]:
    """Page through the tiers, best first: a name equal to a term; names with every term; then,
    per column (name, schema field names, keywords, text), the documents a term matches exactly
    there, then as a prefix. Name tiers order by the shorter name, the others by bm25; a tier of
    more than RANK_LIMIT hits comes in index order (the order documents were first indexed), but
    a name tier of free text alone (search_names holds it in shorter-name order).

    Names with every term are often few among many names with one: FTS5 finds that out by
    reading every posting of the terms. So when they are at most FEW_LIMIT, that is done once
    and the later tiers leave those documents out by id instead of evaluating the tier again."""
    exact_names = [name_token(t.text) for t in parsed.terms if not t.prefix and t.text]
    not_exact = f" NOT {_any_of(exact_names)}" if exact_names else ""
    tiers: list[_Tier] = []
    if exact_names:
        tiers.append(_Tier(_any_of(exact_names)))  # such a name is in the name column: the text matches
    every = ""
    if len(parsed.terms) > 1:
        every = " AND ".join(f"(name : ({_phrases(conn, hits.t, t.tokens, t.prefix)}))" for t in parsed.terms)
        tiers.append(_Tier(f"({every}){not_exact}", every=True))
    better = ""
    for column in TIERS:
        by_bm25 = column != "name"
        if hits.exact:
            tiers.append(_Tier(f"({column} : ({hits.exact})){better}{not_exact}", by_bm25, below_every=bool(every)))
            tiers.append(_Tier(f"({column} : ({hits.prefix})) NOT ({column} : ({hits.exact})){better}{not_exact}",
                               by_bm25, below_every=bool(every)))
        else:
            tiers.append(_Tier(f"({column} : ({hits.prefix})){better}{not_exact}", by_bm25, below_every=bool(every)))
        better += f" NOT ({column} : ({hits.prefix}))"
    page: list[int] = []
    with_every: list[int] | None = None  # the documents of the every-term tier, when few
    for tier in tiers:
        if len(page) >= count:
            break
        if tier.every:
            within = hits.narrowed(tier.expression)
            with_every = within.few(conn, FEW_LIMIT)
            if with_every is not None:
                if start >= len(with_every):
                    start -= len(with_every)
                    continue
                page.extend(within.by_shorter_name(conn, with_every, start, count - len(page)))
                start = 0
                continue
        elif tier.below_every and with_every is None:
            within = hits.narrowed(f"{tier.expression} NOT ({every})")
        else:
            within = hits.narrowed(tier.expression, with_every if tier.below_every else ())
        if not tier.by_bm25 and hits.by_type_only:  # a name tier: search_names has it in order
            found, size = within.shortest_names(conn, start, count - len(page))
            if size is not None and size <= start:
                start -= size
                continue
            page.extend(found)
            start = 0
            continue
        # A tier's size (counted up to where it matters) decides its order: a small one is ranked
        # (by bm25, or a name tier by the shorter name), a big one comes in index order, as
        # ranking it would read every hit; and how much of `start` it takes up.
        size = within.count(conn, cap=max(start + 1, RANK_LIMIT + 1))
        if start >= size:
            start -= size
            continue
        if size <= RANK_LIMIT:
            page.extend(within.ranked(conn, start, count - len(page)) if tier.by_bm25 else
                        within.sorted(conn, SHORTER_NAME, start, count - len(page)))
        else:
            page.extend(within.in_index_order(conn, start, count - len(page)))
        start = 0
    return page


@dataclass(frozen=True, slots=True)
class _Tier:
    """A tier of `_ranked`: its FTS5 expression, whether it orders by bm25 (else by the shorter
    name), whether it is the tier of names with every term, and whether it comes after that
    tier (so leaves its documents out)."""

    expression: str
    by_bm25: bool = False
    every: bool = False
    below_every: bool = False


def _suggestion_tokens(conn: sqlite3.Connection, t: Tables, prefix: str, limit: int) -> list[str]:
    """The tokens of up to `limit` suggested (lower-cased value, kind) starting with prefix, in
    order (`document.suggestion_token`)."""
    start = suggestion_prefix(prefix)
    return [row[0] for row in conn.execute(f"SELECT term FROM {_vocabulary(conn, t.suggest)} WHERE term >= ?"
                                           " AND term < ? AND doc > 0 LIMIT ?", (start, start + "~", limit))]
