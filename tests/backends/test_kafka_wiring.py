"""GMS and the MCL processor on the Kafka event log: the aspect store's outbox relay publishes
MCLs to Kafka, the processor indexes them as group "mcl-processor", and proposals enqueued on
the MCP topic are applied by GMS's consumer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.backends import Endpoints
from ingest.eventlog.kafka import KafkaEventLog
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, proposal

ACTOR = "urn:li:corpuser:tester"
WAIT = 30.0


@pytest.fixture
def node(tmp_path: Path, endpoints: Endpoints, kafka_bootstrap: str) -> Iterator[tuple[Gms, MclProcessor]]:
    """GMS on a SQLite store (MCLs through the outbox) and Kafka, with the processor and the MCP
    consumer running in threads."""
    prefix = unique_name("wiring") + "-"
    log = KafkaEventLog.from_endpoints(endpoints, prefix=prefix, session_timeout_ms=6000, timeout=WAIT)
    gms = Gms(SqliteAspectStore(tmp_path / "lodestar.db"), log)
    models = SqliteReadModels.in_data_dir(tmp_path, gms.registry)
    processor = MclProcessor(gms.registry, gms.codec, models)
    stop = threading.Event()
    threads = [threading.Thread(target=processor.run, args=(log, stop, 0.1), daemon=True),
               threading.Thread(target=gms.consume_proposals, args=(stop, 0.1), daemon=True)]
    for thread in threads:
        thread.start()
    yield gms, processor
    stop.set()
    for thread in threads:
        thread.join(WAIT)
    models.close()
    gms.close()
    drop_kafka_names(kafka_bootstrap, prefix)


def test_written_and_enqueued_metadata_is_indexed_through_kafka(node):
    gms, processor = node
    orders, raw = dataset_urn("db.orders"), dataset_urn("db.raw")
    (result,) = gms.apply([proposal(orders, "datasetProperties", {"name": "orders"})], ACTOR)
    assert result.failure is None
    assert gms.store.pending_outbox(10) == []  # relayed to Kafka
    assert processor.wait_until_caught_up(gms.log, WAIT)
    assert [hit.urn for hit in processor.read_models.search.query("orders").hits] == [orders]
    gms.enqueue([proposal(raw, "datasetProperties", {"name": "raw_orders"})], ACTOR)

    # The MCP consumer applies the enqueued proposal in its own time; then its MCL is indexed.
    assert eventually(lambda: bool(gms.store.entity(raw)) and processor.wait_until_caught_up(gms.log, WAIT))
    assert {hit.urn for hit in processor.read_models.search.query("orders").hits} == {orders, raw}


def eventually(condition: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Whether condition becomes true within timeout seconds (checked every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
