"""Platform events on the embedded log: the EntityChangeEvents of GMS's MCLs on PlatformEvent_v1,
Confluent-framed PlatformEvents whose schema is in Lodestar's registry; each once, in order per
entity, however often a batch is handled."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from gms.schema_registry import SchemaRegistry, store_reader
from gms.service import Gms
from ingest import topics
from ingest.eventlog import LogMessage, LogRecord
from mcl_processor.annotations import annotations_of
from mcl_processor.platform_events import GROUP, PlatformEventPublisher, platform_event_body, platform_event_schema
from schemas.confluent import ConfluentDecoder
from schemas.events import MCL
from tests.support.builders import dataset_urn, proposal
from tests.support.waiting import await_

ACTOR = "urn:li:corpuser:jdoe"
ORDERS, USERS = dataset_urn("orders"), dataset_urn("users")


@pytest.fixture
def gms(tmp_path):
    gms = Gms.embedded(tmp_path)
    yield gms
    gms.close()


def registry(gms: Gms) -> SchemaRegistry:
    return SchemaRegistry(lambda proposals, actor: gms.apply(proposals, actor), store_reader(gms.store))


def publisher(gms: Gms) -> PlatformEventPublisher:
    schemas = registry(gms)
    return PlatformEventPublisher(gms.log, lambda data: gms.codec.decode(data)[1],
                                  lambda subject, text: schemas.register(ACTOR, subject, text),
                                  annotations_of(gms.registry).key_aspects, prefix="lab.")


def published(gms: Gms) -> list[tuple[str, dict[str, Any]]]:
    """(record key, EntityChangeEvent) of every PlatformEvent on the log, in log order per partition."""
    schemas = registry(gms)
    decoder = ConfluentDecoder(lambda schema_id: schemas.schema(schema_id).schema)
    out = []
    for partition in range(gms.log.partitions(topics.PLATFORM_EVENT)):
        for record in gms.log.read(topics.PLATFORM_EVENT, partition, 0, 10_000):
            name, event = decoder.decode(record.value)
            assert name.endswith("PlatformEvent") and event["name"] == "entityChangeEvent"
            assert event["payload"]["contentType"] == "application/json"
            change = json.loads(event["payload"]["value"])
            assert event["header"]["timestampMillis"] == change["auditStamp"]["time"]
            out.append((record.key, change))
    return out


def mcl_records(gms: Gms) -> list[LogRecord]:
    return [r for p in range(gms.log.partitions(topics.MCL_VERSIONED))
            for r in gms.log.read(topics.MCL_VERSIONED, p, 0, 10_000)]


def changes(gms: Gms) -> None:
    tags = {"tags": [{"tag": "urn:li:tag:PII"}]}
    for result in gms.apply([proposal(ORDERS, "globalTags", tags), proposal(USERS, "globalTags", tags)], ACTOR):
        assert result.failure is None
    gms.apply([proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:Gold"}]})], ACTOR)
    gms.apply([proposal(ORDERS, "status", {"removed": True})], ACTOR)


EXPECTED_ORDERS = [("LIFECYCLE", "CREATE", None), ("TAG", "ADD", "urn:li:tag:PII"),
                   ("TAG", "REMOVE", "urn:li:tag:PII"), ("TAG", "ADD", "urn:li:tag:Gold"),
                   ("LIFECYCLE", "SOFT_DELETE", None)]


def of(found: list[tuple[str, dict[str, Any]]], urn: str) -> list[tuple[str, str, str | None]]:
    return [(e["category"], e["operation"], e.get("modifier")) for key, e in found if key == urn]


def test_the_events_of_each_mcl_in_order_per_entity_with_the_schema_registered(gms):
    changes(gms)
    publisher(gms).publish(mcl_records(gms))
    found = published(gms)
    assert of(found, ORDERS) == EXPECTED_ORDERS
    assert of(found, USERS) == [("LIFECYCLE", "CREATE", None), ("TAG", "ADD", "urn:li:tag:PII")]
    assert {e["auditStamp"]["actor"] for _, e in found} == {ACTOR}
    assert registry(gms).subjects() == ["lab.PlatformEvent_v1-value"]


def test_a_batch_handled_again_adds_nothing_and_a_partial_one_adds_only_what_was_missing(gms):
    changes(gms)
    records = mcl_records(gms)
    events = publisher(gms)
    events.publish(records[:3])
    events.publish(records)  # handled again after a crash: the first three MCLs' events are stored
    publisher(gms).publish(records)  # another process, after a rebalance
    found = published(gms)
    assert of(found, ORDERS) == EXPECTED_ORDERS
    assert len(found) == len(EXPECTED_ORDERS) + 2


def test_the_publisher_runs_as_its_own_group_and_commits_what_it_published(gms):
    changes(gms)
    stop = threading.Event()
    thread = threading.Thread(target=publisher(gms).run, args=(stop, 0.05))
    thread.start()
    try:
        ends = {p: gms.log.end_offset(topics.MCL_VERSIONED, p) for p in range(gms.log.partitions(topics.MCL_VERSIONED))}
        await_(lambda: all(gms.log.committed(GROUP, topics.MCL_VERSIONED, p) >= end for p, end in ends.items()),
               "the platform-events group to commit the MCLs")
        assert of(published(gms), ORDERS) == EXPECTED_ORDERS
    finally:
        stop.set()
        thread.join()


def test_unreadable_records_and_mcls_no_gms_writes_are_skipped(gms, caplog):
    changes(gms)
    odd = [{"entityUrn": None}, {"aspect": {"value": b"{not json", "contentType": "application/json"}},
           {"aspectName": "schemaMetadata", "aspect": {"value": b"[1, 2]", "contentType": "application/json"}}]
    gms.log.append(topics.MCL_VERSIONED, [LogMessage(ORDERS, b"\xc3\x01not an " + MCL.encode())] + [
        LogMessage(ORDERS, gms.codec.encode(MCL, mcl_record(**fields))) for fields in odd])
    publisher(gms).publish(mcl_records(gms))
    assert of(published(gms), ORDERS) == EXPECTED_ORDERS
    assert caplog.text.count("no platform events of the record") == 3  # the last odd one just says nothing


def mcl_record(**fields: Any) -> dict[str, Any]:
    """An MCL record of ORDERS with `fields` replaced."""
    return {"entityType": "dataset", "entityUrn": ORDERS, "entityKeyAspect": None, "changeType": "UPSERT",
            "aspectName": "globalTags", "aspect": None, "systemMetadata": None, "headers": None,
            "previousAspectValue": None, "previousSystemMetadata": None, "created": {"time": 1, "actor": ACTOR},
            **fields}



@pytest.mark.parametrize("timestamp", [0, 1, -1, 63, 64, -65, 1_700_000_000_000, 2**63 - 1, -2**63])
def test_a_platform_event_is_written_as_avro_writes_it_with_the_pinned_schema(timestamp):
    schema = parse_schema(json.loads(platform_event_schema()))
    for payload in (b"", b"x" * 127, b"y" * 128, b"z" * 20_000):  # lengths of one, two and three varint bytes
        out = io.BytesIO()
        schemaless_writer(out, schema, {"header": {"timestampMillis": timestamp}, "name": "entityChangeEvent",
                                        "payload": {"value": payload, "contentType": "application/json"}})
        assert platform_event_body(timestamp, payload) == out.getvalue()
