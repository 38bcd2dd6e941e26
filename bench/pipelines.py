"""The pipeline runner's overhead: wall time of a pipeline run by the runner (validation, field
operations, row counts, the run recorded in Lodestar) against the same DataFrame code without
it, and the lineage recorded per run.

    .venv/bin/python -m bench.pipelines [--rows 1000000] [--rounds 6]

The pipeline: a CSV `File` source of `--rows` rows, a `Projection` (drop, convert, rename), a
`GroupByAggregate` (sum, count) and a parquet `File` sink, on local[2], against a `lodestar
serve` on the embedded stores. One warm-up of each, then `--rounds` rounds of one run of each,
alternating which goes first (so load that drifts weighs on both alike); the overhead is the
median of the rounds' ratios. The load average is printed before and after, and the time each
spends outside the sink's Spark job (the same plan for both), which is less noisy on a busy
machine. Target: < 5%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_emitter.pipeline import parse, run_pipeline
from tests.support.processes import TOKEN, ServeProcess

SCHEMA = "id long, customer string, amount string, note string"


def pipeline(source: Path, out: Path) -> dict:
    def stage(name: str, plugin: str, kind: str, **properties: str) -> dict:
        return {"name": name, "plugin": {"name": plugin, "type": kind, "properties": properties}}

    return {"name": "BenchPipeline", "stages": [
        stage("Orders", "File", "batchsource", referenceName="orders", path=str(source), format="csv", schema=SCHEMA),
        stage("Clean", "Projection", "transform", drop="note", convert="amount:double", rename="customer:cust"),
        stage("Totals", "GroupByAggregate", "batchaggregator", groupByFields="cust",
              aggregates="total:sum(amount),n:count(*)"),
        stage("Out", "File", "batchsink", referenceName="totals", path=str(out), format="parquet")],
        "connections": [{"from": "Orders", "to": "Clean"}, {"from": "Clean", "to": "Totals"},
                        {"from": "Totals", "to": "Out"}]}


def plain(spark: SparkSession, source: Path, out: Path) -> tuple[float, float]:
    """The same work as the pipeline, as DataFrame code: (seconds, of which the write's)."""
    started = time.perf_counter()
    df = spark.read.schema(SCHEMA).option("header", "false").option("sep", ",").format("csv").load(str(source))
    df = df.drop("note").select("id", F.col("customer").alias("cust"), F.col("amount").cast("double").alias("amount"))
    df = df.groupBy("cust").agg(F.sum("amount").alias("total"), F.count(F.lit(1)).alias("n"))
    writing = time.perf_counter()
    df.write.mode("overwrite").format("parquet").save(str(out))
    ended = time.perf_counter()
    return ended - started, ended - writing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ServeProcess(Path(tmp) / "lodestar") as lodestar:
        root = Path(tmp)
        spark = (SparkSession.builder.master("local[2]").appName("bench-pipelines")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            source = root / "orders.csv"
            spark.range(args.rows).select(F.col("id"), F.concat(F.lit("c"), (F.col("id") % 1000).cast("string")),
                                          (F.col("id") % 97 / 3).cast("string"), F.lit("x")) \
                .write.option("header", "false").csv(str(source))
            definition = parse(pipeline(source, root / "out-runner"))

            def runner() -> tuple[float, float, int]:
                started = time.perf_counter()
                result = run_pipeline(definition, spark, {}, server=lodestar.url, token=TOKEN)
                assert result.status == "SUCCEEDED", result.error
                assert result.stages[-1].rows_in is not None, "the sink's rows were not counted"
                return time.perf_counter() - started, result.stages[-1].seconds, len(result.operations)

            plain(spark, source, root / "out-plain")
            runner()
            load_before = os.getloadavg()
            plain_times, runner_times, plain_own, runner_own = [], [], [], []
            operations = 0
            for round_ in range(args.rounds):
                if round_ % 2:
                    seconds, sink, operations = runner()
                    total, write = plain(spark, source, root / "out-plain")
                else:
                    total, write = plain(spark, source, root / "out-plain")
                    seconds, sink, operations = runner()
                plain_times.append(total)
                plain_own.append(total - write)
                runner_times.append(seconds)
                runner_own.append(seconds - sink)
            load_after = os.getloadavg()
            a, b = statistics.median(plain_times), statistics.median(runner_times)
            ratio = statistics.median(r / p for p, r in zip(plain_times, runner_times, strict=True))
            print(f"rows: {args.rows:,}; rounds: {args.rounds}, alternating which runs first")
            print(f"load average (1, 5, 15 min): before {load_before[0]:.1f} {load_before[1]:.1f} "
                  f"{load_before[2]:.1f}, after {load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}")
            print(f"DataFrame code alone: median {a:.2f}s  ({', '.join(f'{t:.2f}' for t in plain_times)})")
            print(f"pipeline runner:      median {b:.2f}s  ({', '.join(f'{t:.2f}' for t in runner_times)})")
            print(f"overhead: {100 * (ratio - 1):+.1f}% (median of the rounds' ratios; target < 5%)")
            own_a, own_b = statistics.median(plain_own), statistics.median(runner_own)
            print(f"time outside the write's Spark job (the runner's: outside its sink stage): DataFrame code "
                  f"{own_a:.2f}s, runner {own_b:.2f}s (medians): the runner adds {own_b - own_a:+.2f}s, "
                  f"{100 * (own_b - own_a) / a:+.1f}% of the DataFrame code's median")
            print(f"lineage recorded per run: {operations} field operations, 1 run (STARTED, COMPLETE), "
                  "1 dataset read, 1 written")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
