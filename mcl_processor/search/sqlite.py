"""Search on SQLite: FTS5 documents merged from per-aspect fragments.

Tables: `search_docs` (one row per entity: shown name and description, flags, facets),
`search_versions` (per entity and aspect: the version reflected and the aspect's fragment,
NULL for a deleted aspect), `search_properties` (property and tag values, for prefix
filters), `search_suggestions` (names, field names and tags, for autocomplete) and
`search_fts` (the merged documents, without CDAP terms; rowid = document id), `search_terms`
(each document's CDAP terms, for CDAP's search; rowid = document id) and `search_names` (each
shown document's names with its type and soft-delete tokens; rowid = `names_rowid`, so that
FTS5's rowid order is the shorter-name order of the name tiers).

A staging model NAME (a rebuild, `lodestar replay --topic versioned --into NAME`) is the same
tables named `search_*__NAME`; the switch drops the live tables and renames the staging ones in
their place in one transaction: readers see the old index or the new one, never a part of it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import orjson

from mcl_processor.annotations import Annotations, entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence, compare_versions
from mcl_processor.query_syntax import Query, parse, tokens
from mcl_processor.readmodels_db import Database, consistent_read, table_exists, versions_of
from mcl_processor.search import SCOPES, SearchHit, SearchIndex, SearchResult, Suggestion, cdap, checked_options
from mcl_processor.search.document import (
    BM25_WEIGHTS,
    COLUMNS,
    DERIVED_PREFIX,
    TAGS_KEY,
    UPSTREAM_TAGS,
    Analyzer,
    Document,
    Fragment,
    FragmentPreparer,
    everything_token,
    is_derived,
    merge,
    name_token,
    property_token,
    removed_token,
    tags_of,
    type_token,
    upstream_tags_part,
)
from mcl_processor.search.matching import has_tokens as _has_tokens
from mcl_processor.search.matching import hit_matches
from mcl_processor.staging import staging_name

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {t.docs} (
    id INTEGER PRIMARY KEY, urn TEXT NOT NULL, entity_type TEXT NOT NULL, name TEXT, description TEXT,
    live INTEGER NOT NULL DEFAULT 0, removed INTEGER NOT NULL DEFAULT 0, facets BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS {t.docs}_urn ON {t.docs} (urn);
DROP INDEX IF EXISTS {t.docs}_short;
CREATE TABLE IF NOT EXISTS {t.versions} (
    doc_id INTEGER NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL, fragment BLOB,
    PRIMARY KEY (doc_id, aspect)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {t.properties} (
    key TEXT NOT NULL, lvalue TEXT NOT NULL, scope TEXT NOT NULL, doc_id INTEGER NOT NULL, aspect TEXT NOT NULL,
    PRIMARY KEY (key, lvalue, scope, doc_id, aspect)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {t.suggestions} (
    lvalue TEXT NOT NULL, kind TEXT NOT NULL, doc_id INTEGER NOT NULL, aspect TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (lvalue, kind, doc_id, aspect)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS {t.fts} USING fts5(
    name, schema, text, keywords, meta, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.names} USING fts5(
    name, meta, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.terms} USING fts5(meta, detail = column);
"""
FTS_OPTIONS = (("hashsize", 16 * 1024 * 1024),)  # large batches flush their pending text less often
TEXT_COLUMNS = "{name schema text keywords}"
TIERS = ("name", "schema", "keywords", "text")  # where a free-text term matched, best first
SORT_LIMIT = 2000  # up to this many hits are sorted by URN; more are found by walking the URN index
WALK_SET_LIMIT = 50_000  # up to this many hits are fetched at once for the walk
WALKS = {  # indexed document orders: key columns, ORDER BY, comparison with the last key seen
    "urn": ("urn", "urn", ">"),
    "-urn": ("urn", "urn DESC", "<"),
}
RANK_LIMIT = 5000  # a tier with more hits than this orders by the shorter name instead of bm25
EXPAND_LIMIT = 256  # a prefix filter with up to this many values becomes exact filter tokens
FACET_SAMPLE = 1000  # broader queries count facets on this many hits and scale the counts
FACET_VALUES = 20
SUGGESTION_COUNT = 50  # autocomplete counts carriers of a value up to this many
NAME_LENGTH_LIMIT = (1 << 20) - 1  # longer shown names order as this long
DOC_ID_MASK = (1 << 32) - 1
MODEL = "search"
T = TypeVar("T")
FacetTally = tuple[Counter[tuple[str, str]], int]  # hits of a sample per (facet, value), and the sample's size


class Tables:
    """The table names of a search model: the live `search_*` ones, or a staging model's
    `search_*__NAME`."""

    def __init__(self, staging: str | None = None):
        suffix = "" if staging is None else f"__{staging_name(staging)}"
        self.docs, self.versions, self.properties, self.suggestions, self.fts, self.names, self.terms = (
            f"search_{table}{suffix}" for table in ("docs", "versions", "properties", "suggestions", "fts", "names",
                                                    "terms"))

    def __iter__(self) -> Iterator[str]:
        """Every table, those referring to documents before `docs`."""
        return iter((self.properties, self.suggestions, self.versions, self.fts, self.names, self.terms, self.docs))


class SqliteSearchIndex(SearchIndex):
    def __init__(self, db: Database, annotations: Annotations, staging: str | None = None,
                 aside: ThreadPoolExecutor | None = None):
        self.db = db
        self.annotations = annotations
        self.analyzers = {name: Analyzer(a) for name, a in annotations.by_aspect.items() if annotations.searched(name)}
        self.t = Tables(staging)
        self._owns_aside = aside is None  # a staging index shares the live one's threads
        self._aside = aside or ThreadPoolExecutor(4, thread_name_prefix="search-count")  # SQLite runs without the GIL
        db.writer.executescript(_SCHEMA.format(t=self.t))
        configured = dict(db.writer.execute(f"SELECT k, v FROM {self.t.fts}_config"))
        for option, value in FTS_OPTIONS:
            if configured.get(option) != value:  # only the first opening writes
                db.writer.execute(f"INSERT INTO {self.t.fts} ({self.t.fts}, rank) VALUES (?, ?)", (option, value))

    # -- writes ---------------------------------------------------------------------------

    def apply(self, batch: ChangeBatch) -> None:
        conn = self.db.writer
        if batch.resets:
            self._reset(conn, batch.resets)
        changes = [c for c in batch.changes if c.aspect in self.analyzers]
        if not changes:
            return
        ids, created = self._doc_ids(conn, {c.urn: c.entity_type for c in changes})
        current = versions_of(conn, self.t.versions, "doc_id",
                              [ids[c.urn] for c in changes if ids[c.urn] not in created])
        fresh = []
        for change in changes:
            stored = current.get((ids[change.urn], change.aspect))
            if stored is None or change.version > stored or (batch.replace_equal and change.version == stored):
                fresh.append(change)
        if not fresh:
            return
        self._forget_rows(conn, [(ids[c.urn], c.aspect) for c in fresh if (ids[c.urn], c.aspect) in current])
        versions, properties, suggestions = [], [], []
        new_parts: dict[int, list[tuple[str, Fragment]]] = defaultdict(list)  # of new documents
        for change in fresh:
            doc_id = ids[change.urn]
            if change.deleted:
                versions.append((doc_id, change.aspect, change.version, None))
                continue
            prepared = change.prepared and change.prepared.get(MODEL)
            fragment = Fragment.decode(prepared) if prepared else self.analyzers[change.aspect].fragment(change.value)
            if doc_id in created:
                new_parts[doc_id].append((change.aspect, fragment))
            versions.append((doc_id, change.aspect, change.version, prepared or fragment.encode()))
            properties.extend((*p, doc_id, change.aspect) for p in fragment.properties)
            suggestions.extend((lvalue, kind, doc_id, change.aspect, value)
                               for lvalue, kind, value in fragment.suggestions)
        conn.executemany(f"INSERT OR REPLACE INTO {self.t.versions} VALUES (?, ?, ?, ?)", versions)
        # in key order: each B-tree page is visited once per batch instead of once per row
        conn.executemany(f"INSERT OR IGNORE INTO {self.t.properties} VALUES (?, ?, ?, ?, ?)", sorted(properties))
        conn.executemany(f"INSERT OR IGNORE INTO {self.t.suggestions} VALUES (?, ?, ?, ?, ?)", sorted(suggestions))
        self._rebuild(conn, {ids[c.urn]: c.entity_type for c in fresh}, created, new_parts)

    def field_tags(self, urns: Collection[str], upstream: bool = False) -> dict[str, set[str]]:
        conn = self.db.writer
        urn_of = {doc_id: urn for urn, doc_id in self._ids(conn, list(urns)).items()}
        found = {urn_of[doc_id]: set().union(*(tags_of(fragment, upstream) for aspect, fragment in parts
                                               if is_derived(aspect) == upstream))
                 for doc_id, parts in self._fragments(conn, urn_of).items()}
        return {urn: tags for urn, tags in found.items() if tags}

    def set_upstream_tags(self, tags: Mapping[str, Collection[str]]) -> None:
        conn = self.db.writer
        ids = self._ids(conn, list(tags))
        held = dict(self._parts_named(conn, ids.values(), UPSTREAM_TAGS))
        wanted: dict[str, Fragment | None] = {}
        for urn, values in tags.items():
            part = upstream_tags_part(self.annotations, self.analyzers, urn, values)
            fragment = part and part.fragment
            if held.get(ids.get(urn, -1)) != (fragment and fragment.encode()):
                wanted[urn] = fragment
        if not wanted:
            return
        types = {urn: entity_type_of(urn) for urn in wanted}
        ids, created = self._doc_ids(conn, types)  # only fields gaining a part can lack a document
        replaced = [(ids[urn], UPSTREAM_TAGS) for urn in wanted if ids[urn] in held]
        self._forget_rows(conn, replaced)
        conn.executemany(f"DELETE FROM {self.t.versions} WHERE doc_id = ? AND aspect = ?", replaced)
        added = [(ids[urn], fragment) for urn, fragment in wanted.items() if fragment is not None]
        conn.executemany(f"INSERT INTO {self.t.versions} VALUES (?, ?, 0, ?)",
                         [(doc_id, UPSTREAM_TAGS, fragment.encode()) for doc_id, fragment in added])
        conn.executemany(f"INSERT OR IGNORE INTO {self.t.properties} VALUES (?, ?, ?, ?, ?)",
                         [(*p, doc_id, UPSTREAM_TAGS) for doc_id, fragment in added for p in fragment.properties])
        self._rebuild(conn, {ids[urn]: types[urn] for urn in wanted}, created,
                      {doc_id: [(UPSTREAM_TAGS, fragment)] for doc_id, fragment in added if doc_id in created})

    def _parts_named(self, conn: sqlite3.Connection, doc_ids: Iterable[int], part: str) -> list[tuple[int, bytes]]:
        """(document id, stored fragment) of the documents holding a part (aspect) of this name."""
        found = []
        for chunk in chunks(sorted(set(doc_ids))):
            marks = ",".join("?" * len(chunk))
            found.extend(conn.execute(f"SELECT doc_id, fragment FROM {self.t.versions} WHERE doc_id IN ({marks})"
                                      " AND aspect = ? AND fragment IS NOT NULL", (*chunk, part)))
        return found

    def _doc_ids(self, conn: sqlite3.Connection, types: dict[str, str]) -> tuple[dict[str, int], set[int]]:
        ids = self._ids(conn, list(types))
        missing = [urn for urn in types if urn not in ids]
        if not missing:
            return ids, set()
        conn.executemany(f"INSERT INTO {self.t.docs} (urn, entity_type) VALUES (?, ?)",
                         [(urn, types[urn]) for urn in missing])
        new = self._ids(conn, missing)
        ids.update(new)
        return ids, set(new.values())

    def _ids(self, conn: sqlite3.Connection, urns: Sequence[str]) -> dict[str, int]:
        ids: dict[str, int] = {}
        for chunk in chunks(urns):
            marks = ",".join("?" * len(chunk))
            ids.update(conn.execute(f"SELECT urn, id FROM {self.t.docs} WHERE urn IN ({marks})", chunk))
        return ids

    def _fragments(self, conn: sqlite3.Connection, doc_ids: Iterable[int]) -> dict[int, list[tuple[str, Fragment]]]:
        """The live fragments of documents, in aspect order."""
        found: dict[int, list[tuple[str, Fragment]]] = defaultdict(list)
        for chunk in chunks(sorted(set(doc_ids))):
            marks = ",".join("?" * len(chunk))
            for doc_id, aspect, data in conn.execute(
                    f"SELECT doc_id, aspect, fragment FROM {self.t.versions} WHERE doc_id IN ({marks})"
                    " AND fragment IS NOT NULL ORDER BY doc_id, aspect", chunk):
                found[doc_id].append((aspect, Fragment.decode(data)))
        return found

    def _forget_rows(self, conn: sqlite3.Connection, keys: Sequence[tuple[int, str]]) -> None:
        """Delete the property and suggestion rows of these (document, aspect) versions."""
        wanted = set(keys)
        properties, suggestions = [], []
        for doc_id, parts in self._fragments(conn, {doc_id for doc_id, _ in keys}).items():
            for aspect, fragment in parts:
                if (doc_id, aspect) in wanted:
                    properties.extend((*p, doc_id, aspect) for p in fragment.properties)
                    suggestions.extend((lvalue, kind, doc_id, aspect) for lvalue, kind, _ in fragment.suggestions)
        conn.executemany(f"DELETE FROM {self.t.properties} WHERE key = ? AND lvalue = ? AND scope = ? AND doc_id = ?"
                         " AND aspect = ?", properties)
        conn.executemany(f"DELETE FROM {self.t.suggestions} WHERE lvalue = ? AND kind = ? AND doc_id = ?"
                         " AND aspect = ?", suggestions)

    def _rebuild(self, conn: sqlite3.Connection, touched: dict[int, str], created: set[int],
                 new_parts: dict[int, list[tuple[str, Fragment]]]) -> None:
        """Re-merge the documents of `touched` (id -> entity type) from their aspects' fragments
        (those of documents created in this batch are at hand)."""
        fragments = self._fragments(conn, [doc_id for doc_id in touched if doc_id not in created])
        fragments.update((doc_id, sorted(parts, key=lambda part: part[0])) for doc_id, parts in new_parts.items())
        stale_names = self._names_rowids(conn, [doc_id for doc_id in touched if doc_id not in created])
        updates, fts_rows, name_rows, term_rows = [], [], [], []
        for doc_id, entity_type in touched.items():
            if doc_id not in fragments:
                updates.append((None, None, 0, 0, None, doc_id))
                continue
            doc = merge(entity_type, [fragment for _, fragment in fragments[doc_id]])
            updates.append((doc.name, doc.description, 1, int(doc.removed), orjson.dumps(doc.facets), doc_id))
            fts_rows.append((doc_id, *doc.columns))
            name_rows.append((names_rowid(doc_id, doc.name), doc.columns[0], doc.name_meta))
            term_rows.append((doc_id, _terms_row(doc)))
        conn.executemany(f"UPDATE {self.t.docs} SET name = ?, description = ?, live = ?, removed = ?, facets = ?"
                         " WHERE id = ?", updates)
        conn.executemany(f"DELETE FROM {self.t.fts} WHERE rowid = ?", [(i,) for i in touched if i not in created])
        conn.executemany(f"DELETE FROM {self.t.terms} WHERE rowid = ?", [(i,) for i in touched if i not in created])
        conn.executemany(f"DELETE FROM {self.t.names} WHERE rowid = ?", [(rowid,) for rowid in stale_names])
        conn.executemany(f"INSERT INTO {self.t.fts} (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)", fts_rows)
        conn.executemany(f"INSERT INTO {self.t.names} (rowid, name, meta) VALUES (?, ?, ?)", name_rows)
        conn.executemany(f"INSERT INTO {self.t.terms} (rowid, meta) VALUES (?, ?)", term_rows)

    def _names_rowids(self, conn: sqlite3.Connection, doc_ids: Sequence[int]) -> list[int]:
        """The `search_names` rowids of shown documents."""
        rowids = []
        for chunk in chunks(doc_ids):
            marks = ",".join("?" * len(chunk))
            rowids.extend(names_rowid(doc_id, name) for doc_id, name in conn.execute(
                f"SELECT id, name FROM {self.t.docs} WHERE id IN ({marks}) AND live = 1", chunk))
        return rowids

    def _reset(self, conn: sqlite3.Connection, urns: Iterable[str]) -> None:
        doc_ids = list(self._ids(conn, list(urns)).values())
        self._forget_rows(conn, list(versions_of(conn, self.t.versions, "doc_id", doc_ids)))
        conn.executemany(f"DELETE FROM {self.t.names} WHERE rowid = ?",
                         [(r,) for r in self._names_rowids(conn, doc_ids)])
        for table, column in ((self.t.versions, "doc_id"), (self.t.fts, "rowid"), (self.t.terms, "rowid"),
                              (self.t.docs, "id")):
            conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(doc_id,) for doc_id in doc_ids])

    def preparer(self) -> FragmentPreparer:
        """Computes, in any process, the fragments `apply` reads from `AspectChange.prepared[MODEL]`."""
        return FragmentPreparer({name: analyzer.annotations for name, analyzer in self.analyzers.items()})

    def close(self) -> None:
        """Stop the threads that count totals and facets beside the ranking."""
        if self._owns_aside:
            self._aside.shutdown()

    def clear(self) -> None:
        for table in self.t:
            self.db.writer.execute(f"DELETE FROM {table}")

    # -- rebuilds -------------------------------------------------------------------------

    def staging(self, name: str, fresh: bool) -> SqliteSearchIndex:
        if fresh:
            with self.db.transaction() as conn:
                for table in Tables(name):
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
        return SqliteSearchIndex(self.db, self.annotations, name, self._aside)

    def switch_to(self, name: str) -> None:
        """Drop the live tables and rename the staging ones into their place (and build the URN
        index under the live name), in one transaction."""
        staged = Tables(name)
        with self.db.transaction() as conn:
            for live, table in zip(self.t, staged, strict=True):
                conn.execute(f"DROP TABLE {live}")
                conn.execute(f"ALTER TABLE {table} RENAME TO {live}")
            conn.execute(f"DROP INDEX {staged.docs}_urn")
            conn.execute(f"CREATE UNIQUE INDEX {self.t.docs}_urn ON {self.t.docs} (urn)")

    def switched(self, name: str) -> bool:
        return not self.building(name)

    def building(self, name: str) -> bool:
        return table_exists(self.db.reader(), Tables(name).docs)

    # -- queries --------------------------------------------------------------------------

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
        hits = _Hits.of(conn, self.t, parsed, types, include_removed, scope, restriction)
        if parsed.terms and sort == "relevance":  # the total and the facet sample are read beside the ranking
            # A sample of exact terms streams: it is read after the count. One of prefix terms
            # evaluates them whole, as the count does: both are read at once (two connections,
            # SQLite runs without the GIL).
            reads = [hits.count_and_tally] if hits.exact else [hits.count, hits.facet_tally]
            pending = [self._aside.submit(self._in_snapshot, read) for read in reads]
            found = self._hits(conn, _ranked(conn, parsed, hits, start, count), parsed)
            results = [future.result() for future in pending]
            total, tally = results[0] if hits.exact else results
            return SearchResult(total, found, *hits.facet_counts(tally, total)) if total else SearchResult(0, found, {})
        total, tally = hits.count_and_tally(conn)
        if total == 0:
            return SearchResult(0, [], {})
        page = hits.page(conn, sort, start, count, total)
        return SearchResult(total, self._hits(conn, page, parsed), *hits.facet_counts(tally, total))

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
        fragments = self._fragments(conn, page)
        out = []
        for doc_id in page:
            urn, entity_type, name, description = docs[doc_id]
            matches = hit_matches([fragment for _, fragment in fragments.get(doc_id, [])], parsed)
            out.append(SearchHit(urn, entity_type, name, description, matches))
        return out

    @consistent_read
    def autocomplete(self, prefix: str, limit: int = 10) -> list[Suggestion]:
        wanted = tokens(prefix)
        if not wanted or limit <= 0:
            return []
        conn = self.db.reader()
        low = prefix.strip().lower()
        found: dict[tuple[str, str], tuple[str, int]] = {}
        for lvalue, kind, value in _distinct_suggestions(conn, self.t, low, 2 * limit):  # whole values first
            carriers = self._carriers(conn, f"SELECT doc_id FROM {self.t.suggestions} WHERE lvalue = ? AND kind = ?"
                                      " LIMIT ?", (lvalue, kind, SUGGESTION_COUNT))
            if carriers:
                found[(lvalue, kind)] = (value, len(carriers))
        if len(found) < limit:  # then values with a later token starting with the prefix
            matching = f"{{name schema keywords}} : ({_phrase(tuple(wanted), True)}) NOT {_any_of([removed_token()])}"
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

    def _carriers(self, conn: sqlite3.Connection, select_ids: str, params: tuple) -> list[int]:
        """The visible documents among those the query selects."""
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM ({select_ids}) h JOIN {self.t.docs} d ON d.id = h.doc_id"
            " WHERE d.live = 1 AND d.removed = 0", params)]

    # -- consistency ----------------------------------------------------------------------

    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        conn = self.db.reader()
        ids = self._ids(conn, urns)
        urn_of = {doc_id: urn for urn, doc_id in ids.items()}
        stored: dict[tuple[str, str], tuple[int, bytes]] = {}
        for chunk in chunks(sorted(urn_of)):
            marks = ",".join("?" * len(chunk))
            for doc_id, aspect, version, data in conn.execute(
                    f"SELECT doc_id, aspect, version, fragment FROM {self.t.versions} WHERE doc_id IN ({marks})"
                    " AND fragment IS NOT NULL", chunk):
                if not is_derived(aspect):
                    stored[(urn_of[doc_id], aspect)] = (version, data)
        wanted = {(c.urn, c.aspect): c for c in expected if c.aspect in self.analyzers}
        return compare_versions(MODEL, stored, wanted,
                                lambda change: self.analyzers[change.aspect].fragment(change.value).encode())

    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        versions = self.t.versions
        return [row[0] for row in self.db.reader().execute(
            f"SELECT urn FROM {self.t.docs} d WHERE urn > ? AND live = 1 AND (NOT EXISTS (SELECT 1 FROM {versions} v"
            f" WHERE v.doc_id = d.id AND substr(v.aspect, 1, 1) = ?) OR EXISTS (SELECT 1 FROM {versions} v"
            " WHERE v.doc_id = d.id AND v.fragment IS NOT NULL AND substr(v.aspect, 1, 1) <> ?)) ORDER BY urn LIMIT ?",
            (after, DERIVED_PREFIX, DERIVED_PREFIX, limit))]


def _phrase(words: tuple[str, ...], prefix: bool) -> str:
    """An FTS5 phrase of sanitised tokens (letters and digits only, each quoted)."""
    return " + ".join(f'"{w}"' for w in words) + (" *" if prefix else "")


def _any_of(words: Sequence[str]) -> str:
    return "meta : (" + " OR ".join(f'"{w}"' for w in words) + ")"


def _terms_row(doc: Document) -> str:
    """A document's `search_terms` text: its CDAP terms (search/cdap.py) with the tokens of every
    document and of the soft-deleted state. The terms are most of the tokens and are only ever
    matched whole or as prefixes, so they stay out of `search_fts` and its prefix indexes
    (which tripled their cost of indexing)."""
    return " ".join([doc.terms, everything_token(), *([removed_token()] if doc.removed else [])])


def names_rowid(doc_id: int, name: str | None) -> int:
    """A document's `search_names` rowid: the length of its shown name above its id, so that
    rowid order is shorter-name order (doc_id = rowid & DOC_ID_MASK)."""
    return (min(len(name or ""), NAME_LENGTH_LIMIT) << 32) | doc_id


class _Hits:
    """The documents a query matches: free text (`exact` and `prefix` phrases of its terms, over
    the text columns) and `filters`, an FTS5 expression of exact filters, entity types and the
    soft-deleted state, plus an SQL condition for the rare prefix filters that are not expanded.
    `by_type_only`: the filters are of entity types at most, so `search_names` can evaluate them."""

    def __init__(self, t: Tables, exact: str, prefix: str, filters: str, hidden: str, sql: str, params: list[str],
                 by_type_only: bool, table: str | None = None):
        self.t = t
        self.exact = exact
        self.prefix = prefix
        self.filters = filters  # positive filters, "" when none
        self.hidden = hidden  # " NOT <removed>", or "" with include_removed
        self.sql = sql
        self.params = params
        self.by_type_only = by_type_only
        self.table = table or t.fts  # or t.terms, for expressions of CDAP terms only
        self.expression = self._with_filters(f"{TEXT_COLUMNS} : ({prefix})" if prefix else "")

    def _with_filters(self, expression: str) -> str:
        both = " AND ".join(f"({e})" for e in (expression, self.filters) if e) or _any_of([everything_token()])
        return f"({both}){self.hidden}"

    @classmethod
    def of(cls, conn: sqlite3.Connection, t: Tables, parsed: Query, types: Sequence[str] | None, include_removed: bool,
           scope: str | None, restriction: str | None = None) -> _Hits:
        """`restriction`: CDAP terms (search/cdap.py) every hit has, e.g. the caller's readable resources."""
        scopes = (scope,) if scope else SCOPES
        parts = [_any_of([type_token(t) for t in types])] if types is not None else []
        sql, params = [], []
        if restriction:
            sql.append(f" AND rowid IN (SELECT rowid FROM {t.terms} WHERE {t.terms} MATCH ?)")
            params.append(f"meta : ({restriction})")
        for key, flt in [(f.key, f) for f in parsed.filters] + [(TAGS_KEY, f) for f in parsed.tags]:
            values = _expand(conn, t, key, flt.value) if flt.prefix else [flt.value]
            if values is not None:
                parts.append(_any_of([property_token(s, key, v) for s in scopes for v in values] or ["none"]))
            else:
                sql.append(f" AND rowid IN (SELECT doc_id FROM {t.properties} WHERE key = ? AND lvalue >= ?"
                           f" AND lvalue < ? AND scope IN ({','.join('?' * len(scopes))}))")
                params.extend([key, flt.value, flt.value + "\U0010ffff", *scopes])
        parts.extend(f"schema : ({_phrase(term.tokens, term.prefix)})" for term in parsed.schema)
        hidden = "" if include_removed else f" NOT {_any_of([removed_token()])}"
        exact = " OR ".join(_phrase(t.tokens, False) for t in parsed.terms if not t.prefix)
        prefix = " OR ".join(_phrase(t.tokens, True) for t in parsed.terms)
        by_type_only = not (parsed.filters or parsed.tags or parsed.schema or restriction)
        return cls(t, exact, prefix, " AND ".join(parts), hidden, "".join(sql), params, by_type_only)

    def narrowed(self, expression: str) -> _Hits:
        narrowed = _Hits(self.t, self.exact, "", self.filters, self.hidden, self.sql, self.params, self.by_type_only,
                         self.table)
        narrowed.expression = narrowed._with_filters(expression)
        return narrowed

    def _select(self, what: str = "rowid") -> str:
        return f"SELECT {what} FROM {self.table} WHERE {self.table} MATCH ?{self.sql}"

    def count(self, conn: sqlite3.Connection, cap: int | None = None) -> int:
        """How many hits; with a cap, at most cap (the index stops looking there)."""
        if cap is None:
            return conn.execute(self._select("count(*)"), (self.expression, *self.params)).fetchone()[0]
        return conn.execute(f"SELECT count(*) FROM ({self._select()} LIMIT ?)",
                            (self.expression, *self.params, cap)).fetchone()[0]

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
        rowids = [row[0] for row in conn.execute(
            f"SELECT rowid FROM {self.t.names} WHERE {self.t.names} MATCH ? ORDER BY rowid LIMIT ?",
            (self.expression, wanted))]
        if len(rowids) < wanted:
            size: int | None = len(rowids)
            if size <= start:
                return [], size
            bound = rowids[-1] + 1
        else:
            size, bound = None, ((rowids[-1] >> 32) + 1) << 32  # the rest of the last length too: ties go by URN
        return [row[0] for row in conn.execute(
            f"SELECT d.id FROM (SELECT rowid AS r FROM {self.t.names} WHERE {self.t.names} MATCH ? AND rowid < ?) h"
            f" JOIN {self.t.docs} d ON d.id = h.r & {DOC_ID_MASK} ORDER BY h.r >> 32, d.urn LIMIT ? OFFSET ?",
            (self.expression, bound, count, start))], size

    def walk(self, conn: sqlite3.Connection, order: str, start: int, count: int, total: int) -> list[int]:
        """Many hits in an indexed document order (WALKS): walk the documents in that order and
        keep the hits. Up to WALK_SET_LIMIT hits (or with prefix phrases, which the index would
        evaluate again per probed document) are fetched as a set first; more are so dense that
        probing the few documents walked is cheaper."""
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
            found = every if every is not None else {row[0] for row in conn.execute(
                self._select() + f" AND rowid IN ({','.join('?' * len(ids))})", (self.expression, *self.params, *ids))}
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

    def count_and_tally(self, conn: sqlite3.Connection) -> tuple[int, FacetTally]:
        """The number of hits, and the facet tally of all of them or of a sample (`facet_counts`
        gives the facets)."""
        total = self.count(conn)
        return total, self.facet_tally(conn, exact_first=total > FACET_SAMPLE) if total else (Counter(), 0)

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
    there, then as a prefix. Name tiers, and tiers of more than RANK_LIMIT hits, order by the
    shorter name; the others by bm25."""
    exact_names = [name_token(t.text) for t in parsed.terms if not t.prefix and t.text]
    not_exact = f" NOT {_any_of(exact_names)}" if exact_names else ""
    tiers: list[tuple[str, bool]] = []
    if exact_names:
        tiers.append((_any_of(exact_names), False))  # such a name is in the name column: the text matches
    if len(parsed.terms) > 1:
        every = " AND ".join(f"(name : ({_phrase(t.tokens, t.prefix)}))" for t in parsed.terms)
        tiers.append((f"({every}){not_exact}", False))
        not_exact += f" NOT ({every})"
    better = ""
    for column in TIERS:
        by_bm25 = column != "name"
        if hits.exact:
            tiers.append((f"({column} : ({hits.exact})){better}{not_exact}", by_bm25))
            tiers.append((f"({column} : ({hits.prefix})) NOT ({column} : ({hits.exact})){better}{not_exact}", by_bm25))
        else:
            tiers.append((f"({column} : ({hits.prefix})){better}{not_exact}", by_bm25))
        better += f" NOT ({column} : ({hits.prefix}))"
    page: list[int] = []
    for tier, by_bm25 in tiers:
        if len(page) >= count:
            break
        within = hits.narrowed(tier)
        if not by_bm25 and hits.by_type_only:  # a name tier: search_names has it in order
            found, size = within.shortest_names(conn, start, count - len(page))
            if size is not None and size <= start:
                start -= size
                continue
            page.extend(found)
            start = 0
            continue
        # A tier's size decides between bm25 and name order, and how much of `start` it takes
        # up; a name tier read from its first hit needs neither.
        size = within.count(conn, cap=max(start + 1, RANK_LIMIT + 1)) if by_bm25 or start else None
        if size is not None and start >= size:
            start -= size
            continue
        if size is not None and by_bm25 and size <= RANK_LIMIT:
            page.extend(within.ranked(conn, start, count - len(page)))
        else:  # evaluating the tier costs more than sorting it: no index order helps here
            page.extend(within.sorted(conn, "coalesce(length(d.name), 0)", start, count - len(page)))
        start = 0
    return page


def _distinct_suggestions(conn: sqlite3.Connection, t: Tables, prefix: str, limit: int) -> list[tuple[str, str, str]]:
    """Up to `limit` distinct (lower-cased value, kind, value) suggestions starting with prefix,
    in order, one index seek each."""
    out: list[tuple[str, str, str]] = []
    bound, operator = (prefix, ""), ">="
    while len(out) < limit:
        row = conn.execute(f"SELECT lvalue, kind, value FROM {t.suggestions} WHERE (lvalue, kind) {operator} (?, ?)"
                           " AND lvalue < ? ORDER BY lvalue, kind LIMIT 1", (*bound, prefix + "\U0010ffff")).fetchone()
        if row is None:
            break
        out.append(row)
        bound, operator = (row[0], row[1]), ">"
    return out
