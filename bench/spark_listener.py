"""The Spark listener's cost: time on Spark's listener thread per write action (median, p95) and
the whole job's wall time without and with the listener, in one run; with each plan reader.

    .venv/bin/python -m bench.spark_listener [--actions 200] [--burners N]

The job: `--actions` small write actions (a join of two in-memory tables, a filter, a
concat and a sum, written as parquet), on local[2], against a `lodestar serve` on the embedded
stores. First a warm-up of 20 actions (JIT), then the job in ROUNDS rounds, each a block without
the listener, a block with one attached (its plan reader compiled in the driver JVM: one Py4J
round trip per action) and a block with one reading plans over Py4J a fact at a time (the reader
of a JVM without javac), so load that drifts during the run weighs on all alike; a block's time
ends when its last write returns; closing the listener (until Lodestar has applied everything)
is reported apart. With `--burners N`, N CPU-burning neighbour processes spin during the whole
run (the busy machine of the listener's targets: median under 10 ms, p95 under 30 ms per write
action).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.burners import cpu_burners
from spark_emitter import attach
from spark_emitter.capture_py4j import Py4jPlanReader
from tests.support.processes import TOKEN, ServeProcess

WARM_UP = 20
ROUNDS = 4


def job(spark: SparkSession, out: Path, actions: int, tag: str) -> float:
    """Seconds for `actions` writes."""
    orders, regions = spark.table("orders"), spark.table("regions")
    started = time.perf_counter()
    for i in range(actions):
        orders.join(regions, "k").filter(F.col("v") > i % 3) \
            .select(F.concat_ws("-", "name", "region").alias("label"), "v") \
            .groupBy("label").agg(F.sum("v").alias("total")) \
            .write.mode("overwrite").parquet(str(out / f"{tag}-{i}"))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=200)
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning neighbour processes during the run")
    args = parser.parse_args()
    with cpu_burners(args.burners), tempfile.TemporaryDirectory() as tmp, \
            ServeProcess(Path(tmp) / "lodestar") as lodestar:
        out = Path(tmp) / "out"
        spark = (SparkSession.builder.master("local[2]").appName("bench-spark-listener")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            spark.createDataFrame([(i, f"n{i % 7}", i * 3) for i in range(50)], "k long, name string, v long") \
                .createOrReplaceTempView("orders")
            spark.createDataFrame([(i, f"r{i % 3}") for i in range(50)], "k long, region string") \
                .createOrReplaceTempView("regions")
            job(spark, out, WARM_UP, "warm")
            without, flush = 0.0, 0.0
            readers = {"compiled": _Reader(), "py4j": _Reader()}
            block = args.actions // ROUNDS
            for round_ in range(ROUNDS):
                without += job(spark, out, block, f"plain{round_}")
                for name, reader in readers.items():
                    listener = attach(spark, server=lodestar.url, token=TOKEN, queue_size=block + 10)
                    if name == "py4j":
                        listener.plan_reader.close()
                        listener.plan_reader = Py4jPlanReader(spark.sparkContext._jvm)
                    reader.seconds += job(spark, out, block, f"{name}{round_}")
                    flush_started = time.perf_counter()
                    assert listener.close(300), "the listener did not deliver within 300 s"
                    flush += time.perf_counter() - flush_started
                    assert listener.counts.failed == listener.counts.dropped == 0, listener.counts
                    reader.costs.extend(listener.callback_ms)
        finally:
            spark.stop()
    actions = block * ROUNDS
    print(f"job: {actions} write actions per block kind (join, filter, concat, sum -> parquet), local[2],"
          f" lodestar serve (SQLite), {args.burners} CPU burner(s) beside")
    print(f"job time without listener: {without:.2f} s ({without / actions * 1000:.1f} ms/action)")
    for name, reader in readers.items():
        costs = sorted(reader.costs)
        p95 = costs[min(len(costs) - 1, int(len(costs) * 0.95))]
        print(f"{name:>8} plan reader: callback median {statistics.median(costs):.1f} ms, p95 {p95:.1f} ms"
              f" ({len(costs)} actions, all delivered); job {reader.seconds:.2f} s"
              f" ({(reader.seconds / without - 1) * 100:+.1f} % over no listener)")
    print("   (targets: median < 10 ms, p95 < 30 ms)"
          f"   closing the listeners (delivering what was queued) took {flush:.2f} s in all")


@dataclass
class _Reader:
    """One plan reader's callback times and job seconds over the run."""

    costs: list[float] = field(default_factory=list)
    seconds: float = 0.0

if __name__ == "__main__":
    main()
