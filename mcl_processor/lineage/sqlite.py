"""The lineage graph on SQLite: edge tables indexed both ways, walked breadth first per hop.

Every edge row names the entity and aspect that declared it (`owner`, `via`), so a new
version of an aspect replaces exactly its own edges.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from mcl_processor.annotations import Annotations, Edge
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence
from mcl_processor.lineage import LineageGraph, LineageResult, check_walk
from mcl_processor.sqlite_db import Database

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
MODEL = "lineage"


class SqliteLineageGraph(LineageGraph):
    def __init__(self, db: Database, annotations: Annotations):
        self.db = db
        self.annotations = annotations
        db.writer.executescript(_SCHEMA)

    def apply(self, batch: ChangeBatch) -> None:
        conn = self.db.writer
        if batch.resets:
            resets = [(urn,) for urn in batch.resets]
            for table in _EDGE_TABLES:
                conn.executemany(f"DELETE FROM {table} WHERE owner = ?", resets)
            conn.executemany("DELETE FROM lineage_removed WHERE urn = ?", resets)
            conn.executemany("DELETE FROM lineage_versions WHERE urn = ?", resets)
        changes = [c for c in batch.changes if self.annotations.traced(c.aspect)]
        if not changes:
            return
        current = self._versions(conn, [c.urn for c in changes])
        fresh = []
        for change in changes:
            stored = current.get((change.urn, change.aspect))
            if stored is None or change.version > stored or (batch.replace_equal and change.version == stored):
                fresh.append(change)
        replaced = [(c.urn, c.aspect) for c in fresh if (c.urn, c.aspect) in current]
        for table in _EDGE_TABLES:
            conn.executemany(f"DELETE FROM {table} WHERE owner = ? AND via = ?", replaced)
        conn.executemany("DELETE FROM lineage_removed WHERE urn = ? AND aspect = ?", replaced)
        edges, field_edges, removed = self._contributions(fresh)
        conn.executemany("INSERT OR IGNORE INTO lineage_edges VALUES (?, ?, ?, ?, ?)", edges)
        conn.executemany("INSERT OR IGNORE INTO lineage_field_edges VALUES (?, ?, ?, ?, ?)", field_edges)
        conn.executemany("INSERT INTO lineage_removed VALUES (?, ?)", removed)
        conn.executemany("INSERT OR REPLACE INTO lineage_versions VALUES (?, ?, ?, ?)",
                         [(c.urn, c.aspect, c.version, int(not c.deleted)) for c in fresh])

    def _contributions(self, changes: Iterable[AspectChange]) -> tuple[list[tuple], list[tuple], list[tuple]]:
        edges, field_edges, removed = [], [], []
        for change in changes:
            if change.deleted:
                continue
            spec = self.annotations[change.aspect]
            owner = (change.urn, change.aspect)
            edges.extend((*owner, e.source, e.destination, e.type) for e in spec.edges(change.urn, change.value))
            field_edges.extend((*owner, e.source, e.destination, e.type) for e in spec.field_edges(change.value))
            if spec.removed(change.value):
                removed.append(owner)
        return edges, field_edges, removed

    @staticmethod
    def _versions(conn: sqlite3.Connection, urns: Sequence[str]) -> dict[tuple[str, str], int]:
        found: dict[tuple[str, str], int] = {}
        for chunk in chunks(sorted(set(urns))):
            marks = ",".join("?" * len(chunk))
            for urn, aspect, version in conn.execute(
                    f"SELECT urn, aspect, version FROM lineage_versions WHERE urn IN ({marks})", chunk):
                found[(urn, aspect)] = version
        return found

    def clear(self) -> None:
        for table in (*_EDGE_TABLES, "lineage_removed", "lineage_versions"):
            self.db.writer.execute(f"DELETE FROM {table}")

    # -- queries --------------------------------------------------------------------------

    def query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return self._walk("lineage_edges", urn, direction, max_hops)

    def field_query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return self._walk("lineage_field_edges", urn, direction, max_hops)

    def _walk(self, table: str, root: str, direction: str, max_hops: int) -> LineageResult:
        check_walk(direction, max_hops)
        conn = self.db.reader()
        nodes: dict[str, tuple[int, str]] = {root: (0, "root")}
        edges: set[Edge] = set()
        for side in ("upstream", "downstream") if direction == "both" else (direction,):
            upstream = side == "upstream"
            near = "destination" if upstream else "source"
            seen, frontier = {root}, [root]
            for hop in range(1, max_hops + 1):
                found: list[tuple[str, str, str, str]] = []
                for chunk in chunks(frontier):
                    marks = ",".join("?" * len(chunk))
                    found.extend(conn.execute(
                        f"SELECT source, destination, type, via FROM {table} WHERE {near} IN ({marks})", chunk))
                hidden = self._hidden(conn, {row[0] if upstream else row[1] for row in found})
                frontier = []
                for row in found:
                    neighbour = row[0] if upstream else row[1]
                    if neighbour in hidden:
                        continue
                    edges.add(Edge(*row))
                    if neighbour not in seen:
                        seen.add(neighbour)
                        frontier.append(neighbour)
                        nodes.setdefault(neighbour, (hop, side))
                if not frontier:
                    break
        return LineageResult(root, nodes, sorted(edges))

    @staticmethod
    def _hidden(conn: sqlite3.Connection, urns: set[str]) -> set[str]:
        hidden: set[str] = set()
        for chunk in chunks(sorted(urns)):
            marks = ",".join("?" * len(chunk))
            hidden.update(row[0] for row in conn.execute(
                f"SELECT DISTINCT urn FROM lineage_removed WHERE urn IN ({marks})", chunk))
        return hidden

    # -- consistency ----------------------------------------------------------------------

    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        conn = self.db.reader()
        live = self._live_versions(conn, urns)
        stored = self._stored_contributions(conn, urns)
        wanted = {(c.urn, c.aspect): c for c in expected if self.annotations.traced(c.aspect)}
        out = []
        for key, change in wanted.items():
            version = live.get(key)
            if version is None:
                out.append(Divergence(MODEL, "missing", *key, f"version {change.version} not applied"))
            elif version != change.version:
                out.append(Divergence(MODEL, "stale", *key, f"graph has version {version}, store {change.version}"))
            elif stored.get(key, set()) != self._contribution_set(change):
                out.append(Divergence(MODEL, "content", *key, f"edges of version {version} differ"))
        out.extend(Divergence(MODEL, "extra", *key, f"version {live[key]} applied, not live in the store")
                   for key in live if key not in wanted)
        return out

    def _contribution_set(self, change: AspectChange) -> set[tuple]:
        edges, field_edges, removed = self._contributions([change])
        return ({("edge", *row[2:]) for row in edges} | {("field", *row[2:]) for row in field_edges}
                | {("removed",) for _ in removed})

    @staticmethod
    def _live_versions(conn: sqlite3.Connection, urns: Sequence[str]) -> dict[tuple[str, str], int]:
        found = {}
        for chunk in chunks(sorted(set(urns))):
            marks = ",".join("?" * len(chunk))
            for urn, aspect, version in conn.execute(
                    f"SELECT urn, aspect, version FROM lineage_versions WHERE urn IN ({marks}) AND live = 1", chunk):
                found[(urn, aspect)] = version
        return found

    @staticmethod
    def _stored_contributions(conn: sqlite3.Connection, urns: Sequence[str]) -> dict[tuple[str, str], set[tuple]]:
        stored: dict[tuple[str, str], set[tuple]] = {}
        for chunk in chunks(sorted(set(urns))):
            marks = ",".join("?" * len(chunk))
            for kind, table in (("edge", "lineage_edges"), ("field", "lineage_field_edges")):
                for owner, via, *edge in conn.execute(
                        f"SELECT owner, via, source, destination, type FROM {table} WHERE owner IN ({marks})", chunk):
                    stored.setdefault((owner, via), set()).add((kind, *edge))
            for urn, aspect in conn.execute(f"SELECT urn, aspect FROM lineage_removed WHERE urn IN ({marks})", chunk):
                stored.setdefault((urn, aspect), set()).add(("removed",))
        return stored

    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        return [row[0] for row in self.db.reader().execute(
            "SELECT DISTINCT urn FROM lineage_versions WHERE urn > ? AND live = 1 ORDER BY urn LIMIT ?",
            (after, limit))]
