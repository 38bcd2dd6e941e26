"""The embedded event log: ordering, partitions, consumer offsets across restarts, idempotent producers,
and the Avro single-object encoding of events."""

from __future__ import annotations

import pytest

from ingest.eventlog import LogMessage, partition_for
from ingest.eventlog.sqlite import SqliteEventLog
from schemas.events import MCL, EventCodec, EventDecodeError, default_codec

TOPIC = "MetadataChangeLog_Versioned_v1"


def messages(*pairs: tuple[str, str]) -> list[LogMessage]:
    return [LogMessage(key, value.encode()) for key, value in pairs]


def test_messages_of_a_key_keep_their_order_across_partitions(tmp_path):
    log = SqliteEventLog(tmp_path / "log.db", partitions=4)
    keys = [f"urn:li:tag:t{i}" for i in range(8)]
    for round_ in range(3):
        log.append(TOPIC, messages(*[(key, f"{key}#{round_}") for key in keys]))
    consumer = log.consumer("g", [TOPIC])
    records = consumer.poll(100, timeout=0)
    assert len(records) == 24
    assert {r.partition for r in records} == {partition_for(k, 4) for k in keys}
    for key in keys:
        assert [r.value.decode() for r in records if r.key == key] == [f"{key}#{i}" for i in range(3)]
    for part in range(4):
        offsets = [r.offset for r in records if r.partition == part]
        assert offsets == list(range(len(offsets)))


def test_committed_offsets_survive_a_restart_and_uncommitted_records_are_read_again(tmp_path):
    log = SqliteEventLog(tmp_path / "log.db")
    log.append(TOPIC, messages(("a", "1"), ("a", "2"), ("a", "3")))
    consumer = log.consumer("g", [TOPIC])
    first = consumer.poll(2, timeout=0)
    consumer.commit(first[:1])
    log.close()
    reopened = SqliteEventLog(tmp_path / "log.db")
    again = reopened.consumer("g", [TOPIC]).poll(10, timeout=0)
    assert [r.value for r in again] == [b"2", b"3"]
    assert [r.value for r in reopened.consumer("other-group", [TOPIC]).poll(10, timeout=0)] == [b"1", b"2", b"3"]


def test_poll_waits_for_an_append(tmp_path):
    import threading

    log = SqliteEventLog(tmp_path / "log.db")
    consumer = log.consumer("g", [TOPIC])
    assert consumer.poll(10, timeout=0) == []
    timer = threading.Timer(0.05, lambda: log.append(TOPIC, messages(("k", "late"))))
    timer.start()
    assert [r.value for r in consumer.poll(10, timeout=5)] == [b"late"]
    timer.join()


def test_a_producer_resending_after_a_crash_adds_nothing_twice(tmp_path):
    log = SqliteEventLog(tmp_path / "log.db")
    batch = [LogMessage("k", b"v1", 1), LogMessage("k", b"v2", 2)]
    log.append(TOPIC, batch, producer="store-a")
    log.append(TOPIC, [*batch, LogMessage("k", b"v3", 3)], producer="store-a")
    log.append(TOPIC, [LogMessage("k", b"other", 1)], producer="store-b")
    assert [r.value for r in log.read(TOPIC)] == [b"v1", b"v2", b"v3", b"other"]


def test_events_round_trip_through_avro_single_object_encoding():
    codec = default_codec()
    record = {
        "entityType": "dataset", "entityUrn": "urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
        "changeType": "UPSERT", "aspectName": "status",
        "aspect": {"value": b'{"removed":false}', "contentType": "application/json"},
        "systemMetadata": {"lastObserved": 5, "runId": "r", "version": "2", "properties": {"a": "b"},
                           "aspectCreated": {"time": 1, "actor": "urn:li:corpuser:x"}},
        "headers": {"If-Version-Match": "1"}, "previousAspectValue": None,
        "previousSystemMetadata": {"lastObserved": 4, "runId": "r0", "version": "1"},
        "created": {"time": 7, "actor": "urn:li:corpuser:x"},
    }
    data = codec.encode(MCL, record)
    assert data[:2] == b"\xc3\x01"
    type_name, decoded = codec.decode(data)
    assert type_name == MCL
    assert decoded["aspect"] == record["aspect"]
    assert decoded["systemMetadata"]["properties"] == {"a": "b"}
    assert decoded["systemMetadata"]["aspectCreated"]["actor"] == "urn:li:corpuser:x"
    assert decoded["previousSystemMetadata"]["version"] == "1"
    assert decoded["headers"] == {"If-Version-Match": "1"}
    assert decoded["entityKeyAspect"] is None and decoded["previousAspectValue"] is None


def test_compiled_encoder_writes_what_fastavro_writes():
    import io

    from fastavro import schemaless_writer

    codec = EventCodec()
    record = {"entityType": "tag", "entityUrn": "urn:li:tag:pii", "changeType": "DELETE", "aspectName": "tagKey",
              "aspect": None, "systemMetadata": {"lastObserved": 123456789012, "runId": "x" * 100},
              "created": {"time": -5, "actor": "a", "message": "m"}}
    ours = codec.encode(MCL, record)
    theirs = io.BytesIO()
    schemaless_writer(theirs, codec._current[MCL].schema, record)
    assert ours[10:] == theirs.getvalue()


@pytest.mark.parametrize(("data", "message"), [
    (b"{}", "missing C3 01 marker"),
    (b"\xc3\x01" + b"\x00" * 8 + b"x", "unknown writer schema fingerprint"),
])
def test_undecodable_events_are_reported(data, message):
    with pytest.raises(EventDecodeError, match=message):
        default_codec().decode(data)


def test_truncated_event_body_is_reported():
    data = default_codec().encode(MCL, {"entityType": "tag", "entityUrn": "urn:li:tag:x", "changeType": "UPSERT"})
    with pytest.raises(EventDecodeError, match="corrupt"):
        default_codec().decode(data[:12])
