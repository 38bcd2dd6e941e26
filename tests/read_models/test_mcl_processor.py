"""The MCL processor end to end: a real embedded GMS writes real MCLs to the real event log and
the processor consumes them into the real read models.

`tests/contracts/read_models.py` holds what every adapter set passes (duplicate and late MCLs
change nothing), run here on each; the other tests run on the embedded SQLite read models:
crashes, poison records, restore, check, waiting for indexing."""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from pathlib import Path

import pytest

from gms.service import Gms
from ingest import topics
from ingest.backends.errors import BackendUnavailable
from ingest.eventlog import LogMessage, LogRecord
from ingest.proposal import Proposal
from mcl_processor import processor as processor_module
from mcl_processor import restore as restore_module
from mcl_processor import workers
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import GROUP, TOPICS, MclProcessor
from mcl_processor.readmodels_db import FILE_NAME
from schemas.events import MCL, default_codec
from schemas.projection import projection
from schemas.registry import default_registry, load_named_types
from tests.contracts.read_models import AGG, CLEAN, RAW, ReadModelsContract, answers, sample
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import ACTOR, Indexed
from tests.support.readmodels import OnOpenSearch, OnSqlite, OnTheDistributedStack


@pytest.fixture
def indexed(tmp_path: Path):
    harness = Indexed(tmp_path / "data")
    yield harness
    harness.close()


def test_written_metadata_becomes_searchable_and_traceable(indexed):
    sample(indexed)
    assert indexed.names("orders")[0] == "orders"
    assert [h.urn for h in indexed.search.query("tags:pii").hits] == [CLEAN]
    graph = indexed.lineage.query(AGG, "upstream", 5).to_json()
    assert {n["urn"]: n["hops"] for n in graph["nodes"]} == {AGG: 0, CLEAN: 1, RAW: 2}
    assert [p["rowCount"] for p in indexed.models.timeseries.query(AGG, "datasetProfile")] == [10, 12]


def test_a_crash_between_indexing_and_offset_commit_replays_to_the_same_state(tmp_path):
    crashed, clean = Indexed(tmp_path / "crashed"), Indexed(tmp_path / "clean")
    for harness in (crashed, clean):
        harness.gms.apply([p for p in sample_proposals()], ACTOR)
    clean.index()
    script = ("import sys, threading; from pathlib import Path; from gms.service import Gms;"
              "from mcl_processor.embedded import SqliteReadModels; from mcl_processor.processor import MclProcessor;"
              "d = Path(sys.argv[1]); g = Gms.embedded(d);"
              "MclProcessor(g.registry, g.codec, SqliteReadModels.in_data_dir(d)).run(g.log, threading.Event())")
    env = {**os.environ, "LODESTAR_CRASH_AT": "mcl-after-write"}
    died = subprocess.run([sys.executable, "-c", script, str(crashed.data_dir)], env=env, timeout=60,
                          capture_output=True)
    assert died.returncode == 137, died.stderr
    log = crashed.gms.log
    assert all(log.committed(GROUP, t, 0) == 0 for t in TOPICS)  # indexed, but not committed
    crashed.reopen_models()
    assert crashed.search.query("*").total == 3  # the batch reached the read models
    assert crashed.index() > 0  # the restarted consumer gets the whole batch again
    urns = [RAW, CLEAN, AGG]
    assert answers(crashed, urns) == answers(clean, urns)
    crashed.close()
    clean.close()


def sample_proposals() -> list[Proposal]:
    return [
        proposal(RAW, "datasetProperties", {"name": "raw_orders"}),
        proposal(CLEAN, "datasetProperties", {"name": "orders", "customProperties": {"tier": "gold"}}),
        proposal(CLEAN, "upstreamLineage", {"upstreams": [{"dataset": RAW, "type": "COPY"}]}),
        proposal(AGG, "upstreamLineage", {"upstreams": [{"dataset": CLEAN, "type": "COPY"}]}),
        proposal(AGG, "datasetProfile", {"timestampMillis": 5, "rowCount": 1}),
    ]


def test_the_projection_reads_what_a_full_decode_reads(indexed):
    sample(indexed)
    named = load_named_types()
    project = projection(named[MCL], named, {"entityUrn": True, "systemMetadata": {"version": True, "properties": True},
                                             "created": True})
    for record in indexed.gms.log.read(topics.MCL_VERSIONED, limit=100):
        full = indexed.gms.codec.decode(record.value)[1]
        assert project(record.value[10:]) == {
            "entityUrn": full["entityUrn"], "created": full["created"],
            "systemMetadata": {"version": full["systemMetadata"]["version"],
                               "properties": full["systemMetadata"]["properties"]}}

    everything = projection(named[MCL], named, {f["name"]: True for f in named[MCL]["fields"]})
    for record in indexed.gms.log.read(topics.MCL_VERSIONED, limit=100):
        assert everything(record.value[10:]) == indexed.gms.codec.decode(record.value)[1]


def test_poison_records_are_logged_with_their_offset_and_skipped(indexed, caplog):
    codec = indexed.gms.codec
    unknown_aspect = codec.encode(MCL, {
        "entityType": "dataset", "entityUrn": CLEAN, "entityKeyAspect": None, "changeType": "UPSERT",
        "aspectName": "noSuchAspect", "aspect": {"value": b"{}", "contentType": "application/json"},
        "systemMetadata": None, "headers": None, "previousAspectValue": None, "previousSystemMetadata": None,
        "created": None})
    bad_json = codec.encode(MCL, {
        "entityType": "dataset", "entityUrn": CLEAN, "entityKeyAspect": None, "changeType": "UPSERT",
        "aspectName": "globalTags", "aspect": {"value": b"{not json", "contentType": "application/json"},
        "systemMetadata": {"version": "9"}, "headers": None, "previousAspectValue": None,
        "previousSystemMetadata": None, "created": None})
    indexed.gms.log.append(topics.MCL_VERSIONED, [LogMessage(CLEAN, b"\x00garbage"), LogMessage(CLEAN, unknown_aspect),
                                                  LogMessage(CLEAN, bad_json)])
    with caplog.at_level(logging.WARNING, logger="mcl_processor.processor"):
        indexed.write(proposal(CLEAN, "datasetProperties", {"name": "orders"}))
    assert indexed.processor.skipped == 3
    assert [r.message.split(":")[0] for r in caplog.records if r.name == "mcl_processor.processor"] == [
        f"skipping MCL at {topics.MCL_VERSIONED}/0@{offset}" for offset in (0, 1, 2)]
    assert indexed.names("orders") == ["orders"]
    assert indexed.gms.log.committed(GROUP, topics.MCL_VERSIONED, 0) == 5


def test_the_consumer_thread_indexes_and_callers_can_wait_for_it(tmp_path):
    gms = Gms.embedded(tmp_path)
    models = SqliteReadModels.in_data_dir(tmp_path)
    processor = MclProcessor(gms.registry, gms.codec, models)
    stop = threading.Event()
    thread = threading.Thread(target=processor.run, args=(gms.log, stop), kwargs={"poll_timeout": 0.05})
    thread.start()
    try:
        for i in range(5):
            gms.apply([proposal(dataset_urn(f"db.t{i}"), "datasetProperties", {"name": f"table {i}"})], ACTOR)
            assert processor.wait_until_caught_up(gms.log, timeout=10)
            assert models.search.query(f'"table {i}"').total == 1  # read your writes
        assert processor.wait_until_caught_up(gms.log, timeout=0)  # nothing new: true at once
    finally:
        stop.set()
        thread.join(10)
    assert gms.log.committed(GROUP, topics.MCL_VERSIONED, 0) == 10  # 5 key aspects + 5 properties
    gms.apply([proposal(dataset_urn("db.late"), "datasetProperties", {"name": "late"})], ACTOR)
    assert not processor.wait_until_caught_up(gms.log, timeout=0.05)  # nobody is indexing
    models.close()
    gms.close()


@pytest.mark.parametrize("workers", [0, 1])
def test_the_consumer_thread_decodes_big_batches_in_worker_processes_to_the_same_answers(tmp_path, monkeypatch,
                                                                                        workers):
    monkeypatch.setattr(processor_module, "POOLED", 2)  # every batch of two or more goes to the workers
    inline, pooled = Indexed(tmp_path / "inline"), Indexed(tmp_path / "pooled")
    for harness in (inline, pooled):
        harness.gms.log.append(topics.MCL_VERSIONED, [LogMessage(CLEAN, b"\x00garbage")])
        harness.gms.apply(sample_proposals(), ACTOR)
    inline.index()
    stop = threading.Event()
    thread = threading.Thread(target=pooled.processor.run, args=(pooled.gms.log, stop),
                              kwargs={"poll_timeout": 0.05, "max_records": 3, "workers": workers})
    thread.start()
    try:
        assert pooled.processor.wait_until_caught_up(pooled.gms.log, timeout=30)
    finally:
        stop.set()
        thread.join(30)
    assert pooled.processor.skipped == inline.processor.skipped == 1
    assert answers(pooled, [RAW, CLEAN, AGG]) == answers(inline, [RAW, CLEAN, AGG])
    assert pooled.names("orders")[0] == "orders"
    for harness in (inline, pooled):
        harness.close()


def test_the_writer_joins_the_batches_decoded_by_the_time_it_takes_the_first():
    def batch(offsets: range, done: bool) -> tuple[list[LogRecord], Future]:
        records = [LogRecord(topics.MCL_VERSIONED, 0, offset, "k", b"", 0) for offset in offsets]
        decoding: Future = Future()
        if done:
            decoding.set_result([f"decoded {offset}" for offset in offsets])
        return records, decoding

    pending = deque([batch(range(0, 2), True), batch(range(2, 4), True), batch(range(4, 6), True),
                     batch(range(6, 8), False)])
    records, decoded = processor_module._ready(pending, 2)
    assert [r.offset for r in records] == [0, 1, 2, 3] and decoded == [f"decoded {i}" for i in range(4)]
    records, decoded = processor_module._ready(pending, 2)  # the next is still being decoded: not waited for
    assert [r.offset for r in records] == [4, 5] and decoded == ["decoded 4", "decoded 5"]
    assert [r.offset for r in pending[0][0]] == [6, 7]


@pytest.mark.parametrize("page", [None, 3], ids=["one page", "pages of 3, 2 a transaction"])
def test_restore_after_wiping_the_read_models_gives_the_same_answers(indexed, monkeypatch, page):
    if page:
        monkeypatch.setattr(restore_module, "BATCH", page)
        monkeypatch.setattr(restore_module, "PAGES_PER_TRANSACTION", 2)
    urns = sample(indexed)
    indexed.write(proposal(RAW, "status", {"removed": True}),
                  proposal(CLEAN, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}, {"tag": "urn:li:tag:gold"}]}))
    before = answers(indexed, urns)
    indexed.models.close()
    for path in indexed.data_dir.glob(f"{FILE_NAME}*"):
        path.unlink()
    indexed.reopen_models()
    assert indexed.search.query("*").total == 0
    progress: list[int] = []
    restored = indexed.processor.restore(indexed.gms.store, progress=progress.append, timeseries_log=indexed.gms.log)
    assert restored == progress[-1] == 10 + 2  # 10 live aspects, 2 profile points
    if page:  # progress after each page of 3 (every entity of the sample exists)
        assert progress[:3] == [3, 6, 9] and progress[3] == 10
    assert answers(indexed, urns) == before
    assert indexed.processor.check(indexed.gms.store).ok


def test_restore_can_be_limited_to_urns_and_an_aspect(indexed):
    sample(indexed)
    indexed.models.clear()
    assert indexed.processor.restore(indexed.gms.store, urn_like="%db.orders%", aspect="upstreamLineage") == 2
    assert indexed.search.query("*").total == 2  # documents with only their upstreams
    assert indexed.lineage.query(AGG, "upstream", 5).to_json()["edges"][0]["source"] == CLEAN
    assert indexed.search.query("orders").total == 0  # names come from datasetProperties, not restored


def test_check_reports_every_planted_divergence(indexed):
    sample(indexed)
    assert indexed.processor.check(indexed.gms.store).ok
    db = sqlite3.connect(indexed.data_dir / FILE_NAME)
    with db:
        db.execute("DELETE FROM search_versions WHERE aspect = 'globalTags'")  # a lost MCL
        node = "(SELECT id FROM lineage_nodes WHERE urn = ?)"
        db.execute(f"UPDATE lineage_versions SET version = 7 WHERE node = {node}", (AGG,))  # a stale version
        db.execute(f"DELETE FROM lineage_edges WHERE owner = {node}", (CLEAN,))  # a lost edge
        db.execute("INSERT INTO search_docs (urn, entity_type, live) VALUES ('urn:li:tag:ghost', 'tag', 1)")
    db.close()
    report = indexed.processor.check(indexed.gms.store)
    assert not report.ok
    assert dict(report.counts) == {("search", "missing"): 1, ("lineage", "stale"): 1, ("lineage", "content"): 1,
                                   ("search", "extra"): 1}
    found = {(d.model, d.kind, d.urn, d.aspect) for d in report.examples}
    assert ("search", "missing", CLEAN, "globalTags") in found
    assert ("search", "extra", "urn:li:tag:ghost", None) in found
    assert report.to_json()["differences"] == 4
    indexed.processor.restore(indexed.gms.store)  # repairs what is missing or damaged, never goes back
    assert dict(indexed.processor.check(indexed.gms.store).counts) == {("lineage", "stale"): 1, ("search", "extra"): 1}
    indexed.models.clear()
    indexed.processor.restore(indexed.gms.store)
    assert indexed.processor.check(indexed.gms.store).ok


class TestReadModelsOnSqlite(OnSqlite, ReadModelsContract):
    pass


class TestReadModelsOnOpenSearch(OnOpenSearch, ReadModelsContract):
    pass


class TestReadModelsOnTheDistributedStack(OnTheDistributedStack, ReadModelsContract):
    def test_a_search_write_that_fails_fails_the_batch_and_the_batch_applied_again_completes_it(
            self, indexed, monkeypatch):
        indexed.gms.apply(sample_proposals(), ACTOR)
        records = indexed.gms.log.read(topics.MCL_VERSIONED, limit=100)

        def unavailable(batch):
            raise BackendUnavailable("OpenSearch did not answer")

        with monkeypatch.context() as patched:
            patched.setattr(indexed.models.search, "apply", unavailable)
            with pytest.raises(BackendUnavailable, match="OpenSearch did not answer"):
                indexed.processor.process(records)
        assert indexed.search.query("*").total == 0
        upstream = {n["urn"] for n in indexed.lineage.query(AGG, "upstream", 5).to_json()["nodes"]}
        assert upstream == {AGG, CLEAN, RAW}  # Cassandra's writes were made meanwhile, each model's its own
        indexed.processor.process(records)  # as the processor does, from the offsets it committed
        assert indexed.names("orders")[0] == "orders"
        assert [h.urn for h in indexed.search.query("tier:gold").hits] == [CLEAN]


def test_worker_processes_do_not_outlive_a_killed_processor(tmp_path):
    script = ("import os, sys, time; from mcl_processor import workers; from mcl_processor.decode import MclDecoder;"
              "from schemas.events import default_codec; from schemas.registry import default_registry;"
              "pool = workers.pool(MclDecoder(default_registry(), default_codec()), None, 1);"
              "print(pool.submit(os.getpid).result(), flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    parent.kill()  # as SIGKILL would end a crashed processor: no clean shutdown of its pool
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(worker):
        assert time.monotonic() < deadline, f"worker {worker} outlived its parent"
        time.sleep(0.01)


FINALIZED: list[str] = []


class _Witness:
    def __del__(self) -> None:
        FINALIZED.append("witness")


def _collect_and_report() -> list[str]:
    gc.collect()
    return FINALIZED


def test_worker_processes_never_collect_the_garbage_they_inherit():
    """Garbage of the parent may hold SQLite connections whose finalizers would take a mutex
    another parent thread held at the fork: a forked worker must leave it alone."""
    pool = workers.pool(MclDecoder(default_registry(), default_codec()), None, 1)
    gc.disable()  # the witness stays uncollected garbage until the worker is forked
    try:
        witness = _Witness()
        witness.cycle = witness
        del witness
        assert pool.submit(_collect_and_report).result() == []
    finally:
        gc.enable()
        pool.shutdown()
    gc.collect()
    assert FINALIZED == ["witness"]  # the parent collects it


class _CollectorProbe:
    """A decoder that says whether the cyclic garbage collector runs while it decodes."""

    def decode(self, value: bytes) -> bool:
        return gc.isenabled()

    def detach(self) -> None:
        """(A worker's decoder is told to look nothing up.)"""


def test_worker_processes_pause_the_collector_while_they_decode():
    pool = workers.pool(_CollectorProbe(), None, 1)
    try:
        assert pool.submit(workers.decode_in_worker, [b"mcl"]).result() == [False]
        assert pool.submit(gc.isenabled).result() is True  # and only meanwhile
    finally:
        pool.shutdown()


def test_a_workers_batches_leave_nothing_frozen_behind(indexed):
    """A worker freezes what its batch leaves alive rather than let the collector scan it: a
    batch must then make no garbage cycles (a poison record's exception is kept without the
    frames holding the batch), or the frozen garbage would grow by a batch's worth each time."""
    indexed.gms.log.append(topics.MCL_VERSIONED, [LogMessage(CLEAN, b"garbage")])
    indexed.gms.apply(sample_proposals(), ACTOR)
    values = [record.value for record in indexed.gms.log.read(topics.MCL_VERSIONED, limit=100)]
    pool = workers.pool(MclDecoder(default_registry(), default_codec()), indexed.models.preparer(), 1)
    try:
        frozen = []
        for _ in range(5):
            decoded = pool.submit(workers.decode_in_worker, values).result()
            frozen.append(pool.submit(gc.get_freeze_count).result())
        assert isinstance(decoded[0], PoisonRecord) and len(decoded) == len(values)
        assert frozen[2:] == [frozen[1]] * 3, frozen  # the first batches fill the readers' caches, once
    finally:
        pool.shutdown()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie is dead, waiting to be reaped
