"""Rows per stage from the metrics Spark keeps anyway, so counting adds no work to the job.

Each sink writes under a job description of its own (`labelled`); afterwards the SQL executions
with that description give, from their plan's metrics, the rows the write command wrote and the
rows each scan read (`Scan csv`, `Scan parquet <table>`, ...). The runner attributes them to
stages: a sink's rows in are the rows written; a source's rows out those of the scan of its
path or table. `infer` carries counts along the DAG for the rest.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

ROWS = "number of output rows"
_DIGITS = re.compile(r"\D")


@dataclass(frozen=True)
class Scan:
    name: str  # e.g. "Scan csv ", "Scan parquet spark_catalog.default.t"
    description: str  # the scan's plan text (its location among it)
    rows: int


@dataclass
class WriteMetrics:
    """What the executions of one sink's write did: rows written, and the scans' rows read."""

    written: int | None
    scans: list[Scan]


@contextlib.contextmanager
def labelled(spark: Any, label: str) -> Iterator[None]:
    """Run the block's Spark work under the job description `label` (the previous one restored)."""
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(label)
    try:
        yield
    finally:
        sc.setJobDescription(previous)


def last_execution(spark: Any) -> int:
    """The id of the newest SQL execution Spark keeps (-1: none)."""
    store = spark._jsparkSession.sharedState().statusStore()
    count = store.executionsCount()
    return store.executionsList(count - 1, 1).apply(0).executionId() if count else -1


def write_metrics(spark: Any, labels: list[str], after: int, timeout_ms: int = 30_000) -> dict[str, WriteMetrics]:
    """The metrics of the SQL executions newer than `after` run under each label (once Spark's
    listeners have seen them end); only those newer executions are read."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(timeout_ms)
    store = spark._jsparkSession.sharedState().statusStore()
    out = {label: WriteMetrics(None, []) for label in labels}
    for execution in _newer(store, after):
        metrics = out.get(execution.description())
        if metrics is None:
            continue
        values = store.executionMetrics(execution.executionId())
        nodes = store.planGraph(execution.executionId()).allNodes()
        for j in range(nodes.size()):
            node = nodes.apply(j)
            rows = _rows(node, values)
            if rows is None:
                continue
            if node.name().startswith("Execute "):
                metrics.written = (metrics.written or 0) + rows
            elif node.name().startswith("Scan"):
                metrics.scans.append(Scan(node.name(), node.desc(), rows))
    return out


def _newer(store: Any, after: int, batch: int = 16) -> Iterator[Any]:
    """The executions with an id above `after`, newest first, read from the end in batches."""
    end = store.executionsCount()
    while end > 0:
        start = max(0, end - batch)
        executions = store.executionsList(start, end - start)
        for i in reversed(range(executions.size())):
            execution = executions.apply(i)
            if execution.executionId() <= after:
                return
            yield execution
        end = start


def _rows(node: Any, values: Any) -> int | None:
    found = node.metrics()
    for k in range(found.size()):
        metric = found.apply(k)
        if metric.name() == ROWS:
            value = values.get(metric.accumulatorId())
            if value.isDefined():
                return int(_DIGITS.sub("", value.get()) or 0)  # formatted, e.g. "1,000,000"
    return None


def infer(stages: list[str], inputs: Callable[[str], list[str]], outputs: Callable[[str], list[str]],
          keeps_rows: Callable[[str], bool], rows_in: dict[str, int | None], rows_out: dict[str, int | None]
          ) -> None:
    """Fill in the counts the known ones imply (in place): a stage's rows in are the sum of its
    inputs' rows out; between a stage with one output and a stage with one input, rows out are
    rows in; a stage that keeps rows (one record out per record in) has as many out as in."""
    changed = True
    while changed:
        changed = False

        def put(counts: dict[str, int | None], name: str, value: int | None) -> None:
            nonlocal changed
            if value is not None and counts[name] is None:
                counts[name] = value
                changed = True

        for name in stages:
            sources = inputs(name)
            if sources and all(rows_out[a] is not None for a in sources):
                put(rows_in, name, sum(rows_out[a] for a in sources))  # type: ignore[misc]
            if len(sources) == 1 and len(outputs(sources[0])) == 1:
                put(rows_out, sources[0], rows_in[name])
            if keeps_rows(name):
                put(rows_out, name, rows_in[name])
                put(rows_in, name, rows_out[name])


def scan_rows(scans: list[Scan], matches: Callable[[Scan], bool]) -> int | None:
    """The rows of the scans `matches` picks (the largest, when Spark scanned it more than once)."""
    found = [s.rows for s in scans if matches(s)]
    return max(found) if found else None


def merged(metrics: Mapping[str, WriteMetrics]) -> list[Scan]:
    return [scan for m in metrics.values() for scan in m.scans]
