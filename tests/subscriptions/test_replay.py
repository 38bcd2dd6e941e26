"""Replay of the MCL topics for backfill (mcl_processor.replay, `lodestar replay`): a rebuild into
a fresh timeseries model equals the live one and is switched to atomically, replays are
idempotent, a replay beside live ingestion loses and doubles nothing, retention is noticed,
a killed replay resumes. On the embedded log and read models, and on Kafka and OpenSearch; the
command also on MCLs in Confluent's framing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.backends import Endpoints, cassandra_session
from ingest.eventlog.kafka import KafkaEventLog
from mcl_processor.distributed import DistributedReadModels
from mcl_processor.readmodels import ReadModels
from schemas.registry import default_registry
from tests.contracts.replay import WAIT, ReplayCommandContract, ReplayContract, catalog
from tests.support.backends import SESSION_TIMEOUT_MS, drop_kafka_names, unique_name
from tests.support.readmodels import OnOpenSearch, OnSqlite


class TestReplayEmbedded(OnSqlite, ReplayContract):
    def open_gms(self, data_dir: Path) -> Gms:
        return Gms.embedded(data_dir)


class KafkaLog:
    wire_format = "lodestar"  # of the MCLs GMS writes

    @pytest.fixture(autouse=True)
    def _kafka(self, kafka_bootstrap: str) -> Iterator[None]:
        self.bootstrap, self.prefix = kafka_bootstrap, unique_name("replay") + "-"
        yield
        drop_kafka_names(kafka_bootstrap, self.prefix)

    def open_gms(self, data_dir: Path) -> Gms:
        data_dir.mkdir(parents=True, exist_ok=True)
        return Gms(SqliteAspectStore(data_dir / "lodestar.db"),
                   KafkaEventLog(self.bootstrap, self.prefix, session_timeout_ms=SESSION_TIMEOUT_MS, timeout=WAIT),
                   wire_format=self.wire_format)

    def cli_env(self) -> dict[str, str]:
        return {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": self.bootstrap,
                "LODESTAR_KAFKA_PREFIX": self.prefix, "LODESTAR_KAFKA_WIRE_FORMAT": self.wire_format}


class TestReplayOnKafkaAndOpenSearch(KafkaLog, OnOpenSearch, ReplayContract):
    pass


class TestReplayCommandEmbedded(ReplayCommandContract):
    def open_gms(self, data_dir: Path) -> Gms:
        return Gms.embedded(data_dir)


class TestReplayCommandOnKafka(KafkaLog, ReplayCommandContract):
    pass


class TestReplayCommandOnKafkaInConfluentFormat(KafkaLog, ReplayCommandContract):
    """MCLs in DataHub's schema and Confluent's framing (kafka.wire_format: confluent)."""

    wire_format = "confluent"


class TestReplayCommandOnKafkaAndOpenSearch(KafkaLog, ReplayCommandContract):
    """On Kafka with the distributed read models: search and timeseries on OpenSearch, lineage on Cassandra."""

    @pytest.fixture(autouse=True)
    def _distributed(self, endpoints: Endpoints, cassandra_endpoints: Endpoints, opensearch_url: str) -> Iterator[None]:
        self.endpoints, self.run = endpoints, unique_name("replay")
        yield
        session = cassandra_session(endpoints, request_timeout=60)
        try:
            session.execute(f'DROP KEYSPACE IF EXISTS "{self.run}"', timeout=120)
        finally:
            session.cluster.shutdown()

    def open_models(self, data_dir: Path) -> ReadModels:
        return DistributedReadModels.connect(self.endpoints, default_registry(), keyspace=self.run,
                                             index_prefix=self.run)

    def cli_env(self) -> dict[str, str]:
        return {**super().cli_env(), "LODESTAR_READ_MODELS": "distributed", "LODESTAR_CASSANDRA_KEYSPACE": self.run,
                "LODESTAR_OPENSEARCH_PREFIX": self.run, "LODESTAR_CASSANDRA_HOSTS": ",".join(
                    self.endpoints.cassandra_hosts), "LODESTAR_OPENSEARCH_URL": self.endpoints.opensearch_url}

    def test_the_name_behind_the_live_indices_is_refused(self, live):
        catalog(live)
        expected = live.state()
        assert self.replay("--topic", "versioned", "--into", "first").returncode == 0
        again = self.replay("--topic", "versioned", "--into", "first")
        assert again.returncode == 1 and "Traceback" not in again.stderr
        assert "--into: 'first' names the live search indices now: choose another name" in again.stderr
        assert self.replay("--topic", "versioned", "--into", "second").returncode == 0  # replaces the first
        assert live.state() == expected
