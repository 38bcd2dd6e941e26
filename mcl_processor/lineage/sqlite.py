"""The lineage graph on SQLite: edge tables indexed both ways, walked breadth first per hop.

Every edge row names the entity and aspect that declared it (`owner`, `via`), so a new
version of an aspect replaces exactly its own edges.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence

from ingest.faults import crash_point
from mcl_processor.annotations import Annotations, Edge
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence
from mcl_processor.lineage import FIELD_REACH, LineageGraph, LineageResult
from mcl_processor.lineage.contributions import (
    ENTITY,
    FIELD,
    REMOVED,
    Fact,
    contribution,
    divergences,
    field_destinations,
    fresh,
    moves_fields,
)
from mcl_processor.lineage.walk import RoundReader, reach, walk
from mcl_processor.readmodels_db import Database, model_errors, versions_of

_EDGE_TABLES = ("lineage_edges", "lineage_field_edges")
_SCHEMA = "".join(f"""
CREATE TABLE IF NOT EXISTS {table} (
    owner TEXT NOT NULL, via TEXT NOT NULL, source TEXT NOT NULL, destination TEXT NOT NULL, type TEXT NOT NULL,
    PRIMARY KEY (owner, via, source, destination, type)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {table}_down ON {table} (source, destination, type, via);
CREATE INDEX IF NOT EXISTS {table}_up ON {table} (destination, source, type, via);
""" for table in _EDGE_TABLES) + """
CREATE TABLE IF NOT EXISTS lineage_versions (
    urn TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL, live INTEGER NOT NULL,
    PRIMARY KEY (urn, aspect)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lineage_removed (urn TEXT NOT NULL, aspect TEXT NOT NULL, PRIMARY KEY (urn, aspect))
    WITHOUT ROWID;
"""


class SqliteLineageGraph(LineageGraph):
    def __init__(self, db: Database, annotations: Annotations):
        self.db = db
        self.annotations = annotations
        db.writer.executescript(_SCHEMA)

    @model_errors
    def apply(self, batch: ChangeBatch) -> set[str]:
        conn = self.db.writer
        moved: set[str] = set()
        if batch.resets:
            resets = [(urn,) for urn in batch.resets]
            moved |= self._destinations(conn, "owner = ?", resets)
            for table in _EDGE_TABLES:
                conn.executemany(f"DELETE FROM {table} WHERE owner = ?", resets)
            conn.executemany("DELETE FROM lineage_removed WHERE urn = ?", resets)
            conn.executemany("DELETE FROM lineage_versions WHERE urn = ?", resets)
        changes = [c for c in batch.changes if self.annotations.traced(c.aspect)]
        if not changes:
            return moved
        current = versions_of(conn, "lineage_versions", "urn", [c.urn for c in changes])
        applied = fresh(changes, current, batch.replace_equal)
        replaced = [(c.urn, c.aspect) for c in applied if (c.urn, c.aspect) in current]
        moved |= self._destinations(conn, "owner = ? AND via = ?",
                                    [key for key in replaced if moves_fields(self.annotations, key[1])])
        for table in _EDGE_TABLES:
            conn.executemany(f"DELETE FROM {table} WHERE owner = ? AND via = ?", replaced)
        conn.executemany("DELETE FROM lineage_removed WHERE urn = ? AND aspect = ?", replaced)
        contributions = [contribution(self.annotations, c) for c in applied]
        conn.executemany("INSERT OR IGNORE INTO lineage_edges VALUES (?, ?, ?, ?, ?)",
                         [(*c.owner, *e[:3]) for c in contributions for e in c.edges])
        conn.executemany("INSERT OR IGNORE INTO lineage_field_edges VALUES (?, ?, ?, ?, ?)",
                         [(*c.owner, *e[:3]) for c in contributions for e in c.field_edges])
        conn.executemany("INSERT INTO lineage_removed VALUES (?, ?)", [c.owner for c in contributions if c.removed])
        crash_point("lineage-before-versions")  # a crash here rolls the whole batch back
        conn.executemany("INSERT OR REPLACE INTO lineage_versions VALUES (?, ?, ?, ?)",
                         [(c.urn, c.aspect, c.version, int(not c.deleted)) for c in applied])
        return moved | field_destinations(contributions)

    @staticmethod
    def _destinations(conn: sqlite3.Connection, where: str, owners: Sequence[tuple[str, ...]]) -> set[str]:
        """The destinations of the field edges of these owners (`where` selects one's rows)."""
        found: set[str] = set()
        for owner in owners:
            found.update(row[0] for row in conn.execute(
                f"SELECT destination FROM lineage_field_edges WHERE {where}", owner))
        return found

    @model_errors
    def clear(self) -> None:
        for table in (*_EDGE_TABLES, "lineage_removed", "lineage_versions"):
            self.db.writer.execute(f"DELETE FROM {table}")

    # -- queries --------------------------------------------------------------------------

    @model_errors
    def query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return self._walk("lineage_edges", urn, direction, max_hops)

    @model_errors
    def field_query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return self._walk("lineage_field_edges", urn, direction, max_hops)

    @model_errors
    def fields_reached(self, urns: Collection[str], direction: str) -> set[str]:
        return reach(urns, direction, FIELD_REACH, self._round_reader("lineage_field_edges", self.db.writer))

    def _walk(self, table: str, root: str, direction: str, max_hops: int) -> LineageResult:
        return walk(root, direction, max_hops, self._round_reader(table, self.db.reader()))

    def _round_reader(self, table: str, conn: sqlite3.Connection) -> RoundReader:
        def read(expand: Mapping[str, Sequence[str]],
                 status: Collection[str]) -> tuple[dict[str, list[Edge]], set[str]]:
            found: dict[str, list[Edge]] = {}
            for side, frontier in expand.items():
                near = "destination" if side == "upstream" else "source"
                for chunk in chunks(frontier):
                    marks = ",".join("?" * len(chunk))
                    found.setdefault(side, []).extend(map(Edge._make, conn.execute(
                        f"SELECT source, destination, type, via FROM {table} WHERE {near} IN ({marks})", chunk)))
            return found, self._hidden(conn, set(status))

        return read

    @staticmethod
    def _hidden(conn: sqlite3.Connection, urns: set[str]) -> set[str]:
        hidden: set[str] = set()
        for chunk in chunks(sorted(urns)):
            marks = ",".join("?" * len(chunk))
            hidden.update(row[0] for row in conn.execute(
                f"SELECT DISTINCT urn FROM lineage_removed WHERE urn IN ({marks})", chunk))
        return hidden

    # -- consistency ----------------------------------------------------------------------

    @model_errors
    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        conn = self.db.reader()
        live = versions_of(conn, "lineage_versions", "urn", urns, "live = 1")
        return divergences(self.annotations, expected, live, self._stored_contributions(conn, urns))

    @staticmethod
    def _stored_contributions(conn: sqlite3.Connection, urns: Sequence[str]) -> dict[tuple[str, str], set[Fact]]:
        stored: dict[tuple[str, str], set[Fact]] = {}
        for chunk in chunks(sorted(set(urns))):
            marks = ",".join("?" * len(chunk))
            for kind, table in ((ENTITY, "lineage_edges"), (FIELD, "lineage_field_edges")):
                for owner, via, *edge in conn.execute(
                        f"SELECT owner, via, source, destination, type FROM {table} WHERE owner IN ({marks})", chunk):
                    stored.setdefault((owner, via), set()).add((kind, *edge))
            for urn, aspect in conn.execute(f"SELECT urn, aspect FROM lineage_removed WHERE urn IN ({marks})", chunk):
                stored.setdefault((urn, aspect), set()).add((REMOVED,))
        return stored

    @model_errors
    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        return [row[0] for row in self.db.reader().execute(
            "SELECT DISTINCT urn FROM lineage_versions WHERE urn > ? AND live = 1 ORDER BY urn LIMIT ?",
            (after, limit))]
