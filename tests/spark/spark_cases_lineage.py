"""Real PySpark jobs with the listener attached, against a real `lodestar serve`: the recorded
runs, datasets, schemas, dataset lineage and column lineage of each kind of plan.

One SparkSession and one Lodestar serve the whole module (starting Spark costs seconds); every
test writes targets of its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from spark_emitter import LodestarListener, attach
from spark_emitter.capture_compiled import CompiledPlanReader
from spark_emitter.urns import dataset_urn
from tests.support.processes import TOKEN, ServeProcess
from tests.support.spark_harness import (
    BothPlanReaders,
    Recorded,
    control,
    files,
    fine,
    local,
    sorted_entries,
    spark_session,
    table,
)

FLOW = "urn:li:dataFlow:(spark,lodestar-test,PROD)"
JOB = f"urn:li:dataJob:({FLOW},nightly)"
ORDERS, REGIONS = local("orders"), local("regions")


@dataclass
class Job:
    spark: Any
    listener: LodestarListener
    root: Path
    recorded: Recorded
    readers: BothPlanReaders
    delivered: int = 0
    compared: int = 0

    def flush(self, actions: int) -> None:
        """Wait until the listener delivered; `actions` writes must have been recorded since the last
        flush, and both plan readers must have read each of them alike."""
        assert self.listener.flush(60)
        assert self.listener.counts.delivered - self.delivered == actions
        assert self.listener.counts.failed == 0 and self.listener.counts.dropped == 0
        self.delivered = self.listener.counts.delivered
        assert self.readers.differences == []
        assert self.readers.compared - self.compared == actions
        self.compared = self.readers.compared

    @property
    def app_run(self) -> str:
        return f"urn:li:dataProcessInstance:{self.spark.sparkContext.applicationId}"


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    with ServeProcess(tmp_path_factory.mktemp("lodestar")) as lodestar:
        root = tmp_path_factory.mktemp("spark")
        conf = {"spark.lodestar.server": lodestar.url, "spark.lodestar.token": TOKEN, "spark.lodestar.job": "nightly"}
        with spark_session(root / "warehouse", **conf) as spark:
            listener = attach(spark)
            assert isinstance(listener.plan_reader, CompiledPlanReader)  # javac is there
            spark.createDataFrame([(1, "ann", 10), (2, "bob", 20), (3, "cy", 5)], "k long, name string, v long") \
                .createOrReplaceTempView("orders")
            spark.createDataFrame([(1, "north"), (2, "south")], "k long, region string") \
                .createOrReplaceTempView("regions")
            job = Job(spark, listener, root, Recorded(lodestar.client()), BothPlanReaders(spark))
            assert listener.flush(60) and listener.counts.delivered == 1  # the application's start
            job.delivered = 1
            yield job
            listener.close(30)
            job.readers.close()


def test_seed_pipeline_read_parse_concat_create_id_write(job: Job) -> None:
    """File -> Parser -> Name-Concatenator -> IdGenerator -> Store, as the field-lineage design draws it."""
    source_path, target_path = job.root / "customers.csv", job.root / "store"
    source_path.write_text("John,Smith,31,Santa Clara,CA\nJane,Doe,40,Austin,TX\n")

    def create_id(name: str) -> str:
        return name.replace(" ", "") + "007"

    body = job.spark.read.schema("body string").option("sep", "\t").csv(str(source_path))
    parts = F.split("body", ",")
    parsed = body.select(parts[0].alias("first_name"), parts[1].alias("last_name"), parts[2].cast("int").alias("age"),
                         parts[3].alias("city"), parts[4].alias("state"))
    named = parsed.withColumn("name", F.concat_ws(" ", "first_name", "last_name")).drop("first_name", "last_name")
    named.withColumn("id", F.udf(create_id, "string")("name")).select("id", "name", "age", "city", "state") \
        .write.parquet(str(target_path))
    job.flush(1)

    source, target = files(source_path), files(target_path)
    rec = job.recorded
    assert rec.schema(source) == [("body", "string")]
    assert rec.schema(target) == [("id", "string"), ("name", "string"), ("age", "integer"), ("city", "string"),
                                  ("state", "string")]
    assert rec.lineage(target) == ([source], sorted_entries([
        fine(target, "id", [(source, "body")], "split,concat_ws,create_id"),
        fine(target, "name", [(source, "body")], "split,concat_ws"),
        fine(target, "age", [(source, "body")], "cast"),
        fine(target, "city", [(source, "body")], "split"),
        fine(target, "state", [(source, "body")], "split"),
    ]))
    (run,) = rec.runs_producing(target)
    assert rec.aspect(run, "dataProcessInstanceInput") == {"inputs": [source]}
    assert rec.aspect(run, "dataProcessInstanceOutput") == {"outputs": [target]}
    assert rec.aspect(run, "dataProcessInstanceRelationships") == {
        "parentTemplate": JOB, "parentInstance": job.app_run, "upstreamInstances": []}
    properties = rec.aspect(run, "dataProcessInstanceProperties")
    assert properties["customProperties"]["command"] == "InsertIntoHadoopFsRelationCommand"
    assert properties["customProperties"]["target"] == target
    started, ended = rec.run_events(run)
    assert (started["status"], ended["status"], ended["result"]["type"]) == ("STARTED", "COMPLETE", "SUCCESS")
    assert started["timestampMillis"] <= ended["timestampMillis"]
    assert rec.aspect(FLOW, "dataFlowInfo")["name"] == "lodestar-test"
    assert rec.aspect(JOB, "dataJobInfo") == {"name": "nightly", "type": {"string": "spark"}, "flowUrn": FLOW}
    assert rec.aspect(job.app_run, "dataProcessInstanceRelationships")["parentTemplate"] == FLOW
    read = f"read {source_path}"

    def op(name: str, description: str, inputs: list[tuple[str, str]], outputs: list[str]) -> dict[str, Any]:
        return {"name": name, "description": description, "type": "TRANSFORM", "source": None, "destination": None,
                "inputs": [{"origin": o, "field": f} for o, f in inputs], "outputs": outputs}

    operations = rec.aspect(run, "fieldOperations")["operations"]
    assert sorted(operations, key=lambda o: o["name"]) == sorted([
        {"name": read, "description": f"read {source}", "type": "READ", "source": source, "destination": None,
         "inputs": [], "outputs": ["body"]},
        op("split first_name", "first_name = split(body)", [(read, "body")], ["first_name"]),
        op("split last_name", "last_name = split(body)", [(read, "body")], ["last_name"]),
        op("cast age", "age = cast(body)", [(read, "body")], ["age"]),
        op("split city", "city = split(body)", [(read, "body")], ["city"]),
        op("split state", "state = split(body)", [(read, "body")], ["state"]),
        op("concat_ws name", "name = concat_ws(first_name, last_name)",
           [("split first_name", "first_name"), ("split last_name", "last_name")], ["name"]),
        op("create_id id", "id = create_id(name)", [("concat_ws name", "name")], ["id"]),
        {"name": f"write {target_path}", "description": f"write {target}", "type": "WRITE", "source": None,
         "destination": target, "outputs": [], "inputs": [
             {"origin": "create_id id", "field": "id"}, {"origin": "concat_ws name", "field": "name"},
             {"origin": "cast age", "field": "age"}, {"origin": "split city", "field": "city"},
             {"origin": "split state", "field": "state"}]},
    ], key=lambda o: o["name"])
    # the field lineage read API walks it: id back to the file's body, from both aspects
    walk = rec.client.call("GET", "/v1/lineage/fields?urn=" + _quote(f"urn:li:schemaField:({target},id)")
                           + "&direction=upstream")
    body = f"urn:li:schemaField:({source},body)"
    assert sorted((e["source"], e["via"], e["type"]) for e in walk["edges"]) == [
        (body, "fieldOperations", "split first_name,split last_name,concat_ws name,create_id id"),
        (body, "upstreamLineage", "split,concat_ws,create_id")]


def test_join_group_by_sum_save_as_table_is_one_action(job: Job) -> None:
    """saveAsTable reports three events (the nested file write, CTAS, SaveAsV1Table): one action is recorded."""
    job.spark.table("orders").join(job.spark.table("regions"), "k").groupBy("region") \
        .agg(F.sum("v").alias("total")).write.saveAsTable("region_totals")
    job.flush(1)
    target = table("region_totals")
    assert job.recorded.schema(target) == [("region", "string"), ("total", "long")]
    assert job.recorded.lineage(target) == ([ORDERS, REGIONS], sorted_entries([
        fine(target, "region", [(REGIONS, "region")], "identity"),
        fine(target, "total", [(ORDERS, "v")], "sum"),
        control("join", [(ORDERS, "k"), (REGIONS, "k")]),
        control("group by", [(REGIONS, "region")]),
    ]))
    assert job.recorded.schema(ORDERS) == [("k", "long"), ("name", "string"), ("v", "long")]
    (run,) = job.recorded.runs_producing(target)
    read_orders, read_regions = "read lodestar-test.orders", "read lodestar-test.regions"
    assert _operations(job, run) == sorted([  # the join keys are the join's inputs; the grouping key, group by's
        _read_op(ORDERS, "lodestar-test.orders", ["k", "v"]),
        _read_op(REGIONS, "lodestar-test.regions", ["k", "region"]),
        _transform_op("join", "join on k, k", [(read_orders, "k"), (read_regions, "k")], []),
        _transform_op("group by", "group by on region", [(read_regions, "region")], []),
        _transform_op("sum total", "total = sum(v)", [(read_orders, "v")], ["total"]),
        _write_op(target, "default.region_totals", [(read_regions, "region"), ("sum total", "total")]),
    ], key=lambda o: o["name"])


def test_a_table_written_by_one_job_is_the_table_another_reads(job: Job) -> None:
    """CTAS, INSERT and insertInto name the catalog table as saveAsTable does; reading it is the same entity."""
    job.spark.createDataFrame([("east", 7)], "region string, total long").write.saveAsTable("raw_totals")
    job.spark.sql("CREATE TABLE doubled USING parquet AS SELECT region, total * 2 AS twice FROM raw_totals"
                  " WHERE total > 1")
    job.flush(2)
    source, target = table("raw_totals"), table("doubled")
    assert job.recorded.lineage(target) == ([source], sorted_entries([
        fine(target, "region", [(source, "region")], "identity"),
        fine(target, "twice", [(source, "total")], "multiply"),
        control("filter", [(source, "total")]),
    ]))
    job.spark.sql("INSERT INTO doubled SELECT upper(region), total FROM raw_totals")
    job.flush(1)
    assert job.recorded.lineage(target)[1] == sorted_entries([
        fine(target, "region", [(source, "region")], "upper"),
        fine(target, "twice", [(source, "total")], "identity"),
    ])
    job.spark.table("orders").select("name", "v").write.insertInto("doubled")
    job.flush(1)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "region", [(ORDERS, "name")], "identity"),
        fine(target, "twice", [(ORDERS, "v")], "identity"),
    ]))
    assert len(job.recorded.runs_producing(target, 3)) == 3


def test_union_filter_write_json(job: Job) -> None:
    """Union columns derive from every branch, by position."""
    target_path = job.root / "union"
    orders = job.spark.table("orders").select("k", "v")
    regions = job.spark.table("regions").select("k", F.length("region").alias("v"))
    orders.union(regions).filter("v > 1").write.json(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.lineage(target) == ([ORDERS, REGIONS], sorted_entries([
        fine(target, "k", [(ORDERS, "k"), (REGIONS, "k")], "identity"),
        fine(target, "v", [(ORDERS, "v")], "identity"),
        fine(target, "v", [(REGIONS, "region")], "length,cast"),  # Spark widens length's int to the long of v
        control("filter", [(ORDERS, "v"), (REGIONS, "region")]),
    ]))
    (run,) = job.recorded.runs_producing(target)
    read_orders, read_regions = "read lodestar-test.orders", "read lodestar-test.regions"
    assert _operations(job, run) == sorted([  # the filter is on the union's column, made of both branches
        _read_op(ORDERS, "lodestar-test.orders", ["k", "v"]),
        _read_op(REGIONS, "lodestar-test.regions", ["k", "region"]),
        _transform_op("length v", "v = length(region)", [(read_regions, "region")], ["v"]),
        _transform_op("cast v", "v = cast(v)", [("length v", "v")], ["v"]),
        _transform_op("union k", "k = union(k, k)", [(read_orders, "k"), (read_regions, "k")], ["k"]),
        _transform_op("union v", "v = union(v, v)", [(read_orders, "v"), ("cast v", "v")], ["v"]),
        _transform_op("filter", "filter on v", [("union v", "v")], []),
        _write_op(target, str(target_path), [("union k", "k"), ("union v", "v")]),
    ], key=lambda o: o["name"])


def test_column_names_holding_a_comma_are_kept_whole(job: Job) -> None:
    """The plan's JSON renders written column names as one `[a, b]` string; a name with ", " in it
    must not be split there."""
    target_path = job.root / "commas"
    job.spark.table("orders").select(F.col("k").alias("k, v"), "name").write.json(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.schema(target) == [("k, v", "long"), ("name", "string")]
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "k, v", [(ORDERS, "k")], "identity"),
        fine(target, "name", [(ORDERS, "name")], "identity"),
    ]))


def test_udf_inputs_are_its_arguments(job: Job) -> None:
    def label(name: str, key: str) -> str:
        return f"{name}-{key}"

    target_path = job.root / "udf"
    job.spark.table("orders").select(F.udf(label, "string")("name", F.col("k").cast("string")).alias("tag"), "v") \
        .write.orc(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "tag", [(ORDERS, "k"), (ORDERS, "name")], "label"),
        fine(target, "v", [(ORDERS, "v")], "identity"),
    ]))


def test_window_function_derives_from_partition_and_order_columns(job: Job) -> None:
    target_path = job.root / "window"
    window = Window.partitionBy("name").orderBy(F.desc("v"))
    job.spark.table("orders").withColumn("rank", F.rank().over(window)).write.parquet(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "k", [(ORDERS, "k")], "identity"),
        fine(target, "name", [(ORDERS, "name")], "identity"),
        fine(target, "v", [(ORDERS, "v")], "identity"),
        fine(target, "rank", [(ORDERS, "name"), (ORDERS, "v")], "rank"),
    ]))


def test_self_join(job: Job) -> None:
    target_path = job.root / "self_join"
    orders = job.spark.table("orders")
    orders.alias("x").join(orders.alias("y"), F.col("x.k") == F.col("y.v")) \
        .select(F.col("x.name").alias("left_name"), F.col("y.name").alias("right_name")).write.parquet(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "left_name", [(ORDERS, "name")], "identity"),
        fine(target, "right_name", [(ORDERS, "name")], "identity"),
        control("join", [(ORDERS, "k"), (ORDERS, "v")]),
    ]))
    (run,) = job.recorded.runs_producing(target)
    read = "read lodestar-test.orders"
    assert _operations(job, run) == sorted([  # one READ of the table both sides read
        _read_op(ORDERS, "lodestar-test.orders", ["k", "name", "v"]),
        _transform_op("join", "join on k, v", [(read, "k"), (read, "v")], []),
        _transform_op("rename left_name", "left_name = rename(name)", [(read, "name")], ["left_name"]),
        _transform_op("rename right_name", "right_name = rename(name)", [(read, "name")], ["right_name"]),
        _write_op(target, str(target_path), [("rename left_name", "left_name"), ("rename right_name", "right_name")]),
    ], key=lambda o: o["name"])


def test_select_star_passes_every_column_through(job: Job) -> None:
    target_path = job.root / "star"
    job.spark.sql("SELECT * FROM orders").write.csv(str(target_path))
    job.flush(1)
    target = files(target_path)
    assert job.recorded.schema(target) == [("k", "long"), ("name", "string"), ("v", "long")]
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, column, [(ORDERS, column)], "identity") for column in ("k", "name", "v")]))


def test_subquery_explode_cube_distinct_sort(job: Job) -> None:
    spark = job.spark
    paths = {name: job.root / name for name in ("subquery", "explode", "cube", "distinct")}
    spark.sql("SELECT k, (SELECT max(v) FROM orders) AS top FROM regions WHERE k IN (SELECT k FROM orders)") \
        .write.parquet(str(paths["subquery"]))
    spark.table("orders").select("k", F.explode(F.array("v", "k")).alias("item")).write.parquet(str(paths["explode"]))
    spark.table("orders").cube("name").agg(F.sum("v").alias("total")).write.parquet(str(paths["cube"]))
    spark.table("orders").select(F.lower("name").alias("name")).distinct().orderBy("name") \
        .write.text(str(paths["distinct"]))
    job.flush(4)
    target = {name: files(path) for name, path in paths.items()}
    assert job.recorded.lineage(target["subquery"]) == ([ORDERS, REGIONS], sorted_entries([
        fine(target["subquery"], "k", [(REGIONS, "k")], "identity"),
        fine(target["subquery"], "top", [(ORDERS, "v")], "max"),
        control("filter", [(ORDERS, "k"), (REGIONS, "k")]),
    ]))
    assert job.recorded.lineage(target["explode"]) == ([ORDERS], sorted_entries([
        fine(target["explode"], "k", [(ORDERS, "k")], "identity"),
        fine(target["explode"], "item", [(ORDERS, "k"), (ORDERS, "v")], "explode"),
    ]))
    assert job.recorded.lineage(target["cube"]) == ([ORDERS], sorted_entries([
        fine(target["cube"], "name", [(ORDERS, "name")], "identity"),
        fine(target["cube"], "total", [(ORDERS, "v")], "sum"),
        control("group by", [(ORDERS, "name")]),
    ]))
    assert job.recorded.lineage(target["distinct"]) == ([ORDERS], [
        fine(target["distinct"], "name", [(ORDERS, "name")], "lower")])


def test_jdbc_source_and_datasource_v2_writes(job: Job) -> None:
    url, driver = "jdbc:derby:memory:lodestar;create=true", {"driver": "org.apache.derby.iapi.jdbc.AutoloadedDriver"}
    job.spark.table("regions").write.jdbc(url, "REGIONS", properties=driver)
    jdbc = job.spark.read.jdbc(url, "REGIONS", properties=driver)
    jdbc.filter("k > 1").select("k", F.upper("region").alias("region")).write.format("noop").mode("append").save()
    job.flush(1)  # the JDBC write (a V1 save() through a data source) is not a file, table or V2 write: not recorded
    source, target = dataset_urn("derby", "REGIONS", "PROD"), dataset_urn("spark", "noop-table", "PROD")
    assert job.recorded.schema(source) == [("k", "long"), ("region", "string")]
    assert job.recorded.lineage(target) == ([source], sorted_entries([
        fine(target, "k", [(source, "k")], "identity"),
        fine(target, "region", [(source, "region")], "upper"),
        control("filter", [(source, "k")]),
    ]))
    (jdbc_run,) = job.recorded.runs_producing(target)
    assert job.recorded.aspect(jdbc_run, "dataProcessInstanceInput") == {"inputs": [source]}
    assert job.recorded.aspect(jdbc_run, "dataProcessInstanceOutput") == {"outputs": [target]}
    job.spark.table("orders").write.format("noop").mode("overwrite").save()
    job.flush(1)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, column, [(ORDERS, column)], "identity") for column in ("k", "name", "v")]))
    runs = job.recorded.runs_producing(target, 2)
    assert len(runs) == 2 and jdbc_run in runs


def test_write_to_a_session_catalog_table_is_the_save_as_table_entity(job: Job) -> None:
    """`writeTo(...).create()` on the session catalog is a CTAS of the table `saveAsTable` writes and
    `spark.table` reads: one entity. Appending with `writeTo` to such a (V1) table fails in analysis:
    nothing is recorded."""
    orders = job.spark.table("orders")
    orders.select("k", "v").writeTo("v2_orders").using("parquet").create()
    job.flush(1)
    orders.select("k", (F.col("v") * 2).alias("v")).write.mode("append").saveAsTable("v2_orders")
    job.flush(1)
    target = table("v2_orders")
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "k", [(ORDERS, "k")], "identity"), fine(target, "v", [(ORDERS, "v")], "multiply")]))
    assert len(job.recorded.runs_producing(target, 2)) == 2
    with pytest.raises(Exception, match="Cannot write into v1 table"):
        orders.select("k", "v").writeTo("v2_orders").append()
    job.flush(0)
    read_path = job.root / "from_v2_orders"
    job.spark.table("v2_orders").filter("v > 10").write.parquet(str(read_path))
    job.flush(1)
    read = files(read_path)
    assert job.recorded.lineage(read) == ([target], sorted_entries([
        fine(read, "k", [(target, "k")], "identity"), fine(read, "v", [(target, "v")], "identity"),
        control("filter", [(target, "v")])]))
    (run,) = job.recorded.runs_producing(read)
    assert job.recorded.aspect(run, "dataProcessInstanceInput") == {"inputs": [target]}
    assert job.recorded.aspect(run, "dataProcessInstanceOutput") == {"outputs": [read]}


def test_tables_of_a_datasource_v2_catalog(job: Job) -> None:
    """A registered V2 catalog (Spark's JDBC catalog over Derby): CTAS, append and overwrite of
    `<catalog>.<namespace>.<table>` and of `<catalog>.<table>` are the catalog's tables, read back
    as the same entities."""
    spark, catalog = job.spark, "warehouse_db"
    conf = {"": "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog",
            ".url": "jdbc:derby:memory:v2catalog;create=true", ".driver": "org.apache.derby.iapi.jdbc.AutoloadedDriver"}
    for key, value in conf.items():
        spark.conf.set(f"spark.sql.catalog.{catalog}{key}", value)
    orders, regions = spark.table("orders"), spark.table("regions")
    target = dataset_urn(catalog, "APP.NAMES", "PROD")
    orders.select("k", F.upper("name").alias("name")).writeTo(f"{catalog}.APP.NAMES").create()
    job.flush(1)
    assert job.recorded.schema(target) == [("k", "long"), ("name", "string")]
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "k", [(ORDERS, "k")], "identity"), fine(target, "name", [(ORDERS, "name")], "upper")]))
    orders.filter("v > 5").select("k", "name").writeTo(f"{catalog}.APP.NAMES").append()
    job.flush(1)
    assert job.recorded.lineage(target) == ([ORDERS], sorted_entries([
        fine(target, "k", [(ORDERS, "k")], "identity"), fine(target, "name", [(ORDERS, "name")], "identity"),
        control("filter", [(ORDERS, "v")])]))
    regions.select("k", F.col("region").alias("name")).writeTo(f"{catalog}.APP.NAMES").overwrite(F.lit(True))
    job.flush(1)
    assert job.recorded.lineage(target) == ([REGIONS], sorted_entries([
        fine(target, "k", [(REGIONS, "k")], "identity"), fine(target, "name", [(REGIONS, "region")], "identity")]))
    runs = job.recorded.runs_producing(target, 3)
    assert len(runs) == 3
    for run in runs:
        assert job.recorded.aspect(run, "dataProcessInstanceOutput") == {"outputs": [target]}
    # a name without a namespace is still the catalog's table, not a session-catalog table `warehouse_db.KEYS`
    keys = dataset_urn(catalog, "KEYS", "PROD")
    orders.select("k").writeTo(f"{catalog}.KEYS").create()
    job.flush(1)
    assert job.recorded.lineage(keys) == ([ORDERS], [fine(keys, "k", [(ORDERS, "k")], "identity")])
    assert job.recorded.aspect(dataset_urn("hive", f"{catalog}.KEYS", "PROD"), "schemaMetadata") is None
    # another job reads them: the same entities
    read_path = job.root / "from_v2_catalog"
    spark.table(f"{catalog}.APP.NAMES").join(spark.table(f"{catalog}.KEYS"), "k") \
        .select("k", F.lower("name").alias("name")).write.parquet(str(read_path))
    job.flush(1)
    read = files(read_path)
    assert job.recorded.lineage(read) == ([target, keys], sorted_entries([
        fine(read, "k", [(target, "k")], "identity"), fine(read, "name", [(target, "name")], "lower"),
        control("join", [(keys, "k"), (target, "k")])]))
    (run,) = job.recorded.runs_producing(read)
    assert job.recorded.aspect(run, "dataProcessInstanceInput") == {"inputs": [target, keys]}
    assert job.recorded.aspect(run, "dataProcessInstanceOutput") == {"outputs": [read]}


def test_failed_write_records_a_failed_run_without_lineage(job: Job) -> None:
    def explode_on(value: int) -> int:
        raise ValueError(f"cannot take {value}")

    target_path = job.root / "failed"
    with pytest.raises(Exception, match="cannot take"):
        job.spark.table("orders").select(F.udf(explode_on, "long")("v").alias("x")).write.parquet(str(target_path))
    job.flush(1)
    target = files(target_path)
    (run,) = job.recorded.runs_producing(target)
    started, ended = job.recorded.run_events(run)
    assert (started["status"], ended["status"]) == ("STARTED", "COMPLETE")
    assert ended["result"] == {"type": "FAILURE", "nativeResultType": "PYTHON_EXCEPTION"}
    properties = job.recorded.aspect(run, "dataProcessInstanceProperties")["customProperties"]
    assert properties["errorClass"] == "PYTHON_EXCEPTION"
    assert properties["exception"] == "org.apache.spark.api.python.PythonException"
    assert job.recorded.aspect(run, "dataProcessInstanceInput") == {"inputs": [ORDERS]}
    assert job.recorded.aspect(target, "upstreamLineage") is None
    assert job.recorded.aspect(target, "schemaMetadata") is None


def test_job_with_two_writes_has_two_runs_under_one_application_run(job: Job) -> None:
    first_path, second_path = job.root / "big", job.root / "big_names"
    big = job.spark.table("orders").filter("v >= 10")
    big.write.parquet(str(first_path))
    big.select(F.initcap("name").alias("who")).write.json(str(second_path))
    job.flush(2)
    first, second = files(first_path), files(second_path)
    (first_run,) = job.recorded.runs_producing(first)
    (second_run,) = job.recorded.runs_producing(second)
    assert first_run != second_run
    for run in (first_run, second_run):
        assert job.recorded.aspect(run, "dataProcessInstanceRelationships")["parentInstance"] == job.app_run
    assert job.recorded.lineage(second) == ([ORDERS], sorted_entries([
        fine(second, "who", [(ORDERS, "name")], "init_cap"), control("filter", [(ORDERS, "v")])]))
    io = job.recorded.aspect(JOB, "dataJobInputOutput")
    assert {first, second} <= set(io["outputDatasets"]) and ORDERS in io["inputDatasets"]


def _operations(job: Job, run: str) -> list[dict[str, Any]]:
    """The run's fieldOperations, by name."""
    return sorted(job.recorded.aspect(run, "fieldOperations")["operations"], key=lambda o: o["name"])


def _read_op(dataset: str, name: str, outputs: list[str]) -> dict[str, Any]:
    return {"name": f"read {name}", "description": f"read {dataset}", "type": "READ", "source": dataset,
            "destination": None, "inputs": [], "outputs": outputs}


def _transform_op(name: str, description: str, inputs: list[tuple[str, str]], outputs: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description, "type": "TRANSFORM", "source": None, "destination": None,
            "inputs": [{"origin": o, "field": f} for o, f in inputs], "outputs": outputs}


def _write_op(target: str, name: str, inputs: list[tuple[str, str]]) -> dict[str, Any]:
    return {"name": f"write {name}", "description": f"write {target}", "type": "WRITE", "source": None,
            "destination": target, "inputs": [{"origin": o, "field": f} for o, f in inputs], "outputs": []}


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")
