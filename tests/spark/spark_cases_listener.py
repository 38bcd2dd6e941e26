"""The listener's delivery and life cycle with real PySpark jobs: Lodestar down or slow (the job
goes on; events fail or are dropped and counted), Kafka to the MCP topic, settings from Spark
conf, close (application run ended, listener detached), what cannot be attached, and its plan
reader compiled in the driver JVM (or, when that fails, the Py4J one)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from ingest import topics
from ingest.eventlog.kafka import KafkaEventLog
from ingest.proposal import Proposal
from schemas.events import default_codec
from spark_emitter import ListenerError, attach, capture_compiled
from spark_emitter.capture_compiled import CLASS_NAME, CompiledPlanReader, compiled
from spark_emitter.capture_py4j import Py4jPlanReader
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.processes import TOKEN, ServeProcess
from tests.support.server import free_port
from tests.support.spark_harness import PythonQueryListener, Recorded, files, spark_session


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with spark_session(tmp_path_factory.mktemp("warehouse")) as session:
        yield session


def _write(spark: Any, path: Path) -> None:
    spark.createDataFrame([(1, "a")], "k long, s string").write.parquet(str(path))


def test_lodestar_down_the_job_goes_on_and_failures_are_counted(spark: Any, tmp_path: Path) -> None:
    listener = attach(spark, server=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    try:
        _write(spark, tmp_path / "a")
        _write(spark, tmp_path / "b")
        assert listener.flush(30)
        assert (listener.counts.delivered, listener.counts.failed, listener.counts.dropped) == (0, 3, 0)
    finally:
        listener.close(5)


def test_lodestar_slow_a_full_queue_drops_and_counts(spark: Any, tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        listener = attach(spark, server=f"http://127.0.0.1:{silent.getsockname()[1]}", queue_size=1, timeout=60)
        try:
            started = time.monotonic()
            for name in ("a", "b", "c"):  # the worker waits on the application's start; one write waits in the queue
                _write(spark, tmp_path / name)
            assert time.monotonic() - started < 60, "the writes waited for Lodestar"
            assert not listener.flush(0.5)
            assert (listener.counts.dropped, listener.counts.delivered) == (2, 0)
        finally:
            assert not listener.close(0.5)


def test_settings_from_spark_conf_close_records_the_end_and_detaches(
        spark: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    with ServeProcess(tmp_path_factory.mktemp("lodestar")) as lodestar:
        conf = {"spark.lodestar.server": lodestar.url, "spark.lodestar.token": TOKEN, "spark.lodestar.env": "DEV"}
        for key, value in conf.items():
            spark.conf.set(key, value)
        try:
            listener = attach(spark)
        finally:
            for key in conf:
                spark.conf.unset(key)
        _write(spark, tmp_path / "recorded")
        assert listener.close(30)
        assert listener.counts.delivered == 3  # application start, the write, application end
        manager = spark._jsparkSession.listenerManager()
        assert all(not registered.toString().startswith("LodestarListener") for registered in manager.listListeners())
        _write(spark, tmp_path / "after_close")  # not recorded

        recorded = Recorded(lodestar.client())
        target = files(tmp_path / "recorded").replace(",PROD)", ",DEV)")  # spark.lodestar.env
        assert recorded.schema(target) == [("k", "long"), ("s", "string")]
        assert recorded.aspect(files(tmp_path / "after_close").replace(",PROD)", ",DEV)"), "schemaMetadata") is None
        app_run = f"urn:li:dataProcessInstance:{spark.sparkContext.applicationId}"
        started, ended = recorded.run_events(app_run)
        assert (started["status"], ended["status"], ended["result"]["type"]) == ("STARTED", "COMPLETE", "SUCCESS")


def test_a_failed_write_action_fails_the_application_run(
        spark: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    def refuse(value: int) -> int:
        raise ValueError(f"refused {value}")

    with ServeProcess(tmp_path_factory.mktemp("lodestar")) as lodestar:
        listener = attach(spark, server=lodestar.url, token=TOKEN)
        _write(spark, tmp_path / "fine")
        with pytest.raises(Exception, match="refused"):
            spark.range(1).select(F.udf(refuse, "long")("id").alias("x")).write.parquet(str(tmp_path / "refused"))
        assert listener.close(30)
        assert (listener.counts.delivered, listener.failed_actions) == (4, 1)  # start, two writes, end
        recorded = Recorded(lodestar.client())
        (fine_run,) = recorded.runs_producing(files(tmp_path / "fine"))
        assert recorded.run_events(fine_run)[1]["result"]["type"] == "SUCCESS"
        app_run = f"urn:li:dataProcessInstance:{spark.sparkContext.applicationId}"
        started, ended = recorded.run_events(app_run)
        assert (started["status"], ended["status"]) == ("STARTED", "COMPLETE")
        assert ended["result"] == {"type": "FAILURE", "nativeResultType": "spark"}


def test_kafka_appends_the_proposals_to_the_mcp_topic(spark: Any, tmp_path: Path, kafka_bootstrap: str) -> None:
    prefix = unique_name("spark") + "."
    listener = attach(spark, kafka_bootstrap=kafka_bootstrap, kafka_prefix=prefix)
    log = KafkaEventLog(kafka_bootstrap, prefix)
    try:
        _write(spark, tmp_path / "kafka")
        assert listener.close(60)
        assert listener.counts.delivered == 3 and listener.counts.failed == 0
        proposals: list[Proposal] = []
        for partition in range(log.partitions(topics.MCP)):
            for record in log.read(topics.MCP, partition, 0, 10_000):
                proposals.append(Proposal.from_record(default_codec().decode(record.value)[1]))
        target = files(tmp_path / "kafka")
        lineage = [p for p in proposals if p.entity_urn == target and p.aspect_name == "upstreamLineage"]
        assert len(lineage) == 1
        assert [u["dataset"] for u in lineage[0].value["upstreams"]] == [
            f"urn:li:dataset:(urn:li:dataPlatform:spark,lodestar-test.local_{_digest('k,s')},PROD)"]
        assert all(p.headers["X-Lodestar-Actor"] == "urn:li:corpuser:spark" for p in proposals)
    finally:
        listener.close(5)
        log.close()
        drop_kafka_names(kafka_bootstrap, prefix)


def test_what_cannot_be_attached(spark: Any) -> None:
    class ConnectSession:  # a Spark Connect session has no JVM session behind it
        conf: dict[str, str] = {}

    with pytest.raises(ListenerError, match="Spark Connect sessions are not supported"):
        attach(ConnectSession())
    with pytest.raises(ListenerError, match=r"set spark.lodestar.server \(REST\) or spark.lodestar.kafka.bootstrap"):
        attach(spark)
    with pytest.raises(ListenerError, match=r"spark.lodestar.queueSize: 'many' is not an int"):
        attach(spark, server="http://127.0.0.1:1", queue_size="many")
    with pytest.raises(ListenerError, match="unknown setting"):
        attach(spark, server="http://127.0.0.1:1", servre="x")


def test_the_plan_reader_is_compiled_into_the_cache_once_per_source_spark_and_java_version(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sc = spark.sparkContext
    built = compiled(sc._jvm, sc._gateway)
    assert built.parent == tmp_path / "lodestar" / "spark"
    class_file = built / (CLASS_NAME.replace(".", "/") + ".class")
    assert class_file.read_bytes()[:4] == b"\xca\xfe\xba\xbe"  # a class file
    built_at = class_file.stat().st_mtime_ns
    assert compiled(sc._jvm, sc._gateway) == built and class_file.stat().st_mtime_ns == built_at  # not again
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # nothing left of the build


def test_a_plan_reader_that_cannot_be_built_leaves_the_py4j_reader_recording_the_same(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(capture_compiled, "_LOADED", {})  # as in a process that never loaded it
    (tmp_path / "not-a-directory").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-directory"))
    with ServeProcess(tmp_path / "lodestar") as lodestar:
        listener = attach(spark, server=lodestar.url, token=TOKEN)
        try:
            assert isinstance(listener.plan_reader, Py4jPlanReader)
            assert "reading plans with a Py4J call per fact" in caplog.text
            _write(spark, tmp_path / "out")
            assert listener.flush(60) and listener.counts.delivered == 2  # the application's start, the write
            assert Recorded(lodestar.client()).runs_producing(files(tmp_path / "out"))
        finally:
            listener.close(30)
    monkeypatch.undo()
    with ServeProcess(tmp_path / "again") as lodestar:
        listener = attach(spark, server=lodestar.url, token=TOKEN)
        assert isinstance(listener.plan_reader, CompiledPlanReader)
        listener.close(30)


def _digest(columns: str) -> str:
    import hashlib

    return hashlib.sha1(columns.encode()).hexdigest()[:8]


class _Starting(PythonQueryListener):
    """A second listener: starts reading each finished action with `reader` and keeps the pending
    plans, to take them later as the listener's worker would."""

    def __init__(self, spark: Any, reader: CompiledPlanReader):
        self.reader, self.pending = reader, []
        self.listen(spark)

    def onSuccess(self, func: str, qe: Any, duration_ns: int) -> None:  # noqa: N802 (Java's name)
        pending = self.reader.start(qe)
        if pending is not None:
            self.pending.append(pending)

    def onFailure(self, func: str, qe: Any, exception: Any) -> None:  # noqa: N802
        pass


def test_the_compiled_reader_reads_later_on_its_own_thread_and_leaves_no_file(spark: Any, tmp_path: Path) -> None:
    sc = spark.sparkContext
    reader = CompiledPlanReader(sc._jvm, sc._gateway, spark._jsparkSession.getClass().getClassLoader())
    starting = _Starting(spark, reader)
    try:
        for name in ("a", "b", "c"):
            _write(spark, tmp_path / name)
        assert spark.range(3).count() == 3  # not a write: nothing to read
        sc._jsc.sc().listenerBus().waitUntilEmpty(60_000)
        first, second, third = starting.pending
        second.discard()  # as when the listener's queue is full
        plans = [first.result(), third.result()]  # the capture thread wrote them in turn, the discarded one too
        assert [(plan.command, Path(plan.write["path"]).name) for plan in plans] == [
            ("InsertIntoHadoopFsRelationCommand", "a"), ("InsertIntoHadoopFsRelationCommand", "c")]
        assert plans[0].execution_id < plans[1].execution_id
        assert list(reader.directory.iterdir()) == []  # taken files are removed, and the discarded one's
    finally:
        spark._jsparkSession.listenerManager().unregister(starting)
        reader.close()
    assert not reader.directory.exists()
