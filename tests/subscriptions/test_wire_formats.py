"""An MCL topic on real Kafka written in Lodestar's format, then in DataHub's schema and Confluent's
framing, then in Lodestar's again (GMS restarted with another `kafka.wire_format`): every reader
reads all of it in order, telling the records apart by their first byte: the subscription SDK
(with and without a registry to ask), `lodestar tail`, the MCL processor, and `lodestar replay`."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.eventlog import partition_for
from ingest.eventlog.kafka import KafkaEventLog
from ingest.subscribe import subscribe
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import GROUP, MclProcessor
from tests.contracts.subscription import take
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, proposal
from tests.support.processes import LODESTAR
from tests.support.waiting import await_

ORDERS = dataset_urn("wire.orders")
ACTOR = "urn:li:corpuser:wire"
FORMATS = ("lodestar", "confluent", "lodestar")  # one GMS after the other, each writing two versions


@pytest.fixture
def mixed(tmp_path: Path, kafka_bootstrap: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A data directory whose MCL topics hold versions 1-2 in Lodestar's format, 3-4 in
    Confluent's (with a timeseries point), 5-6 in Lodestar's again; and the CLI's environment."""
    prefix = unique_name("wire") + "-"
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    for number, wire_format in enumerate(FORMATS):
        gms = Gms(SqliteAspectStore(data_dir / "lodestar.db"), KafkaEventLog(kafka_bootstrap, prefix, timeout=30),
                  wire_format=wire_format)
        try:
            for version in (2 * number + 1, 2 * number + 2):
                gms.apply([proposal(ORDERS, "datasetProperties", {"description": f"v{version}"})], ACTOR)
            if wire_format == "confluent":
                gms.apply([proposal(ORDERS, "datasetProfile", {"timestampMillis": 1_000, "rowCount": 7})], ACTOR)
        finally:
            gms.close()
    yield data_dir, {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": kafka_bootstrap,
                     "LODESTAR_KAFKA_PREFIX": prefix}
    drop_kafka_names(kafka_bootstrap, prefix)


def open_gms(data_dir: Path, env: dict[str, str]) -> Gms:
    return Gms(SqliteAspectStore(data_dir / "lodestar.db"),
               KafkaEventLog(env["LODESTAR_KAFKA_BOOTSTRAP"], env["LODESTAR_KAFKA_PREFIX"], timeout=30))


def test_the_topic_holds_both_formats_in_turn(mixed):
    gms = open_gms(*mixed)
    try:
        part = partition_for(ORDERS, gms.log.partitions(topics.MCL_VERSIONED))
        firsts = [r.value[0] for r in gms.log.read(topics.MCL_VERSIONED, part) if r.key == ORDERS]
    finally:
        gms.close()
    assert firsts[:1] == [0xC3] and 0 in firsts and firsts[-1] == 0xC3  # datasetKey, then as listed
    runs = [byte for i, byte in enumerate(firsts) if i == 0 or firsts[i - 1] != byte]
    assert runs == [0xC3, 0, 0xC3]


@pytest.mark.parametrize("registry", ["guessed", "the store's"])
def test_a_subscription_reads_every_version_in_order(mixed, registry):
    gms = open_gms(*mixed)
    options = {"schema_registry": gms.schema_text} if registry == "the store's" else {}
    try:
        with subscribe(gms.log, "reader", start="earliest", handle_signals=False, poll_timeout=0.2,
                       aspects=["datasetProperties", "datasetProfile"], **options) as changes:
            found = take(changes, 7)
    finally:
        gms.close()
    props = [(c.version, c.value["description"], (c.previous_value or {}).get("description"))
             for c in found if c.aspect == "datasetProperties"]
    assert props == [(n, f"v{n}", f"v{n - 1}" if n > 1 else None) for n in range(1, 7)]
    (point,) = [c for c in found if c.aspect == "datasetProfile"]
    assert point.value == {"timestampMillis": 1_000, "rowCount": 7} and point.created["actor"] == ACTOR


def test_lodestar_tail_prints_every_change_of_both_formats(mixed):
    data_dir, env = mixed
    proc = subprocess.Popen([*LODESTAR, "tail", "--data-dir", str(data_dir), "--from", "earliest", "--json",
                             "--aspect", "datasetProperties"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env, "LODESTAR_KAFKA_WIRE_FORMAT": "confluent"})
    try:
        lines = [json.loads(proc.stdout.readline() or "null") for _ in range(6)]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert None not in lines, err
    assert [(line["version"], line["aspect"]["description"]) for line in lines] == \
        [(n, f"v{n}") for n in range(1, 7)]
    assert "Traceback" not in err and "skipping" not in err


def test_the_mcl_processor_and_a_replay_index_both_formats(mixed):
    data_dir, env = mixed
    gms = open_gms(data_dir, env)
    models = SqliteReadModels.in_data_dir(data_dir, gms.registry)
    processor = MclProcessor(gms.registry, gms.mcl_reader, models)
    stop = threading.Event()
    worker = threading.Thread(target=processor.run, args=(gms.log, stop, 0.2, 10_000, 0))
    worker.start()
    try:
        await_(lambda: models.search.query("v6").total == 1, "the last version indexed", timeout=60)
        await_(lambda: models.timeseries.query(ORDERS, "datasetProfile"), "the point indexed", timeout=60)
    finally:
        stop.set()
        worker.join(30)
    assert processor.skipped == 0
    assert gms.log.committed(GROUP, topics.MCL_VERSIONED, partition_for(
        ORDERS, gms.log.partitions(topics.MCL_VERSIONED))) > 0
    models.clear()
    gms.close()
    assert models.search.query("v6").total == 0
    done = subprocess.run([*LODESTAR, "replay", "--data-dir", str(data_dir), "--topic", "versioned"],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert models.search.query("v6").total == 1
    models.close()
