"""The subscription SDK (ingest.subscribe) and `lodestar tail`, on the embedded log and on Kafka:
filters, start positions, order per URN, commits (automatic, explicit, across a crash and a
clean SIGTERM), the asyncio flavour, and MCLs written with an older MCL schema; on Kafka also with
MCLs in DataHub's schema and Confluent's framing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.eventlog import EventLog
from ingest.eventlog.kafka import KafkaEventLog
from ingest.subscribe import MCL_TOPICS, subscribe
from lodestar.assembly import open_event_log
from lodestar.config import Config
from tests.contracts.subscription import ACTOR, ORDERS, TAG, WAIT, SubscriptionContract, take
from tests.support.backends import SESSION_TIMEOUT_MS, drop_kafka_names, unique_name
from tests.support.builders import proposal


class TestSubscriptionOnSqlite(SubscriptionContract):
    def open_gms(self, data_dir: Path) -> Gms:
        return Gms.embedded(data_dir)

    def cli_env(self) -> dict[str, str]:
        return {"LODESTAR_EVENT_LOG": "sqlite", "LODESTAR_ASPECT_STORE": "sqlite"}


class TestSubscriptionOnKafka(SubscriptionContract):
    @pytest.fixture
    def backend(self, kafka_bootstrap: str) -> Iterator[None]:
        self.bootstrap, self.prefix = kafka_bootstrap, unique_name("subscribe") + "-"
        yield
        drop_kafka_names(kafka_bootstrap, self.prefix)

    def open_gms(self, data_dir: Path) -> Gms:
        data_dir.mkdir(parents=True, exist_ok=True)
        log_: EventLog = KafkaEventLog(self.bootstrap, self.prefix, session_timeout_ms=SESSION_TIMEOUT_MS, timeout=WAIT)
        return Gms(SqliteAspectStore(data_dir / "lodestar.db"), log_)

    def cli_env(self) -> dict[str, str]:
        return {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": self.bootstrap,
                "LODESTAR_KAFKA_PREFIX": self.prefix, "LODESTAR_KAFKA_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS)}


class TestSubscriptionOnKafkaInConfluentFormat(TestSubscriptionOnKafka):
    """The same on MCLs in DataHub's schema and Confluent's framing (kafka.wire_format: confluent)."""

    def open_gms(self, data_dir: Path) -> Gms:
        """On a new data directory, the MCLs of the schema's registration are dropped (as retention
        would), so the contract's counts of changes from the earliest record hold."""
        fresh = not (data_dir / "lodestar.db").exists()
        data_dir.mkdir(parents=True, exist_ok=True)
        log_: EventLog = KafkaEventLog(self.bootstrap, self.prefix, session_timeout_ms=SESSION_TIMEOUT_MS, timeout=WAIT)
        gms = Gms(SqliteAspectStore(data_dir / "lodestar.db"), log_, wire_format="confluent")
        for topic in MCL_TOPICS if fresh else ():
            for part in range(log_.partitions(topic)):
                log_.delete_before(topic, part, log_.end_offset(topic, part))
        return gms

    def cli_env(self) -> dict[str, str]:
        return {**super().cli_env(), "LODESTAR_KAFKA_WIRE_FORMAT": "confluent"}


def test_a_subscription_on_the_log_a_data_directory_is_configured_with(tmp_path: Path):
    gms = Gms.embedded(tmp_path)
    try:
        assert all(r.failure is None for r in gms.apply([proposal(ORDERS, "globalTags", {"tags": [{"tag": TAG}]})],
                                                        ACTOR))
    finally:
        gms.close()
    log_ = open_event_log(Config.load(data_dir=tmp_path), tmp_path)
    try:
        with subscribe(log_, "configured", aspects=["globalTags"], start="earliest") as changes:
            (change,) = take(changes, 1)
        assert (change.urn, change.aspect, change.value) == (ORDERS, "globalTags", {"tags": [{"tag": TAG}]})
    finally:
        log_.close()
