"""Hostile records on the real Kafka MCP topic, and query injection against the OpenSearch search
adapter: every bad record lands on the FailedMCP topic with a reason, stores nothing, and does not
stop the consumer (the good record behind them is applied); every query answers or is refused with
a ValueError (400 over REST), whatever it holds."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import ACTOR_HEADER, MCP_GROUP, Gms, Limits
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.backends import Endpoints
from ingest.eventlog import LogMessage
from ingest.eventlog.kafka import KafkaEventLog
from mcl_processor.distributed import DistributedReadModels
from schemas.events import FAILED_MCP, MCP, default_codec
from schemas.registry import default_registry
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, properties, proposal
from tests.support.hostile import HOSTILE_TEXT
from tests.support.scratch_keyspace import ScratchKeyspace

GOOD = dataset_urn("kafka.good")
LIMITS = Limits(max_aspect_bytes=64 * 1024)


@pytest.fixture
def kafka_gms(tmp_path: Path, endpoints: Endpoints, kafka_bootstrap: str) -> Iterator[Gms]:
    """GMS on a SQLite store and the real Kafka (topics under a prefix of the test's own)."""
    prefix = unique_name("hostile") + "."
    log = KafkaEventLog.from_endpoints(endpoints, prefix=prefix)
    gms = Gms(SqliteAspectStore(tmp_path / "aspects.db"), log, limits=LIMITS)
    try:
        yield gms
    finally:
        gms.close()
        drop_kafka_names(kafka_bootstrap, prefix)


def mcp_bytes(urn: str, aspect: str, value_bytes: bytes, change: str = "UPSERT") -> bytes:
    record = {**proposal(urn, "status", {"removed": False}).to_record(), "changeType": change, "aspectName": aspect,
              "aspect": {"value": value_bytes, "contentType": "application/json"},
              "headers": {ACTOR_HEADER: "urn:li:corpuser:hostile"}}
    return default_codec().encode(MCP, record)


def hostile_records() -> dict[str, bytes]:
    codec = default_codec()
    urn = dataset_urn("kafka.bad")
    good_body = mcp_bytes(urn, "datasetProperties", json.dumps(properties("x")).encode())
    other = codec.encode(FAILED_MCP, {"mcp": proposal(urn, "status", {"removed": True}).to_record(), "error": "x"})
    return {
        "not Avro": b"not an event at all",
        "JSON, not Avro": json.dumps(proposal(urn, "status", {"removed": True}).to_json()).encode(),
        "empty": b"",
        "unknown writer schema": b"\xc3\x01" + bytes(8) + good_body[10:],
        "truncated body": good_body[:len(good_body) // 2],
        "another event type (a FailedMCP)": other,
        "aspect value not JSON": mcp_bytes(urn, "datasetProperties", b"{not json"),
        "aspect value a lone surrogate": mcp_bytes(urn, "datasetProperties", b'{"description": "\\ud800"}'),
        "aspect value nested 5000 deep": mcp_bytes(urn, "datasetProperties", b"[" * 5000 + b"]" * 5000),
        "huge string": mcp_bytes(urn, "datasetProperties", json.dumps(properties("x" * 70_000)).encode()),
        "huge array": mcp_bytes(urn, "globalTags", json.dumps({"tags": [{"tag": f"urn:li:tag:t{i}"}
                                                                         for i in range(5000)]}).encode()),
        "URN injection": mcp_bytes("urn:li:dataset:(urn:li:dataPlatform:hive,a),b,PROD)", "datasetProperties",
                                   b"{}"),
        "a patch that is no JSON Patch": mcp_bytes(urn, "datasetProperties", b'[{"op": "explode"}]', change="PATCH"),
        "unknown aspect": mcp_bytes(urn, "../../etc/passwd", b"{}"),
    }


def test_hostile_records_on_the_mcp_topic_are_parked_with_a_reason_and_the_consumer_goes_on(kafka_gms: Gms):
    bad = hostile_records()
    messages = [LogMessage(dataset_urn("kafka.bad"), value) for value in bad.values()]
    good = mcp_bytes(GOOD, "datasetProperties", json.dumps(properties("after the garbage")).encode())
    kafka_gms.log.append(topics.MCP, [*messages, LogMessage(GOOD, good)])
    end = sum(kafka_gms.log.end_offset(topics.MCP, p) for p in range(kafka_gms.log.partitions(topics.MCP)))

    stop = threading.Event()
    consumer = threading.Thread(target=kafka_gms.consume_proposals, args=(stop, 0.1), daemon=True)
    consumer.start()
    deadline = time.monotonic() + 60
    try:
        while sum(kafka_gms.log.committed(MCP_GROUP, topics.MCP, p)
                  for p in range(kafka_gms.log.partitions(topics.MCP))) < end:
            assert consumer.is_alive() and time.monotonic() < deadline, "the consumer did not get past the records"
            time.sleep(0.05)  # polling the committed offsets, with a deadline
    finally:
        stop.set()
        consumer.join(10)

    assert kafka_gms.store.get(GOOD, "datasetProperties").value["description"] == "after the garbage"
    assert kafka_gms.store.entity(dataset_urn("kafka.bad")) == []  # nothing of the bad records
    codec = default_codec()
    failed = [codec.decode(r.value)[1] for p in range(kafka_gms.log.partitions(topics.FAILED_MCP))
              for r in kafka_gms.log.read(topics.FAILED_MCP, p, 0, 1000)]
    assert len(failed) == len(bad)
    assert all(f["error"] and ":" in f["error"] for f in failed), failed
    reasons = " | ".join(f["error"] for f in failed)
    for expected in ("unreadable proposal", "not a com.linkedin.mxe.MetadataChangeProposal", "too_large",
                     "invalid_urn", "unknown_aspect"):
        assert expected in reasons, reasons


@pytest.fixture
def opensearch_models(endpoints: Endpoints, cassandra_endpoints: Endpoints, opensearch_url: str
                      ) -> Iterator[DistributedReadModels]:
    keyspace = ScratchKeyspace(endpoints)
    try:
        models = DistributedReadModels.connect(endpoints, default_registry(), keyspace=keyspace.name,
                                               index_prefix=unique_name("hostile"))
        try:
            yield models
        finally:
            models.search.drop()
            models.timeseries.drop()
            models.close()
    finally:
        keyspace.drop()


def test_opensearch_search_and_autocomplete_answer_or_refuse_injection_attempts(opensearch_models):
    search = opensearch_models.search
    for text in [*HOSTILE_TEXT, '{"query": {"match_all": {}}}', "*", "?", "/.*/", "a~10000", "a^1e308",
                 "_id:*", "tags:*) OR (*", 'name:"x" OR _exists_:urn', "schema:" + "x" * 10_000]:
        for sort in ("relevance", "name"):
            try:
                result = search.query(text, None, 0, 10, False, sort, None)
            except ValueError:
                continue
            assert result.total == 0 and result.hits == []  # the index is empty: nothing can leak in
        search.autocomplete(text, 10)
