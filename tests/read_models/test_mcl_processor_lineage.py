"""The lineage-graph contract, which every adapter of the port passes: walks over datasets, jobs
and runs (several hops, a cycle), field lineage, deletions, soft deletes, duplicate and
out-of-order MCLs, a batch replayed after a crash mid-apply, and the consistency check.

Changes reach the graph the real way: an embedded GMS writes MCLs, the MCL processor applies
them. `LineageGraphContract` holds the tests; each subclass only says how to build its adapter
(the `graphs` fixture).
"""

from __future__ import annotations

import pytest

from ingest.backends import Endpoints
from mcl_processor.changes import AspectChange, ChangeBatch
from tests.contracts.lineage_graph import CLEAN, RAW, LineageGraphContract, answers, upstreams
from tests.support.builders import dataset_urn, proposal
from tests.support.lineage_adapters import (
    CassandraGraph,
    GraphFactory,
    keyspace_fixture,
    sqlite_graph,
)

# The SQLite tables before entities were numbered: keyed by URN.
URN_KEYED_LAYOUT = "".join(f"""
CREATE TABLE {table}_by_urn (owner TEXT, via TEXT, source TEXT, destination TEXT, type TEXT,
    PRIMARY KEY (owner, via, source, destination, type)) WITHOUT ROWID;
INSERT INTO {table}_by_urn SELECT o.urn, via, s.urn, d.urn, type FROM {table}
    JOIN lineage_nodes o ON o.id = owner JOIN lineage_nodes s ON s.id = source
    JOIN lineage_nodes d ON d.id = destination;
DROP TABLE {table};
ALTER TABLE {table}_by_urn RENAME TO {table};
CREATE INDEX {table}_down ON {table} (source, destination, type, via);
CREATE INDEX {table}_up ON {table} (destination, source, type, via);
""" for table in ("lineage_edges", "lineage_field_edges")) + "".join(f"""
CREATE TABLE {table}_by_urn (urn TEXT, aspect TEXT{more}, PRIMARY KEY (urn, aspect)) WITHOUT ROWID;
INSERT INTO {table}_by_urn SELECT n.urn, aspect{more_values} FROM {table} JOIN lineage_nodes n ON n.id = node;
DROP TABLE {table};
ALTER TABLE {table}_by_urn RENAME TO {table};
""" for table, more, more_values in (("lineage_versions", ", version INTEGER, live INTEGER", ", version, live"),
                                     ("lineage_removed", "", ""))) + "DROP TABLE lineage_nodes;"


class TestSqliteLineageGraph(LineageGraphContract):
    @pytest.fixture
    def graphs(self) -> GraphFactory:
        return sqlite_graph

    def test_a_graph_stored_by_urns_is_moved_to_numbered_entities_when_opened(self, graph):
        graph.write(proposal(CLEAN, "status", {"removed": True}))  # a soft delete moves too
        before = answers(graph)
        graph.models.db.writer.executescript(URN_KEYED_LAYOUT)
        graph.reopen_models()
        assert answers(graph) == before
        assert graph.processor.check(graph.gms.store).ok
        tables = {row[0] for row in graph.models.db.writer.execute("SELECT name FROM sqlite_master")}
        assert not any(name.endswith("_by_urn") for name in tables)

    def test_entities_are_numbered_in_the_order_they_first_appear(self, graph):
        loaded = [dataset_urn(f"db.loaded_{i}") for i in range(20, 0, -1)]  # URN order is not load order
        graph.lineage.apply(ChangeBatch(changes=tuple(
            AspectChange(urn, "dataset", "upstreamLineage", 1, upstreams(RAW, CLEAN)) for urn in loaded)))
        numbered = [row[0] for row in graph.models.db.writer.execute("SELECT urn FROM lineage_nodes ORDER BY id")]
        assert numbered[-len(loaded):] == loaded  # the tables keyed by owner take appends


class TestCassandraLineageGraph(LineageGraphContract):
    keyspace = keyspace_fixture("lineage")

    @pytest.fixture
    def graphs(self, cassandra_endpoints: Endpoints, keyspace: str) -> GraphFactory:
        return CassandraGraph(cassandra_endpoints, keyspace)
