"""The lineage graph on SQLite: edge tables indexed both ways, walked breadth first per hop.

Every edge row names the entity and aspect that declared it (`owner`, `via`), so a new
version of an aspect replaces exactly its own edges. Entities are stored by a number
(`lineage_nodes`), given in increasing order as they first appear: a load appends to the
tables keyed by owner instead of inserting across them, and their rows hold integers, not URNs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence

from ingest.faults import crash_point
from mcl_processor.annotations import Annotations, Edge
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence
from mcl_processor.lineage import FIELD_REACH, LineageGraph, LineageResult, check_walk
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
from mcl_processor.lineage.walk import RoundReader, reach_by, walk
from mcl_processor.readmodels_db import Database, model_errors, run_script, table_exists, versions_of

_EDGE_TABLES = ("lineage_edges", "lineage_field_edges")
_OWNER_COLUMNS = {"lineage_edges": ("owner", "via"), "lineage_field_edges": ("owner", "via"),
                  "lineage_versions": ("node", "aspect"), "lineage_removed": ("node", "aspect")}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS lineage_nodes (id INTEGER PRIMARY KEY, urn TEXT NOT NULL UNIQUE);
""" + "".join(f"""
CREATE TABLE IF NOT EXISTS {table} (
    owner INTEGER NOT NULL, via TEXT NOT NULL, source INTEGER NOT NULL, destination INTEGER NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (owner, via, source, destination, type)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {table}_down ON {table} (source, destination, type, via);
CREATE INDEX IF NOT EXISTS {table}_up ON {table} (destination, source, type, via);
""" for table in _EDGE_TABLES) + """
CREATE TABLE IF NOT EXISTS lineage_versions (
    node INTEGER NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL, live INTEGER NOT NULL,
    PRIMARY KEY (node, aspect)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lineage_removed (node INTEGER NOT NULL, aspect TEXT NOT NULL, PRIMARY KEY (node, aspect))
    WITHOUT ROWID;
"""
_VERSIONS = "lineage_versions JOIN lineage_nodes ON id = node"  # with their entities' URNs
_EDGES_AT = ("SELECT s.urn, d.urn, e.type, e.via, e.source, e.destination FROM {table} e"
             " JOIN lineage_nodes s ON s.id = e.source JOIN lineage_nodes d ON d.id = e.destination"
             " WHERE e.{near} IN ({marks})")  # the edges at these nodes, with their ends' numbers


class SqliteLineageGraph(LineageGraph):
    def __init__(self, db: Database, annotations: Annotations):
        self.db = db
        self.annotations = annotations
        self._memo: tuple[int, _Numbers] | None = None  # (the writer's transaction, its numbers)
        with db.schema_change() as conn:  # processes opening it at once take turns
            if table_exists(conn, "lineage_versions") and not table_exists(conn, "lineage_nodes"):
                _number_the_nodes(conn)
            else:
                run_script(conn, _SCHEMA)

    @model_errors
    def apply(self, batch: ChangeBatch) -> set[str]:
        conn = self.db.writer
        numbers = self._numbers()
        moved: set[str] = set()
        if batch.resets:
            resets = [(node,) for node in numbers.ids_of(conn, batch.resets).values()]
            moved |= self._destinations(conn, "owner = ?", resets)
            for table, (node, _) in _OWNER_COLUMNS.items():
                conn.executemany(f"DELETE FROM {table} WHERE {node} = ?", resets)
        changes = [c for c in batch.changes if self.annotations.traced(c.aspect)]
        if not changes:
            return moved
        # every changed entity numbered first (an entity new to the graph has no version yet, so
        # its change applies: the same numbers in the same order as numbering the applied ones)
        ids = numbers.number(conn, [c.urn for c in changes])
        urn_of = {ids[c.urn]: c.urn for c in changes}
        current = {(urn_of[node], aspect): version
                   for (node, aspect), version in versions_of(conn, "lineage_versions", "node", urn_of).items()}
        applied = fresh(changes, current, batch.replace_equal)
        contributions = [contribution(self.annotations, c) for c in applied]
        ids = numbers.number(conn, [urn for c in contributions for e in (*c.edges, *c.field_edges) for urn in e[:2]])
        replaced = [(ids[c.urn], c.aspect) for c in applied if (c.urn, c.aspect) in current]
        moved |= self._destinations(conn, "owner = ? AND via = ?",
                                    [key for key in replaced if moves_fields(self.annotations, key[1])])
        for table, (node, aspect) in _OWNER_COLUMNS.items():
            conn.executemany(f"DELETE FROM {table} WHERE {node} = ? AND {aspect} = ?", replaced)
        for table, edges_of in (("lineage_edges", lambda c: c.edges), ("lineage_field_edges", lambda c: c.field_edges)):
            conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?, ?, ?)",
                             [(ids[c.urn], c.aspect, ids[e.source], ids[e.destination], e.type)
                              for c in contributions for e in edges_of(c)])
        conn.executemany("INSERT INTO lineage_removed VALUES (?, ?)",
                         [(ids[c.urn], c.aspect) for c in contributions if c.removed])
        crash_point("lineage-before-versions")  # a crash here rolls the whole batch back
        conn.executemany("INSERT OR REPLACE INTO lineage_versions VALUES (?, ?, ?, ?)",
                         [(ids[c.urn], c.aspect, c.version, int(not c.deleted)) for c in applied])
        return moved | field_destinations(contributions)

    @staticmethod
    def _destinations(conn: sqlite3.Connection, where: str, owners: Sequence[tuple[int | str, ...]]) -> set[str]:
        """The destinations of the field edges of these owners (`where` selects one's rows)."""
        found: set[str] = set()
        for owner in owners:
            found.update(row[0] for row in conn.execute(
                "SELECT d.urn FROM lineage_field_edges e JOIN lineage_nodes d ON d.id = e.destination"
                f" WHERE {where}", owner))
        return found

    def _numbers(self) -> _Numbers:
        """The numbers of the nodes met in the writer's current transaction, in which nothing
        renumbers a node but `clear` (which forgets them); outside a transaction, a new memo."""
        if not self.db.writer.in_transaction:
            return _Numbers()
        if self._memo is None or self._memo[0] != self.db.transactions:
            self._memo = (self.db.transactions, _Numbers())
        return self._memo[1]

    @model_errors
    def clear(self) -> None:
        self._memo = None
        for table in (*_OWNER_COLUMNS, "lineage_nodes"):
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
        """Walked on the nodes' numbers, from the edge tables' indexes alone (neither the edges'
        URNs nor their types and aspects are read); URNs only for the nodes reached."""
        check_walk(direction, FIELD_REACH)
        conn = self.db.writer
        near, far = ("destination", "source") if direction == "upstream" else ("source", "destination")

        def neighbours(frontier: list[int]) -> set[int]:
            found: set[int] = set()
            for chunk in chunks(frontier):
                found.update(row[0] for row in conn.execute(
                    f"SELECT {far} FROM lineage_field_edges WHERE {near} IN ({','.join('?' * len(chunk))})", chunk))
            return found

        def hidden(nodes: set[int]) -> set[int]:
            found: set[int] = set()
            for chunk in chunks(sorted(nodes)):
                found.update(row[0] for row in conn.execute(
                    f"SELECT node FROM lineage_removed WHERE node IN ({','.join('?' * len(chunk))})", chunk))
            return found

        numbers = self._numbers()
        reached = reach_by(numbers.ids_of(conn, urns).values(), FIELD_REACH, neighbours, hidden)
        return set(numbers.urns_of(conn, reached))

    def _walk(self, table: str, root: str, direction: str, max_hops: int) -> LineageResult:
        return walk(root, direction, max_hops, self._round_reader(table, self.db.reader()))

    def _round_reader(self, table: str, conn: sqlite3.Connection) -> RoundReader:
        numbers: dict[str, int] = {}  # of the nodes met so far: each is looked up by URN once
        urns: dict[int, str] = {}

        def number(nodes: Collection[str]) -> list[int]:
            looked_up = _ids_of(conn, [urn for urn in nodes if urn not in numbers])
            numbers.update(looked_up)
            urns.update((node, urn) for urn, node in looked_up.items())
            return [numbers[urn] for urn in nodes if urn in numbers]

        def read(expand: Mapping[str, Sequence[str]],
                 status: Collection[str]) -> tuple[dict[str, list[Edge]], set[str]]:
            found: dict[str, list[Edge]] = {}
            for side, frontier in expand.items():
                near = "destination" if side == "upstream" else "source"
                for chunk in chunks(number(frontier)):
                    query = _EDGES_AT.format(table=table, near=near, marks=",".join("?" * len(chunk)))
                    for source, destination, kind, via, source_node, destination_node in conn.execute(query, chunk):
                        numbers.update(((source, source_node), (destination, destination_node)))
                        urns.update(((source_node, source), (destination_node, destination)))
                        found.setdefault(side, []).append(Edge(source, destination, kind, via))
            hidden: set[str] = set()
            for chunk in chunks(number(status)):
                marks = ",".join("?" * len(chunk))
                hidden.update(urns[row[0]] for row in conn.execute(
                    f"SELECT DISTINCT node FROM lineage_removed WHERE node IN ({marks})", chunk))
            return found, hidden

        return read

    # -- consistency ----------------------------------------------------------------------

    @model_errors
    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        conn = self.db.reader()
        live = versions_of(conn, _VERSIONS, "urn", urns, "live = 1")
        return divergences(self.annotations, expected, live, self._stored_contributions(conn, urns))

    @staticmethod
    def _stored_contributions(conn: sqlite3.Connection, urns: Sequence[str]) -> dict[tuple[str, str], set[Fact]]:
        stored: dict[tuple[str, str], set[Fact]] = {}
        for chunk in chunks(sorted(set(urns))):
            marks = ",".join("?" * len(chunk))
            for kind, table in ((ENTITY, "lineage_edges"), (FIELD, "lineage_field_edges")):
                for owner, via, *edge in conn.execute(
                        f"SELECT o.urn, e.via, s.urn, d.urn, e.type FROM {table} e"
                        " JOIN lineage_nodes o ON o.id = e.owner JOIN lineage_nodes s ON s.id = e.source"
                        f" JOIN lineage_nodes d ON d.id = e.destination WHERE o.urn IN ({marks})", chunk):
                    stored.setdefault((owner, via), set()).add((kind, *edge))
            for urn, aspect in conn.execute("SELECT n.urn, aspect FROM lineage_removed JOIN lineage_nodes n"
                                            f" ON n.id = node WHERE n.urn IN ({marks})", chunk):
                stored.setdefault((urn, aspect), set()).add((REMOVED,))
        return stored

    @model_errors
    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        return [row[0] for row in self.db.reader().execute(
            "SELECT urn FROM lineage_nodes WHERE urn > ? AND EXISTS"
            " (SELECT 1 FROM lineage_versions WHERE node = id AND live = 1) ORDER BY urn LIMIT ?", (after, limit))]


def _ids_of(conn: sqlite3.Connection, urns: Iterable[str]) -> dict[str, int]:
    """The numbers of those of these entities the graph has numbered."""
    found: dict[str, int] = {}
    for chunk in chunks(sorted(set(urns))):
        marks = ",".join("?" * len(chunk))
        found.update(conn.execute(f"SELECT urn, id FROM lineage_nodes WHERE urn IN ({marks})", chunk))
    return found


class _Numbers:
    """Entities' numbers (`lineage_nodes`) met so far, both ways: each is read once."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.urns: dict[int, str] = {}

    def _learn(self, found: Iterable[tuple[str, int]]) -> None:
        for urn, node in found:
            self.ids[urn] = node
            self.urns[node] = urn

    def ids_of(self, conn: sqlite3.Connection, urns: Iterable[str]) -> dict[str, int]:
        """The numbers of those of these entities the graph has numbered."""
        urns = set(urns)
        self._learn(_ids_of(conn, urns - self.ids.keys()).items())
        return {urn: self.ids[urn] for urn in urns if urn in self.ids}

    def urns_of(self, conn: sqlite3.Connection, nodes: Iterable[int]) -> list[str]:
        """The URNs of these numbered entities."""
        nodes = set(nodes)
        for chunk in chunks(sorted(nodes - self.urns.keys())):
            self._learn(conn.execute(f"SELECT urn, id FROM lineage_nodes WHERE id IN ({','.join('?' * len(chunk))})",
                                     chunk))
        return [self.urns[node] for node in nodes]

    def number(self, conn: sqlite3.Connection, urns: Sequence[str]) -> dict[str, int]:
        """Every number known, with these entities', the new ones numbered next in the order given."""
        self.ids_of(conn, urns)
        new = [urn for urn in dict.fromkeys(urns) if urn not in self.ids]
        if new:
            start = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM lineage_nodes").fetchone()[0]
            self._learn(zip(new, range(start, start + len(new)), strict=True))
            conn.executemany("INSERT INTO lineage_nodes (urn, id) VALUES (?, ?)", [(urn, self.ids[urn]) for urn in new])
        return self.ids


def _number_the_nodes(conn: sqlite3.Connection) -> None:
    """Move a graph stored by URNs (before `lineage_nodes`) into the tables of today, in the
    transaction of the opening."""
    for table in _OWNER_COLUMNS:
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_by_urn")
    for table in _EDGE_TABLES:
        for index in ("down", "up"):
            conn.execute(f"DROP INDEX IF EXISTS {table}_{index}")
    run_script(conn, _SCHEMA)
    conn.execute("INSERT INTO lineage_nodes (urn) SELECT urn FROM lineage_versions_by_urn"
                 " UNION SELECT urn FROM lineage_removed_by_urn"
                 + "".join(f" UNION SELECT {column} FROM {table}_by_urn"
                           for table in _EDGE_TABLES for column in ("owner", "source", "destination")))
    for table in _EDGE_TABLES:
        conn.execute(f"INSERT INTO {table} SELECT o.id, e.via, s.id, d.id, e.type FROM {table}_by_urn e"
                     " JOIN lineage_nodes o ON o.urn = e.owner JOIN lineage_nodes s ON s.urn = e.source"
                     " JOIN lineage_nodes d ON d.urn = e.destination")
    conn.execute("INSERT INTO lineage_versions SELECT n.id, v.aspect, v.version, v.live FROM lineage_versions_by_urn v"
                 " JOIN lineage_nodes n ON n.urn = v.urn")
    conn.execute("INSERT INTO lineage_removed SELECT n.id, r.aspect FROM lineage_removed_by_urn r"
                 " JOIN lineage_nodes n ON n.urn = r.urn")
    for table in _OWNER_COLUMNS:
        conn.execute(f"DROP TABLE {table}_by_urn")
