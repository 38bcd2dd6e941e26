"""A PySpark session with the Lodestar listener attached, against a real `lodestar serve`, and
helpers to read back what was recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ingest.rest import LodestarError, RestClient
from spark_emitter.capture import NESTED_WRITE
from spark_emitter.capture_compiled import CompiledPlanReader
from spark_emitter.capture_py4j import Py4jPlanReader
from spark_emitter.urns import dataset_urn, field_urn

WAIT = 60.0


@contextmanager
def spark_session(warehouse: Path, **lodestar_conf: str) -> Iterator[Any]:
    """A local SparkSession (one core, one shuffle partition, no UI), stopped afterwards. Its
    `spark.lodestar.*` settings are exactly `lodestar_conf`: none leaks from a session before."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("lodestar-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
             .config("spark.sql.warehouse.dir", str(warehouse))
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for key, _ in spark.sparkContext.getConf().getAll():
        if key.startswith("spark.lodestar."):
            spark.conf.unset(key)
    for key, value in lodestar_conf.items():
        spark.conf.set(key, value)
    try:
        yield spark
    finally:
        spark.stop()


def files(path: Path) -> str:
    """The dataset URN of files at a local path."""
    return dataset_urn("file", str(path), "PROD")


def local(name: str) -> str:
    """The dataset URN of an in-memory DataFrame read through the temp view `name`."""
    return dataset_urn("spark", f"lodestar-test.{name}", "PROD")


def table(name: str) -> str:
    return dataset_urn("hive", f"default.{name}", "PROD")


def fine(target: str, column: str, upstreams: list[tuple[str, str]], operation: str) -> dict[str, Any]:
    """A fineGrainedLineages entry: `column` of `target` from (dataset, field) upstreams."""
    return {"upstreamType": "FIELD_SET", "upstreams": sorted(field_urn(d, f) for d, f in upstreams),
            "downstreamType": "FIELD", "downstreams": [field_urn(target, column)], "transformOperation": operation}


def control(label: str, upstreams: list[tuple[str, str]]) -> dict[str, Any]:
    """A fineGrainedLineages entry of columns used only to filter, join or group."""
    return {"upstreamType": "FIELD_SET", "upstreams": sorted(field_urn(d, f) for d, f in upstreams),
            "downstreamType": "FIELD_SET", "transformOperation": label}


class Recorded:
    """Reads what Lodestar recorded."""

    def __init__(self, client: RestClient):
        self.client = client

    def aspect(self, urn: str, aspect: str) -> Any:
        try:
            return self.client.aspect(urn, aspect)["value"]
        except LodestarError as err:
            if err.status == 404:
                return None
            raise

    def lineage(self, urn: str) -> tuple[list[str], list[dict[str, Any]]]:
        """(upstream datasets, fine-grained entries sorted) of a dataset."""
        value = self.aspect(urn, "upstreamLineage")
        assert value is not None, f"no upstreamLineage on {urn}"
        entries = [{k: v for k, v in e.items() if v is not None} for e in value.get("fineGrainedLineages") or []]
        return sorted(u["dataset"] for u in value["upstreams"]), sorted(entries, key=_entry_key)

    def schema(self, urn: str) -> list[tuple[str, str]]:
        value = self.aspect(urn, "schemaMetadata")
        assert value is not None, f"no schemaMetadata on {urn}"
        return [(f["fieldPath"], f["nativeDataType"]) for f in value["fields"]]

    def runs_producing(self, target: str, count: int = 1) -> list[str]:
        """The runs whose output is `target`, from the lineage graph once `count` are indexed."""
        path = f"/v1/lineage?urn={quote(target, safe='')}&direction=upstream&maxHops=1"
        return self._await(lambda: sorted(n["urn"] for n in self.client.call("GET", path)["nodes"]
                                          if n["entityType"] == "dataProcessInstance"), count)

    def run_events(self, run: str, count: int = 2) -> list[dict[str, Any]]:
        """The run's events once `count` are indexed."""
        path = f"/v1/timeseries/{quote(run, safe='')}/dataProcessInstanceRunEvent"
        return self._await(lambda: self.client.call("GET", path)["points"], count)

    @staticmethod
    def _await(read: Any, count: int) -> list[Any]:
        deadline = time.monotonic() + WAIT
        while True:
            found = read()
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=_entry_key)


def _entry_key(entry: dict[str, Any]) -> tuple:
    return (entry.get("downstreams") or [""], entry.get("transformOperation") or "", entry.get("upstreams") or [])


class PythonQueryListener:
    """A QueryExecutionListener written in Python (through Py4J's callback server), registered on
    `spark` by `listen`; subclasses implement onSuccess and onFailure."""

    def listen(self, spark: Any) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(spark.sparkContext._gateway)
        spark._jsparkSession.listenerManager().register(self)

    def equals(self, other: Any) -> bool:
        return self is other

    def hashCode(self) -> int:  # noqa: N802 (Java's name)
        return id(self) & 0x7FFFFFFF

    def toString(self) -> str:  # noqa: N802
        return f"{type(self).__name__}-{id(self)}"

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


class BothPlanReaders(PythonQueryListener):
    """A second QueryExecutionListener on a session: reads each finished write with the compiled
    reader and the Py4J reader, and keeps where they differ. The relations' facts are compared
    where the Py4J reader has them (it reads only those the JSON leaves out; the compiled one,
    every file, JDBC and V2 relation)."""

    def __init__(self, spark: Any):
        sc = spark.sparkContext
        self.compiled = CompiledPlanReader(sc._jvm, sc._gateway, spark._jsparkSession.getClass().getClassLoader())
        self.py4j = Py4jPlanReader(sc._jvm)
        self.compared = 0
        self.differences: list[Any] = []
        self.listen(spark)

    def onSuccess(self, func: str, qe: Any, duration_ns: int) -> None:  # noqa: N802 (Java's name)
        self._compare(func, qe)

    def onFailure(self, func: str, qe: Any, exception: Any) -> None:  # noqa: N802
        self._compare(func, qe)

    def _compare(self, func: str, qe: Any) -> None:
        if func == NESTED_WRITE:
            return
        try:
            compiled, plain = (None if pending is None else pending.result()
                               for pending in (self.compiled.start(qe), self.py4j.start(qe)))
        except Exception as err:  # (the JVM calls this: an exception would only be logged there)
            self.differences.append(repr(err))
            return
        if compiled is None and plain is None:
            return
        self.compared += 1
        if compiled is None or plain is None or not plain.relations.keys() <= compiled.relations.keys():
            self.differences.append((compiled, plain))
            return
        compiled.relations = {expr_id: compiled.relations[expr_id] for expr_id in plain.relations}
        if compiled != plain:
            self.differences.append((compiled, plain))

    def close(self) -> None:
        self.compiled.close()
        self.py4j.close()
