"""Platform events on the real Kafka, each once: a server killed right after appending a batch's
events (before committing the MCL offsets they came from) publishes, once restarted, only what
was missing; in both MCL wire formats."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gms.external_registry import ExternalSchemaRegistry
from ingest import topics
from ingest.eventlog.kafka import KafkaEventLog
from mcl_processor.platform_events import GROUP
from schemas.confluent import ConfluentDecoder
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, mcp
from tests.support.processes import ServeProcess
from tests.support.waiting import await_

URNS = [dataset_urn(f"crash.table{n}") for n in range(6)]


def published(log: KafkaEventLog, registry: str) -> Counter[tuple[str, str, str, str | None]]:
    schemas = ExternalSchemaRegistry(registry)
    decoder = ConfluentDecoder(lambda schema_id: schemas.schema(schema_id).schema)
    seen: Counter[tuple[str, str, str, str | None]] = Counter()
    for partition in range(log.partitions(topics.PLATFORM_EVENT)):
        for record in log.read(topics.PLATFORM_EVENT, partition, 0, 10_000):
            event = json.loads(decoder.decode(record.value)[1]["payload"]["value"])
            seen[(event["entityUrn"], event["category"], event["operation"], event.get("modifier"))] += 1
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("wire_format", ["lodestar", "confluent"])
def test_a_server_killed_after_appending_events_publishes_each_once(tmp_path: Path, kafka_bootstrap, wire_format):
    prefix = unique_name("pecrash") + "."
    env = {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": kafka_bootstrap, "LODESTAR_KAFKA_PREFIX": prefix,
           "LODESTAR_KAFKA_SESSION_TIMEOUT_MS": "6000", "LODESTAR_KAFKA_WIRE_FORMAT": wire_format}
    log = KafkaEventLog(kafka_bootstrap, prefix)
    try:
        dying = ServeProcess(tmp_path / "data", {**env, "LODESTAR_CRASH_AT": "platform-events-after-append"}).start()
        dying.client().propose([mcp(urn, "globalTags", {"tags": [{"tag": "urn:li:tag:PII"}]}) for urn in URNS])
        assert dying.wait(120) == 137  # right after its first append of events
        assert sum(log.end_offset(topics.PLATFORM_EVENT, p) for p in range(log.partitions(topics.PLATFORM_EVENT)))

        with ServeProcess(tmp_path / "data", env) as restarted:
            ends = {p: log.end_offset(topics.MCL_VERSIONED, p) for p in range(log.partitions(topics.MCL_VERSIONED))}
            await_(lambda: all(log.committed(GROUP, topics.MCL_VERSIONED, p) >= end for p, end in ends.items()),
                   "the restarted publisher to commit every MCL", 120)
            seen = published(log, f"{restarted.url}/schema-registry/api")
        expected = Counter({(urn, category, operation, modifier): 1 for urn in URNS for category, operation, modifier
                            in (("LIFECYCLE", "CREATE", None), ("TAG", "ADD", "urn:li:tag:PII"))})
        assert seen == expected
    finally:
        log.close()
        drop_kafka_names(kafka_bootstrap, prefix)
