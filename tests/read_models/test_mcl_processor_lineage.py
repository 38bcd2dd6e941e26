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
from tests.contracts.lineage_graph import LineageGraphContract
from tests.support.lineage_adapters import (
    CassandraGraph,
    GraphFactory,
    keyspace_fixture,
    sqlite_graph,
)


class TestSqliteLineageGraph(LineageGraphContract):
    @pytest.fixture
    def graphs(self) -> GraphFactory:
        return sqlite_graph


class TestCassandraLineageGraph(LineageGraphContract):
    keyspace = keyspace_fixture("lineage")

    @pytest.fixture
    def graphs(self, cassandra_endpoints: Endpoints, keyspace: str) -> GraphFactory:
        return CassandraGraph(cassandra_endpoints, keyspace)
