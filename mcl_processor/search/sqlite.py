"""Search on SQLite: FTS5 documents merged from per-aspect fragments.

Tables: `search_docs` (one row per entity: shown name and description, flags, facets),
`search_versions` (per entity and aspect: the version reflected and the aspect's fragment,
NULL for a deleted aspect), `search_properties` (property and tag values, for prefix
filters), `search_fts` (the merged documents, without CDAP terms; rowid = document id),
`search_terms` (each document's CDAP terms, for CDAP's search; rowid = document id),
`search_suggest` (each document's suggested names, field names, keys and tags, for
autocomplete, as tokens that sort as the values do: an FTS5 posting costs a fraction of the
B-tree row a value had per document and aspect; rowid = document id) and `search_names` (each
shown document's names with its type and soft-delete tokens; rowid = `names_rowid`, so that
FTS5's rowid order is the shorter-name order of the name tiers) and `search_lexicon` (every
word of the free-text columns, a row per batch: the words a long prefix starts). The `meta`
column of `search_fts` also holds a token per pair of adjacent schema words (`pair_tokens`).

A staging model NAME (a rebuild, `lodestar replay --topic versioned --into NAME`) is the same
tables named `search_*__NAME`; the switch drops the live tables and renames the staging ones in
their place in one transaction: readers see the old index or the new one, never a part of it.

This module writes the tables (and switches staging ones into place); `sqlite_query.py` is the
query engine that reads them (free-text tiers, sorts, facets, autocomplete, CDAP's search).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from operator import itemgetter

from mcl_processor.annotations import Annotations, entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence, compare_versions
from mcl_processor.readmodels_db import Database, model_errors, run_script, table_exists, versions_of
from mcl_processor.search import SearchIndex
from mcl_processor.search.document import (
    COLUMNS,
    DERIVED_PREFIX,
    UPSTREAM_TAGS,
    Analyzer,
    Fragment,
    field_filter_keys,
    is_derived,
    suggestion_text,
    tags_of,
    upstream_tags_part,
)
from mcl_processor.search.sqlite_query import PAIRS_MARK, SqliteSearchQueries, Tables, names_rowid, stored_fragments
from mcl_processor.search.sqlite_rows import DocumentPreparer, DocumentRows, PreparedDocument, document_rows

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
CREATE VIRTUAL TABLE IF NOT EXISTS {t.fts} USING fts5(
    name, schema, text, keywords, meta, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.names} USING fts5(
    name, meta, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.terms} USING fts5(meta, detail = column);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.suggest} USING fts5(tokens, detail = none);
CREATE VIRTUAL TABLE IF NOT EXISTS {t.lexicon} USING fts5(
    words, content = '', detail = none, tokenize = 'unicode61 remove_diacritics 2'
);
"""
FTS_OPTIONS = (("hashsize", 16 * 1024 * 1024),)  # large batches flush their pending text less often
MODEL = "search"
WORD_COLUMNS = COLUMNS[:4]  # the free-text columns, whose words the lexicon holds (not meta's tokens)


class SqliteSearchIndex(SqliteSearchQueries, SearchIndex):
    """The search port on SQLite: writes, rebuilds and checks here; the queries are
    `SqliteSearchQueries` (sqlite_query.py), on the same tables."""

    def __init__(self, db: Database, annotations: Annotations, staging: str | None = None,
                 aside: ThreadPoolExecutor | None = None):
        self.db = db
        self.annotations = annotations
        self.analyzers = {name: Analyzer(a) for name, a in annotations.by_aspect.items() if annotations.searched(name)}
        self.field_keys = field_filter_keys(annotations.by_aspect.values())
        self.t = Tables(staging)
        self._owns_aside = aside is None  # a staging index shares the live one's threads
        self._aside = aside or ThreadPoolExecutor(4, thread_name_prefix="search-count")  # SQLite runs without the GIL
        # One write transaction: processes opening a new database at once (`--workers`) take
        # turns, instead of one meeting the other's half-made FTS tables ("vtable constructor failed").
        with db.schema_change() as conn:
            lexicon_missing = not table_exists(conn, self.t.lexicon)
            run_script(conn, _SCHEMA.format(t=self.t))
            if lexicon_missing and conn.execute(f"SELECT 1 FROM {self.t.fts} LIMIT 1").fetchone():
                # an index made before the lexicon (and the word pairs): its words so far
                words = " || char(10) || ".join(WORD_COLUMNS)
                conn.execute(f"INSERT INTO {self.t.lexicon} (words) SELECT group_concat({words}, char(10))"
                             f" FROM {self.t.fts} GROUP BY rowid >> 10")  # a row per 1024 documents
            elif lexicon_missing:  # a new index: every document will have its word pairs
                self._mark_pairs(conn)
            if table_exists(conn, self.t.old_suggestions):
                self._move_suggestions(conn)
            configured = dict(conn.execute(f"SELECT k, v FROM {self.t.fts}_config"))
            for option, value in FTS_OPTIONS:
                if configured.get(option) != value:  # only the first opening writes
                    conn.execute(f"INSERT INTO {self.t.fts} ({self.t.fts}, rank) VALUES (?, ?)", (option, value))

    # -- writes ---------------------------------------------------------------------------

    @model_errors
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
        versions = []
        written: list[tuple[int, str, bytes, Fragment | None]] = []  # a prepared fragment is not decoded yet
        new_encoded: dict[int, list[tuple[str, bytes]]] = defaultdict(list)  # of new documents
        candidates: dict[int, PreparedDocument] = {}  # documents merged by the preparer
        for change in fresh:
            doc_id = ids[change.urn]
            if change.deleted:
                versions.append((doc_id, change.aspect, change.version, None))
                continue
            prepared = change.prepared
            if isinstance(prepared, PreparedDocument):
                candidates[doc_id], prepared = prepared, prepared.fragment
            fragment = None if prepared else self.analyzers[change.aspect].fragment(change.value)
            encoded = prepared or fragment.encode()  # type: ignore[union-attr]
            if doc_id in created:
                new_encoded[doc_id].append((change.aspect, encoded))
            versions.append((doc_id, change.aspect, change.version, encoded))
            written.append((doc_id, change.aspect, encoded, fragment))
        touched = {ids[c.urn]: c.entity_type for c in fresh}
        premade = {doc_id: document for doc_id, document in candidates.items()  # merged from these parts only
                   if doc_id in created and document.entity_type == touched[doc_id]
                   and document.parts == tuple(sorted(new_encoded[doc_id], key=lambda part: part[0]))}
        properties = [(key, lvalue, scope, doc_id, aspect) for doc_id, document in premade.items()
                      for key, lvalue, scope, aspect in document.properties]
        new_parts: dict[int, list[tuple[str, Fragment]]] = defaultdict(list)  # of new documents not premade
        for doc_id, aspect, encoded, fragment in written:
            if doc_id in premade:
                continue
            fragment = fragment or Fragment.decode(encoded)
            if doc_id in created:
                new_parts[doc_id].append((aspect, fragment))
            properties += [(*p, doc_id, aspect) for p in fragment.properties]
        conn.executemany(f"INSERT OR REPLACE INTO {self.t.versions} VALUES (?, ?, ?, ?)", versions)
        # in key order: each B-tree page is visited once per batch instead of once per row
        conn.executemany(f"INSERT OR IGNORE INTO {self.t.properties} VALUES (?, ?, ?, ?, ?)", sorted(properties))
        self._rebuild(conn, touched, created, new_parts,
                      {doc_id: document.rows for doc_id, document in premade.items()})

    @model_errors
    def field_tags(self, urns: Collection[str], upstream: bool = False) -> dict[str, set[str]]:
        conn = self.db.writer
        urn_of = {doc_id: urn for urn, doc_id in self._ids(conn, list(urns)).items()}
        found = {urn_of[doc_id]: set().union(*(tags_of(fragment, upstream) for aspect, fragment in parts
                                               if is_derived(aspect) == upstream))
                 for doc_id, parts in stored_fragments(conn, self.t, urn_of).items()}
        return {urn: tags for urn, tags in found.items() if tags}

    @model_errors
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
                      {doc_id: [(UPSTREAM_TAGS, fragment)] for doc_id, fragment in added if doc_id in created}, {})

    def _mark_pairs(self, conn: sqlite3.Connection) -> None:
        """Record in the lexicon that every document of the index has its word pairs' tokens
        (`document.pair_tokens`): only then may a query look them up."""
        conn.execute(f"INSERT INTO {self.t.lexicon} (words) VALUES (?)", (PAIRS_MARK,))

    def _move_suggestions(self, conn: sqlite3.Connection) -> None:
        """Move the suggestions of an index made when they were rows (`old_suggestions`, a row
        per value, document and aspect) into `search_suggest`, for the documents shown."""
        rows = conn.execute(f"SELECT s.doc_id, s.lvalue, s.kind FROM {self.t.old_suggestions} s JOIN {self.t.docs} d"
                            " ON d.id = s.doc_id AND d.live = 1 ORDER BY s.doc_id")
        documents = ((doc_id, suggestion_text((lvalue, kind) for _, lvalue, kind in values))
                     for doc_id, values in groupby(rows, key=itemgetter(0)))
        conn.executemany(f"INSERT INTO {self.t.suggest} (rowid, tokens) VALUES (?, ?)",
                         ((doc_id, text) for doc_id, text in documents if text))
        conn.execute(f"DROP TABLE {self.t.old_suggestions}")

    def _parts_named(self, conn: sqlite3.Connection, doc_ids: Iterable[int], part: str) -> list[tuple[int, bytes]]:
        """(document id, stored fragment) of the documents holding a part (aspect) of this name."""
        found = []
        for chunk in chunks(sorted(set(doc_ids))):
            marks = ",".join("?" * len(chunk))
            found.extend(conn.execute(f"SELECT doc_id, fragment FROM {self.t.versions} WHERE doc_id IN ({marks})"
                                      " AND aspect = ? AND fragment IS NOT NULL", (*chunk, part)))
        return found

    def _doc_ids(self, conn: sqlite3.Connection, types: dict[str, str]) -> tuple[dict[str, int], dict[int, str]]:
        """The document ids of these entities, and the new ones (id -> URN): numbered next, in
        the order given, as SQLite would number them; their rows are written by `_rebuild`,
        whole, instead of inserted here and updated there."""
        ids = self._ids(conn, list(types))
        missing = [urn for urn in types if urn not in ids]
        if not missing:
            return ids, {}
        start = conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {self.t.docs}").fetchone()[0]
        created = dict(zip(range(start, start + len(missing)), missing, strict=True))
        ids.update((urn, doc_id) for doc_id, urn in created.items())
        return ids, created

    def _ids(self, conn: sqlite3.Connection, urns: Sequence[str]) -> dict[str, int]:
        ids: dict[str, int] = {}
        for chunk in chunks(urns):
            marks = ",".join("?" * len(chunk))
            ids.update(conn.execute(f"SELECT urn, id FROM {self.t.docs} WHERE urn IN ({marks})", chunk))
        return ids

    def _forget_rows(self, conn: sqlite3.Connection, keys: Sequence[tuple[int, str]]) -> None:
        """Delete the property rows of these (document, aspect) versions."""
        wanted = set(keys)
        properties = []
        for doc_id, parts in stored_fragments(conn, self.t, {doc_id for doc_id, _ in keys}).items():
            for aspect, fragment in parts:
                if (doc_id, aspect) in wanted:
                    properties.extend((*p, doc_id, aspect) for p in fragment.properties)
        conn.executemany(f"DELETE FROM {self.t.properties} WHERE key = ? AND lvalue = ? AND scope = ? AND doc_id = ?"
                         " AND aspect = ?", properties)

    def _rebuild(self, conn: sqlite3.Connection, touched: dict[int, str], created: Mapping[int, str],
                 new_parts: dict[int, list[tuple[str, Fragment]]], premade: Mapping[int, DocumentRows]) -> None:
        """Re-merge the documents of `touched` (id -> entity type) from their aspects' fragments
        (those of documents created in this batch, `created` (id -> URN), are at hand, some
        already merged: `premade`)."""
        fragments = stored_fragments(conn, self.t, [doc_id for doc_id in touched if doc_id not in created])
        fragments.update((doc_id, sorted(parts, key=lambda part: part[0])) for doc_id, parts in new_parts.items()
                         if doc_id not in premade)
        stale_names = self._names_rowids(conn, [doc_id for doc_id in touched if doc_id not in created])
        updates, inserts, fts_rows, name_rows, term_rows, suggest_rows = [], [], [], [], [], []
        for doc_id, entity_type in touched.items():
            rows = premade.get(doc_id)
            if rows is None and doc_id in fragments:
                rows = document_rows(entity_type, [fragment for _, fragment in fragments[doc_id]])
            shown = (None, None, 0, 0, None) if rows is None else (rows.name, rows.description, 1, int(rows.removed),
                                                                   rows.facets)
            if doc_id in created:
                inserts.append((doc_id, created[doc_id], entity_type, *shown))
            else:
                updates.append((*shown, doc_id))
            if rows is None:
                continue
            fts_rows.append((doc_id, *rows.fts))
            name_rows.append((names_rowid(doc_id, rows.name), rows.fts[0], rows.name_meta))
            term_rows.append((doc_id, rows.terms))
            if rows.suggest:
                suggest_rows.append((doc_id, rows.suggest))
        conn.executemany(f"INSERT INTO {self.t.docs} (id, urn, entity_type, name, description, live, removed, facets)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", inserts)
        conn.executemany(f"UPDATE {self.t.docs} SET name = ?, description = ?, live = ?, removed = ?, facets = ?"
                         " WHERE id = ?", updates)
        existing = [(doc_id,) for doc_id in touched if doc_id not in created]
        for table in (self.t.fts, self.t.terms, self.t.suggest):
            conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", existing)
        conn.executemany(f"DELETE FROM {self.t.names} WHERE rowid = ?", [(rowid,) for rowid in stale_names])
        conn.executemany(f"INSERT INTO {self.t.fts} (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)", fts_rows)
        conn.executemany(f"INSERT INTO {self.t.names} (rowid, name, meta) VALUES (?, ?, ?)", name_rows)
        conn.executemany(f"INSERT INTO {self.t.terms} (rowid, meta) VALUES (?, ?)", term_rows)
        conn.executemany(f"INSERT INTO {self.t.suggest} (rowid, tokens) VALUES (?, ?)", suggest_rows)
        if fts_rows:  # the words of the batch, once: the lexicon's rows are batches, not documents
            conn.execute(f"INSERT INTO {self.t.lexicon} (words) VALUES (?)",
                         ("\n".join("\n".join(row[1:1 + len(WORD_COLUMNS)]) for row in fts_rows),))

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
                              (self.t.suggest, "rowid"), (self.t.docs, "id")):
            conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(doc_id,) for doc_id in doc_ids])

    def preparer(self) -> DocumentPreparer:
        """Computes, in any process, the fragments (and new documents) `apply` reads from
        `AspectChange.prepared`."""
        return DocumentPreparer({name: analyzer.annotations for name, analyzer in self.analyzers.items()})

    def close(self) -> None:
        """Stop the threads that count totals and facets beside the ranking."""
        if self._owns_aside:
            self._aside.shutdown()

    @model_errors
    def clear(self) -> None:
        for table in self.t:
            if table == self.t.lexicon:  # contentless: emptied by a command
                self.db.writer.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
                self._mark_pairs(self.db.writer)
            else:
                self.db.writer.execute(f"DELETE FROM {table}")

    # -- rebuilds -------------------------------------------------------------------------

    @model_errors
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

    @model_errors
    def building(self, name: str) -> bool:
        return table_exists(self.db.reader(), Tables(name).docs)

    # -- consistency ----------------------------------------------------------------------

    @model_errors
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

    @model_errors
    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        versions = self.t.versions
        return [row[0] for row in self.db.reader().execute(
            f"SELECT urn FROM {self.t.docs} d WHERE urn > ? AND live = 1 AND (NOT EXISTS (SELECT 1 FROM {versions} v"
            f" WHERE v.doc_id = d.id AND substr(v.aspect, 1, 1) = ?) OR EXISTS (SELECT 1 FROM {versions} v"
            " WHERE v.doc_id = d.id AND v.fragment IS NOT NULL AND substr(v.aspect, 1, 1) <> ?)) ORDER BY urn LIMIT ?",
            (after, DERIVED_PREFIX, DERIVED_PREFIX, limit))]

