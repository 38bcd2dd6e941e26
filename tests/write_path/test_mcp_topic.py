"""Proposals through the MCP topic: applied by GMS's consumer, failures parked with their reason."""

from __future__ import annotations

import threading
import time

from gms.service import MCP_GROUP, Gms
from ingest import faults, topics
from ingest.eventlog import LogMessage
from schemas.events import default_codec
from tests.support.builders import dataset_urn, properties, proposal

URN = dataset_urn("topic.orders")


def consume_until_committed(gms: Gms, expected_offset: int) -> None:
    stop = threading.Event()
    consumer = threading.Thread(target=gms.consume_proposals, args=(stop, 0.05))
    consumer.start()
    deadline = time.monotonic() + 10
    try:
        while gms.log.committed(MCP_GROUP, topics.MCP, 0) < expected_offset:
            assert time.monotonic() < deadline, "the MCP consumer did not commit in time"
            time.sleep(0.01)
    finally:
        stop.set()
        consumer.join(5)


def test_queued_proposals_are_applied_and_failures_parked_with_their_reason(gms: Gms):
    gms.apply([proposal(URN, "status", {"removed": False})], "urn:li:corpuser:setup")
    gms.enqueue([proposal(URN, "datasetProperties", properties("queued")),
                 proposal(URN, "status", {"removed": True}, change="CREATE")], "urn:li:corpuser:queuer")
    gms.log.append(topics.MCP, [LogMessage(URN, b"not an event")])
    consume_until_committed(gms, 3)

    stored = gms.store.get(URN, "datasetProperties")
    assert stored.value["description"] == "queued"
    assert stored.system_metadata["aspectModified"]["actor"] == "urn:li:corpuser:queuer"
    codec = default_codec()
    failed = [codec.decode(r.value)[1] for r in gms.log.read(topics.FAILED_MCP)]
    assert [f["mcp"]["entityUrn"] for f in failed] == [URN, URN]
    assert failed[0]["error"].startswith("aspect_exists: CREATE: aspect status")
    assert failed[0]["mcp"]["aspectName"] == "status"
    assert failed[1]["error"].startswith("unreadable proposal: not Avro single-object encoded")
    assert gms.store.get(URN, "status").value == {"removed": False}


def test_a_restarted_consumer_resumes_after_the_committed_offset(tmp_path):
    first = Gms.embedded(tmp_path)
    first.enqueue([proposal(URN, "datasetProperties", properties("one"))], "urn:li:corpuser:a")
    consume_until_committed(first, 1)
    first.close()
    second = Gms.embedded(tmp_path)
    second.enqueue([proposal(URN, "datasetProperties", properties("two"))], "urn:li:corpuser:a")
    consume_until_committed(second, 2)
    assert [h.value["description"] for h in second.store.history(URN, "datasetProperties")] == ["one", "two"]
    second.close()


def test_a_failing_batch_pauses_the_consumer_which_then_applies_it_once(gms: Gms, monkeypatch, caplog):
    monkeypatch.setenv("LODESTAR_FAIL_AT", "mcp-before-commit")  # applied, then the commit fails once
    monkeypatch.setattr(faults, "_failed", set())
    gms.enqueue([proposal(URN, "datasetProperties", properties("once"))], "urn:li:corpuser:a")
    stop = threading.Event()
    consumer = threading.Thread(target=gms.consume_proposals, args=(stop, 0.05, 0.05))
    consumer.start()
    deadline = time.monotonic() + 10
    try:
        while gms.log.committed(MCP_GROUP, topics.MCP, 0) < 1:
            assert time.monotonic() < deadline, "the MCP consumer did not recover from the failure"
            time.sleep(0.01)
        assert consumer.is_alive()
    finally:
        stop.set()
        consumer.join(5)
    assert "injected failure at mcp-before-commit" in caplog.text
    assert [h.version for h in gms.store.history(URN, "datasetProperties")] == [1]  # read again: a noop
    assert gms.log.read(topics.FAILED_MCP) == []
