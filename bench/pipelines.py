"""The pipeline runner's overhead: wall time of a pipeline run by the runner (validation, field
operations, row counts, the run recorded in Lodestar) against the same DataFrame code without
it, and the lineage recorded per run.

    .venv/bin/python -m bench.pipelines [--rows 1000000] [--rounds 3]

The pipeline: a CSV `File` source of `--rows` rows, a `Projection` (drop, convert, rename), a
`GroupByAggregate` (sum, count) and a parquet `File` sink, on local[2], against a `lodestar
serve` on the embedded stores. One warm-up of each, then `--rounds` rounds, each the plain code
then the runner (so load that drifts weighs on both alike). Target: overhead < 5%.
"""

from __future__ import annotations

import argparse
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


def plain(spark: SparkSession, source: Path, out: Path) -> float:
    """The same work as the pipeline, as DataFrame code."""
    started = time.perf_counter()
    df = spark.read.schema(SCHEMA).option("header", "false").option("sep", ",").format("csv").load(str(source))
    df = df.drop("note").select("id", F.col("customer").alias("cust"), F.col("amount").cast("double").alias("amount"))
    df = df.groupBy("cust").agg(F.sum("amount").alias("total"), F.count(F.lit(1)).alias("n"))
    df.write.mode("overwrite").format("parquet").save(str(out))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-counts", action="store_true", help="run without counting rows per stage")
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

            def runner() -> tuple[float, int]:
                started = time.perf_counter()
                result = run_pipeline(definition, spark, {}, server=lodestar.url, token=TOKEN,
                                      count_rows=not args.no_counts)
                assert result.status == "SUCCEEDED", result.error
                return time.perf_counter() - started, len(result.operations)

            plain(spark, source, root / "out-plain")
            runner()
            plain_times, runner_times = [], []
            operations = 0
            for _ in range(args.rounds):
                plain_times.append(plain(spark, source, root / "out-plain"))
                seconds, operations = runner()
                runner_times.append(seconds)
            a, b = statistics.median(plain_times), statistics.median(runner_times)
            print(f"rows: {args.rows:,}; rounds: {args.rounds} (medians)")
            print(f"DataFrame code alone: {a:.2f}s  ({', '.join(f'{t:.2f}' for t in plain_times)})")
            print(f"pipeline runner:      {b:.2f}s  ({', '.join(f'{t:.2f}' for t in runner_times)})")
            print(f"overhead: {100 * (b - a) / a:+.1f}% (target < 5%)")
            print(f"lineage recorded per run: {operations} field operations, 1 run (STARTED, COMPLETE), "
                  "1 dataset read, 1 written")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
