"""The run-lineage contract, which every adapter of the port passes: accesses by dataset and by
program in a window, derived runs (start, end, status), field-operation references newest
first with operations stored once per checksum, replays and out-of-order versions, late run
events, a changed start time, and a deleted run.

Changes arrive the real way: an embedded GMS writes MCLs, the MCL processor applies them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ingest.backends import Endpoints
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.runs import RunLineageStore
from mcl_processor.runs.cassandra import CassandraRunLineage
from tests.contracts.run_lineage import RunLineageContract
from tests.support.lineage_adapters import cassandra_session, keyspace_fixture


class TestSqliteRunLineage(RunLineageContract):
    @pytest.fixture
    def stores(self):
        return lambda models: models.runs


@dataclass(frozen=True)
class CassandraStores:
    endpoints: Endpoints
    keyspace: str

    def __call__(self, models: SqliteReadModels) -> RunLineageStore:
        return CassandraRunLineage(cassandra_session(self.endpoints), self.keyspace, models.runs.facts)


class TestCassandraRunLineage(RunLineageContract):
    keyspace = keyspace_fixture("runs")

    @pytest.fixture
    def stores(self, cassandra_endpoints: Endpoints, keyspace: str):
        return CassandraStores(cassandra_endpoints, keyspace)
