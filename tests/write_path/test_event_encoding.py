"""The generated Avro encoder (schemas/avro_binary.py) keeps the encodings of strings and longs
it made: a record written from kept encodings, from fresh ones, and after the store of them
started over is the same bytes, and the codec (fastavro) reads each back as written."""

from __future__ import annotations

from schemas import avro_binary
from schemas.events import MCL, EventCodec

CODEC = EventCodec()


def record(i: int) -> dict:
    stamp = {"time": 1_700_000_000_000 + i, "actor": f"urn:li:corpuser:u{i % 3}", "impersonator": None,
             "message": None}
    return {
        "entityType": "dataset", "entityUrn": f"urn:li:dataset:(urn:li:dataPlatform:hive,t{i},PROD)",
        "entityKeyAspect": None, "changeType": "UPSERT", "aspectName": "status",
        "aspect": {"value": b'{"removed":false}' * (i % 9), "contentType": "application/json"},
        "systemMetadata": {"lastObserved": -i, "runId": "r\u00e9" * (i % 70), "lastRunId": None,
                           "pipelineName": None, "registryName": None, "registryVersion": None,
                           "properties": {"k": str(i)} if i % 2 else None, "version": str(i),
                           "aspectCreated": stamp, "aspectModified": stamp},
        "headers": {"h": "v"} if i % 5 == 0 else None, "previousAspectValue": None,
        "previousSystemMetadata": None, "created": stamp,
    }


def decoded(data: bytes) -> dict:
    _, value = CODEC.decode(data)
    return value


def test_kept_fresh_and_restarted_encodings_are_the_same_bytes(monkeypatch):
    monkeypatch.setattr(avro_binary, "CACHED", 50)  # the stores start over many times below
    records = [record(i) for i in range(300)]
    first = [CODEC.encode(MCL, r) for r in records]  # mostly made and kept
    again = [CODEC.encode(MCL, r) for r in records]  # from kept ones, where they still are
    avro_binary._LONGS.clear()
    avro_binary._STRINGS.clear()
    fresh = [CODEC.encode(MCL, r) for r in reversed(records)][::-1]
    assert first == again == fresh
    assert len(avro_binary._STRINGS) <= 50 and len(avro_binary._LONGS) <= 50
    for r, data in zip(records, first, strict=True):
        read = decoded(data)
        assert read["entityUrn"] == r["entityUrn"] and read["aspect"] == r["aspect"]
        assert read["systemMetadata"]["runId"] == r["systemMetadata"]["runId"]
        assert read["systemMetadata"]["lastObserved"] == r["systemMetadata"]["lastObserved"]
        assert read["created"] == r["created"] and read["headers"] == r["headers"]



def test_long_strings_are_written_but_not_kept():
    long_run, short_run = "r" * (avro_binary.CACHED_LENGTH + 1), "r" * avro_binary.CACHED_LENGTH
    for run in (long_run, short_run):
        value = record(1)
        value["systemMetadata"] = {**value["systemMetadata"], "runId": run}
        assert decoded(CODEC.encode(MCL, value))["systemMetadata"]["runId"] == run
    assert long_run not in avro_binary._STRINGS and short_run in avro_binary._STRINGS
