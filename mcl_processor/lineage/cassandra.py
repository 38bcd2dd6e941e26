"""The lineage graph on Apache Cassandra (tables in `cassandra_tables`).

Walks use the shared breadth-first walk (`walk`): each round is one batch of concurrent
queries for the whole frontier (both sides, and the statuses of the nodes just found), so a
walk of h hops costs h + 1 round trips however wide it is. A query reads the partitions of
up to `keys_per_query` nodes (`IN`): a few thousand single-partition queries cost the client
more than the server, a long `IN` list makes one coordinator wait for them all.

There is no transaction across partitions: `ReadModels.transaction()` is a no-op for this
adapter and correctness comes from the version each (urn, aspect) is reflected at. A batch
is written in steps; each is one round of concurrent writes (those to one partition in an
unlogged batch, i.e. one mutation), finished before the next starts:

1. resets: the entity's edge rows, then its contribution rows and listing, then its versions;
2. read the versions of the changed entities and keep the fresh changes; read what each of
   their (urn, aspect) owners has contributed so far;
3. record the contribution rows of the new versions that are not on record yet;
4. write their edge rows; delete the edge rows of contribution rows they no longer make;
5. delete those contribution rows; list or unlist the entities (`urns`);
6. write the versions, with the soft-delete flag: the commit mark of each change.

So at every moment an edge row exists only while its contribution row does (3 before 4, 4
before 5), and a version is written only after all its change implies. If the process dies
mid-batch, the offsets are not committed and the batch is delivered again (perhaps with
later records, collapsed into newer versions). Changes whose version was written are no
longer fresh, and are complete. The others are applied anew: step 2 reads every contribution
row on record (the old version's, whatever the dead attempt recorded, or a mix), step 3
records the rest of what the new version contributes, step 4 writes all its edge rows and
removes those of every other row on record, step 5 those rows, so the outcome is that of one
uninterrupted apply; resets are idempotent and simply run again.
MCLs at or below the written version (replays, duplicates, out of order) change nothing.

Writes carry the driver's client timestamps, monotonic within a process; a batch replayed by
another process comes after the consumer group noticed the death (seconds later), far beyond
the clock skew of synchronised hosts. One writer per entity at a time is assumed, as the
consumer group gives each URN's partition to one processor.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType, BoundStatement, PreparedStatement, SimpleStatement, tuple_factory

from ingest.backends import Endpoints, cassandra_session
from ingest.backends.cassandra import DRIVER_ERRORS, backend_error, contact_points, translated
from ingest.faults import crash_point
from mcl_processor.annotations import Annotations, Edge
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.divergence import Divergence
from mcl_processor.lineage import FIELD_REACH, LineageGraph, LineageResult
from mcl_processor.lineage.cassandra_tables import (
    BUCKETS,
    DEFAULT_REPLICATION,
    TABLES,
    Statements,
    bucket,
    check_keyspace,
    create_schema,
)
from mcl_processor.lineage.contributions import (
    ENTITY,
    FIELD,
    REMOVED,
    Fact,
    Owner,
    contribution,
    divergences,
    field_destinations,
    fresh,
    moves_fields,
)
from mcl_processor.lineage.walk import RoundReader, reach, walk

Row = tuple[str, str, str, str]  # a contribution row: (kind, source, destination, type)
Query = tuple[PreparedStatement | SimpleStatement, tuple[Any, ...]]


class CassandraLineageGraph(LineageGraph):
    """The lineage graph in `keyspace` (created with `replication` if absent, and its tables).

    `session` must come from a Cluster using execution profiles (the default); the graph uses
    a copy of its default profile reading tuples at `consistency` (quorum reads and writes,
    so a version check sees the last version written). Every statement runs through `_run`,
    which raises the driver's errors as ingest.backends.errors."""

    def __init__(self, session: Session, keyspace: str, annotations: Annotations, *,
                 replication: Mapping[str, str | int] = DEFAULT_REPLICATION,
                 consistency: int = ConsistencyLevel.LOCAL_QUORUM, concurrency: int = 256,
                 keys_per_query: int = 20):
        self.session = session
        self.keyspace = check_keyspace(keyspace)
        self.annotations = annotations
        self.concurrency = concurrency
        self.keys_per_query = keys_per_query
        self._profile = session.execution_profile_clone_update(
            EXEC_PROFILE_DEFAULT, row_factory=tuple_factory, consistency_level=consistency)
        self._cluster: Cluster | None = None
        self._where = contact_points(session)
        with translated(self._where):
            create_schema(session, keyspace, replication)
            self.cql = Statements(session, keyspace)

    @classmethod
    def connect(cls, endpoints: Endpoints, keyspace: str, annotations: Annotations,
                **options: Any) -> CassandraLineageGraph:
        """A graph on its own connection to the Cassandra of `endpoints` (closed by `close`)."""
        session = cassandra_session(endpoints)
        try:
            graph = cls(session, keyspace, annotations, **options)
        except BaseException:
            session.cluster.shutdown()
            raise
        graph._cluster = session.cluster
        return graph

    def close(self) -> None:
        """Close the connection `connect` opened (a session given by the caller stays open)."""
        if self._cluster is not None:
            self._cluster.shutdown()

    def _run(self, queries: Sequence[Query]) -> list[list[tuple]]:
        """One round: every query concurrently; the rows of each, in order."""
        try:
            results = execute_concurrent(self.session, queries, concurrency=self.concurrency,
                                         raise_on_first_error=True, execution_profile=self._profile)
            return [list(result) for _, result in results]
        except DRIVER_ERRORS as err:
            raise backend_error(err, self._where) from err

    def _read(self, statement: PreparedStatement, keys: Sequence[str]) -> list[tuple]:
        """One round: the rows of `statement` for all these partition keys."""
        groups = [(statement, (list(group),)) for group in chunks(keys, self.keys_per_query)]
        return [row for rows in self._run(groups) for row in rows]

    def _write(self, queries: Sequence[Query]) -> None:
        """One round of writes, those to one partition together in unlogged batches (a batch in
        one partition is one mutation: the same outcome for fewer requests)."""
        partitions: dict[tuple[str, object], list[BoundStatement]] = {}  # (table, partition key)
        for statement, values in queries:
            bound = statement.bind(values)
            key = bound.routing_key
            partitions.setdefault((statement.column_metadata[0].table_name, key or id(bound)), []).append(bound)
        requests: list[Query] = []
        for bounds in partitions.values():
            for group in _batches(bounds):
                if len(group) == 1:
                    requests.append((group[0], ()))
                else:
                    batch = BatchStatement(BatchType.UNLOGGED)
                    for bound in group:
                        batch.add(bound)
                    requests.append((batch, ()))
        self._run(requests)

    # -- writes ---------------------------------------------------------------------------

    def apply(self, batch: ChangeBatch) -> set[str]:
        """Apply a batch in the steps of the module docstring (no transaction is needed). The
        fields it returns include the destinations of the field edges of changes already
        applied at their version (by an attempt that died before the caller derived from them)."""
        moved = self._reset(batch.resets) if batch.resets else set()
        changes = [c for c in batch.changes if self.annotations.traced(c.aspect)]
        if not changes:
            return moved
        versions = self._versions(sorted({c.urn for c in changes}))
        applied = fresh(changes, {key: v[0] for key, v in versions.items()}, batch.replace_equal)
        done = set() if batch.replace_equal else {  # (with replace_equal, those are applied again below)
            (c.urn, c.aspect) for c in changes if versions.get((c.urn, c.aspect), (None,))[0] == c.version}
        moved |= field_destinations(contribution(self.annotations, c) for c in changes
                                    if (c.urn, c.aspect) in done and moves_fields(self.annotations, c.aspect))
        if not applied:
            return moved
        recorded = self._contributions([(c.urn, c.aspect) for c in applied])
        contributions = {(c.urn, c.aspect): contribution(self.annotations, c) for c in applied}
        moved |= field_destinations(contributions.values())
        moved |= {row[2] for rows in recorded.values() for row in rows if row[0] == FIELD}
        made = {owner: c.facts() - {(REMOVED,)} for owner, c in contributions.items()}
        dropped = [(owner, row) for owner, rows in recorded.items() for row in rows - made[owner]]
        cql = self.cql
        self._write([(cql.insert_contribution, (*owner, *row)) for owner, rows in made.items()
                     for row in rows - recorded.get(owner, set())])
        self._write([(insert, _edge_key(owner, row)) for owner, rows in made.items() for row in rows
                     for insert in cql.insert_edge[row[0]]]
                    + [(delete, _edge_key(owner, row)) for owner, row in dropped for delete in cql.delete_edge[row[0]]])
        self._write([(cql.delete_contribution, (*owner, *row)) for owner, row in dropped]
                    + [(cql.list_entity if is_listed else cql.unlist_entity, (bucket(urn), urn))
                       for urn, is_listed in _listed(versions, applied).items()])
        crash_point("lineage-before-versions")
        self._write([(cql.write_version, (c.urn, c.aspect, c.version, not c.deleted,
                                          contributions[(c.urn, c.aspect)].removed)) for c in applied])
        return moved

    def _reset(self, urns: Sequence[str]) -> set[str]:
        """Forget these entities; returns the destinations of the field edges they had."""
        cql = self.cql
        recorded = self._contributions_of(urns)
        self._write([(delete, _edge_key(owner, row)) for owner, rows in recorded.items() for row in rows
                     for delete in cql.delete_edge[row[0]]])
        self._write([(cql.delete_contributions, (urn,)) for urn in urns]
                    + [(cql.unlist_entity, (bucket(urn), urn)) for urn in urns])
        self._write([(cql.delete_versions, (urn,)) for urn in urns])
        return {row[2] for rows in recorded.values() for row in rows if row[0] == FIELD}

    def _versions(self, urns: Sequence[str]) -> dict[Owner, tuple[int, bool, bool]]:
        """(version, live, removed) of every aspect of these entities."""
        return {(urn, aspect): (version, live, removed)
                for urn, aspect, version, live, removed in self._read(self.cql.versions, urns)}

    def _contributions(self, owners: Sequence[Owner]) -> dict[Owner, set[Row]]:
        """The contribution rows on record for these (urn, aspect) owners."""
        wanted = set(owners)
        recorded = self._contributions_of(sorted({urn for urn, _ in owners}))
        return {owner: rows for owner, rows in recorded.items() if owner in wanted}

    def _contributions_of(self, urns: Sequence[str]) -> dict[Owner, set[Row]]:
        """The contribution rows on record for every aspect of these entities."""
        out: dict[Owner, set[Row]] = {}
        for owner, via, *row in self._read(self.cql.contributions, urns):
            out.setdefault((owner, via), set()).add(tuple(row))  # type: ignore[arg-type]
        return out

    def clear(self) -> None:
        """Truncate every table (the keyspace and tables stay)."""
        self._run([(SimpleStatement(f"TRUNCATE {self.keyspace}.{table}"), ()) for table in TABLES])

    # -- queries --------------------------------------------------------------------------

    def query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return walk(urn, direction, max_hops, self._reader(self.cql.edges[ENTITY]))

    def field_query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        return walk(urn, direction, max_hops, self._reader(self.cql.edges[FIELD]))

    def fields_reached(self, urns: Collection[str], direction: str) -> set[str]:
        return reach(urns, direction, FIELD_REACH, self._reader(self.cql.edges[FIELD]))

    def _reader(self, edges: Mapping[str, PreparedStatement]) -> RoundReader:
        def read(expand: Mapping[str, Sequence[str]],
                 status: Collection[str]) -> tuple[dict[str, list[Edge]], set[str]]:
            sides = [(side, list(group)) for side, frontier in expand.items()
                     for group in chunks(frontier, self.keys_per_query)]
            statuses = [list(group) for group in chunks(list(status), self.keys_per_query)]
            results = self._run([(edges[side], (group,)) for side, group in sides]
                                + [(self.cql.status, (group,)) for group in statuses])
            found: dict[str, list[Edge]] = {}
            for (side, _), rows in zip(sides, results[:len(sides)], strict=True):
                found.setdefault(side, []).extend(map(Edge._make, rows))
            hidden = {urn for rows in results[len(sides):] for urn, removed in rows if removed}
            return found, hidden

        return read

    # -- consistency ----------------------------------------------------------------------

    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        """Live versions and contributions on record, an edge counting only when both its rows exist."""
        urns = sorted(set(urns))
        versions = self._versions(urns)
        recorded = [(owner, row) for owner, rows in self._contributions_of(urns).items() for row in rows]
        found = self._run([(exists, _edge_key(owner, row)) for owner, row in recorded
                           for exists in self.cql.edge_exists[row[0]]])  # by source, then by destination
        stored: dict[Owner, set[Fact]] = {}
        for (owner, row), in_source, in_destination in zip(recorded, found[0::2], found[1::2], strict=True):
            if in_source and in_destination:
                stored.setdefault(owner, set()).add(row)
        for owner, (_, live, removed) in versions.items():
            if live and removed:
                stored.setdefault(owner, set()).add((REMOVED,))
        live_versions = {owner: version for owner, (version, live, _) in versions.items() if live}
        return divergences(self.annotations, expected, live_versions, stored)

    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        """Merges the listing's buckets: each gives its next URNs; all up to the least last URN of
        a full bucket are complete (a page may hold fewer than `limit`, never none too early)."""
        per = 2 * -(-limit // BUCKETS)
        pages = [[urn for (urn,) in rows]
                 for rows in self._run([(self.cql.entities, (b, after, per)) for b in range(BUCKETS)])]
        full = [page[-1] for page in pages if len(page) == per]
        bound = min(full) if full else None
        return sorted(urn for page in pages for urn in page if bound is None or urn <= bound)[:limit]


def _listed(versions: Mapping[Owner, tuple[int, bool, bool]], applied: Sequence[AspectChange]) -> dict[str, bool]:
    """Whether each changed entity keeps a live traced aspect once `applied` are."""
    live = {key: is_live for key, (_, is_live, _) in versions.items()}
    live |= {(c.urn, c.aspect): not c.deleted for c in applied}
    listed = dict.fromkeys((c.urn for c in applied), False)
    for (urn, _), is_live in live.items():
        if urn in listed:
            listed[urn] = listed[urn] or is_live
    return listed


def _edge_key(owner: Owner, row: Row) -> tuple[str, str, str, str, str]:
    """(source, destination, type, via, owner) of a contribution row."""
    return row[1], row[2], row[3], owner[1], owner[0]


def _batches(bounds: list[BoundStatement], budget: int = 4000) -> Iterator[list[BoundStatement]]:
    """Statements in groups of at most about `budget` bytes of values (the server warns about
    batches over 5 KiB)."""
    group: list[BoundStatement] = []
    size = 0
    for bound in bounds:
        cost = sum(len(value) for value in bound.values if value is not None)
        if group and size + cost > budget:
            yield group
            group, size = [], 0
        group.append(bound)
        size += cost
    if group:
        yield group
