"""Programs and pipelines that say themselves what they did, run on real PySpark against a real
`lodestar serve`: the program API (`lodestar_run`) with and without the listener, and the
pipeline runner with each built-in plugin, a Python transform, a custom plugin, macros, a failing
run and the seed's examples read back through CDAP's v3 field-lineage routes.

One SparkSession and one Lodestar serve the whole module; every test writes datasets of its own."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ingest.rest import RestClient
from spark_emitter import (
    EndPoint,
    InputField,
    ReadOperation,
    TransformOperation,
    WriteOperation,
    attach,
    lodestar_run,
)
from tests.support.builders import mcp
from tests.support.processes import TOKEN, ServeProcess
from tests.support.spark_harness import Recorded, files, spark_session, table
from tests.support.waiting import await_


@dataclass
class Env:
    spark: Any
    root: Path
    url: str
    client: RestClient
    recorded: Recorded

    def v3(self, path: str) -> Any:
        return self.client.call("GET", f"/v3/namespaces/default{path}")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with ServeProcess(tmp_path_factory.mktemp("lodestar")) as lodestar:
        root = tmp_path_factory.mktemp("spark")
        with spark_session(root / "warehouse") as spark:
            client = lodestar.client()
            yield Env(spark, root, lodestar.url, client, Recorded(client))


def ds(urn: str) -> str:
    return quote(urn, safe="")


def operations_of(env: Env, run: str) -> list[dict[str, Any]]:
    value = env.recorded.aspect(run, "fieldOperations")
    return [] if value is None else value["operations"]


def incoming(env: Env, dataset: str, field: str) -> dict[str, list[str]]:
    """The fields a field comes from (CDAP's summary, backward), once the run-lineage index has them."""
    def read() -> dict[str, list[str]]:
        body = env.v3(f"/datasets/{ds(dataset)}/lineage/fields/{quote(field, safe='')}?direction=incoming"
                      "&start=0&end=now%2B1h")
        return {entry["urn"] if "urn" in entry else entry["dataset"]: entry["fields"] for entry in body["incoming"]}
    return await_(read, f"the backward lineage of {dataset} {field}")


def outgoing(env: Env, dataset: str, field: str) -> dict[str, list[str]]:
    def read() -> dict[str, list[str]]:
        body = env.v3(f"/datasets/{ds(dataset)}/lineage/fields/{quote(field, safe='')}?direction=outgoing"
                      "&start=0&end=now%2B1h")
        return {entry["urn"] if "urn" in entry else entry["dataset"]: entry["fields"] for entry in body["outgoing"]}
    return await_(read, f"the forward lineage of {dataset} {field}")


# the program API

def test_program_operations_replace_the_listeners_for_its_destination(env: Env) -> None:
    from pyspark.sql import functions as F

    source, target = env.root / "people.csv", env.root / "people_out"
    env.spark.createDataFrame([("ann", "lee"), ("bob", "ray")], "first string, last string") \
        .coalesce(1).write.option("header", True).csv(str(source))
    listener = attach(env.spark, server=env.url, token=TOKEN)
    try:
        with lodestar_run(env.spark, program="Names", namespace="default") as run:
            df = env.spark.read.option("header", True).csv(str(source))
            df.select(F.concat_ws(" ", "first", "last").alias("name")).write.parquet(str(target))
            src, dst = EndPoint.of("default", str(source)), EndPoint.of("default", str(target))
            run.lineage.record([
                ReadOperation("read", "read people", src, ["first", "last"]),
                TransformOperation("concat", "full name", [InputField("read", "first"), InputField("read", "last")],
                                   ["name"]),
                WriteOperation("write", "write names", dst, [InputField("concat", "name")])])
        assert listener.flush(60)
        assert (listener.counts.failed, listener.counts.dropped) == (0, 0)
        action_runs = [r for r in env.recorded.runs_producing(files(target), 2) if r != run.urn]
    finally:
        listener.close(30)
    assert src.urn == files(source) and dst.urn == files(target)  # the listener's names: one entity each
    assert [op["name"] for op in operations_of(env, run.urn)] == ["read", "concat", "write"]
    assert len(action_runs) == 1
    assert operations_of(env, action_runs[0]) == []  # the listener's operations for the target are gone
    assert env.recorded.aspect(action_runs[0], "dataProcessInstanceOutput") == {"outputs": [files(target)]}
    events = env.recorded.run_events(run.urn, 2)
    assert events[-1]["status"] == "COMPLETE"
    assert events[-1]["result"]["type"] == "SUCCESS"
    assert incoming(env, files(target), "name") == {files(source): ["first", "last"]}
    programs = env.v3(f"/datasets/{ds(files(target))}/lineage/fields/name/operations?direction=incoming"
                      "&start=0&end=now%2B1h")["incoming"]
    assert [p["urn"] for group in programs for p in group["programs"]] == [run.program_urn]  # recorded once


def test_a_program_that_raises_fails_its_run_and_keeps_its_metadata(env: Env) -> None:
    target = env.root / "never"
    dataset = EndPoint.of("default", str(target)).urn
    field = f"urn:li:schemaField:({dataset},id)"
    result = env.client.propose([mcp(dataset, "datasetProperties", {"name": "never"})])  # metadata needs the entity
    assert result[0]["status"] != "failed", result
    with pytest.raises(ZeroDivisionError), lodestar_run(env.spark, program="Broken", server=env.url,
                                                        token=TOKEN) as run:
        run.metadata.add_tags(field, "sensitive")
        run.metadata.add_properties(dataset, {"owner": "team-a"})
        run.lineage.record([ReadOperation("read", "", EndPoint.of("default", "In"), ["id"]),
                            WriteOperation("write", "", EndPoint.of("default", str(target)),
                                           [InputField("read", "id")])])
        1 / 0  # noqa: B018
    events = env.recorded.run_events(run.urn, 2)
    assert events[-1]["result"]["type"] == "FAILURE"
    assert events[-1]["result"]["nativeResultType"] == "ZeroDivisionError"
    assert operations_of(env, run.urn) == []  # a failed run wrote nothing
    assert env.recorded.aspect(run.urn, "dataProcessInstanceProperties")["customProperties"]["error"] \
        .startswith("ZeroDivisionError")
    assert "sensitive" in run.metadata.tags(field)  # added by the failed run: retained
    props = env.client.call("GET", f"/v3/urns/{ds(dataset)}/metadata/properties?scope=USER")
    assert props.get("owner") == "team-a"


def test_a_program_recording_operations_against_cdaps_rules_fails_and_learns_why(env: Env) -> None:
    from schemas.field_operations import FieldOperationsError

    with pytest.raises(FieldOperationsError, match="WRITE"), \
            lodestar_run(env.spark, program="NoWrite", server=env.url, token=TOKEN) as run:
        run.lineage.record([ReadOperation("read", "", EndPoint.of("default", "In"), ["id"])])
    assert env.recorded.run_events(run.urn, 2)[-1]["result"]["type"] == "FAILURE"


# pipelines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pipelines"


def run(env: Env, pipeline: Any, arguments: dict[str, str] | None = None) -> Any:
    from spark_emitter.pipeline import run_pipeline

    return run_pipeline(pipeline, env.spark, arguments or {}, server=env.url, token=TOKEN)


def stage(label: str, plugin: str, kind: str, **properties: str) -> dict[str, Any]:
    """A stage of a pipeline config (`label` is its name: a plugin may have a `name` property)."""
    return {"name": label, "plugin": {"name": plugin, "type": kind, "properties": properties}}


def shape(operations: list[dict[str, Any]]) -> set[tuple]:
    """Operations as comparable tuples (name, type, source/destination, inputs, outputs)."""
    return {(op["name"], op["type"], op.get("source") or op.get("destination"),
             tuple((i["origin"], i["field"]) for i in op.get("inputs") or []), tuple(op.get("outputs") or []))
            for op in operations}


def test_the_seeds_customers_pipeline_gives_the_seeds_answers(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_emitter.pipeline import load

    monkeypatch.syspath_prepend(str(EXAMPLES))  # the custom IdGenerator plugin beside the file
    source = env.root / "customers.csv"
    source.write_text("ann,lee,31,Palo Alto,CA\nbob,ray,45,Austin,TX\ncy,fox,27,Boston,MA\n")
    pipeline = load(EXAMPLES / "customers.json")
    result = run(env, pipeline, {"input": str(source), "store": "Store"})
    assert result.status == "SUCCEEDED", result.error
    rows = env.spark.table("Store").orderBy("name").collect()
    assert [(r["name"], r["age"], r["city"]) for r in rows] == [("ann lee", 31, "Palo Alto"), ("bob ray", 45, "Austin"),
                                                                 ("cy fox", 27, "Boston")]
    assert all(len(r["id"]) == 16 for r in rows)
    store, file = table("store"), files(source)
    assert shape(operations_of(env, result.run_urn)) == {
        ("File.read", "READ", file, (), ("body",)),
        ("Parser.parse", "TRANSFORM", None, (("File.read", "body"),), ("first_name", "last_name", "age", "city",
                                                                       "state")),
        ("Name-Concatenator.concat", "TRANSFORM", None, (("Parser.parse", "first_name"), ("Parser.parse", "last_name")),
         ("name",)),
        ("Name-Concatenator.dropFirstName", "TRANSFORM", None, (("Parser.parse", "first_name"),), ()),
        ("Name-Concatenator.dropLastName", "TRANSFORM", None, (("Parser.parse", "last_name"),), ()),
        ("IdGenerator.create", "TRANSFORM", None, (("Name-Concatenator.concat", "name"),), ("id",)),
        ("Store.write", "WRITE", store, (("IdGenerator.create", "id"), ("Parser.parse", "age"),
                                         ("Parser.parse", "city"), ("Parser.parse", "state"),
                                         ("Name-Concatenator.concat", "name")), ())}
    # the seed's answers, through CDAP's v3 routes
    assert incoming(env, store, "id") == {file: ["body"]}
    assert incoming(env, store, "age") == {file: ["body"]}
    assert outgoing(env, file, "body") == {store: ["age", "city", "id", "name", "state"]}
    body = env.v3(f"/datasets/{ds(store)}/lineage/fields/id/operations?direction=incoming&start=0&end=now%2B1h")
    [group] = body["incoming"]
    assert [p["urn"] for p in group["programs"]] == [result.program_urn]
    assert {op["name"] for op in group["operations"]} == {"File.read", "Parser.parse", "Name-Concatenator.concat",
                                                          "IdGenerator.create", "Store.write"}
    # the run: properties, accesses, events, display names, rows
    properties = env.recorded.aspect(result.run_urn, "dataProcessInstanceProperties")["customProperties"]
    assert properties == {"input": str(source), "store": "Store", "pipeline-checksum": pipeline.checksum}
    assert env.recorded.aspect(result.run_urn, "dataProcessInstanceInput") == {"inputs": [file]}
    assert env.recorded.aspect(result.run_urn, "dataProcessInstanceOutput") == {"outputs": [store]}
    events = env.recorded.run_events(result.run_urn, 2)
    assert (events[0]["status"], events[-1]["status"], events[-1]["result"]["type"]) == ("STARTED", "COMPLETE",
                                                                                          "SUCCESS")
    assert env.recorded.aspect(file, "datasetProperties")["name"] == "customers"
    assert [(s.name, s.rows_in, s.rows_out) for s in result.stages] == [
        ("File", None, 3), ("Parser", 3, 3), ("Name-Concatenator", 3, 3), ("IdGenerator", 3, 3), ("Store", 3, None)]


def test_each_built_in_records_exactly_its_own_operations(env: Env) -> None:
    from spark_emitter.pipeline import parse

    orders, customers, out = env.root / "orders.csv", env.root / "customers.json", env.root / "totals"
    orders.write_text("1,c1,10.5,x\n2,c1,4.5,y\n3,c2,7,z\n")
    customers.write_text('{"cid": "c1", "city": "Oslo"}\n{"cid": "c2", "city": "Rome"}\n')

    pipeline = parse({"name": "BuiltIns", "stages": [
        stage("Orders", "File", "batchsource", referenceName="orders", path=str(orders), format="csv",
              schema="id string, customer string, amount string, note string"),
        stage("Customers", "File", "batchsource", referenceName="customers", path=str(customers), format="json",
              schema='{"type": "record", "name": "c", "fields": [{"name": "cid", "type": "string"},'
                     ' {"name": "city", "type": ["string", "null"]}]}'),
        stage("Clean", "Projection", "transform", drop="note", convert="amount:double", rename="customer:cust"),
        stage("Totals", "GroupByAggregate", "batchaggregator", groupByFields="cust",
              aggregates="total:sum(amount),n:count(*)"),
        stage("Join", "Joiner", "batchjoiner", joinKeys="Totals.cust = Customers.cid",
              selectedFields="Totals.cust as customer, Totals.total as total, Customers.city",
              requiredInputs="Totals,Customers"),
        stage("Out", "File", "batchsink", referenceName="totals", path=str(out), format="parquet")],
        "connections": [{"from": a, "to": b} for a, b in (("Orders", "Clean"), ("Clean", "Totals"), ("Totals", "Join"),
                                                          ("Customers", "Join"), ("Join", "Out"))]})
    result = run(env, pipeline)
    assert result.status == "SUCCEEDED", result.error
    written = sorted((r["customer"], r["total"], r["city"]) for r in env.spark.read.parquet(str(out)).collect())
    assert written == [("c1", 15.0, "Oslo"), ("c2", 7.0, "Rome")]
    read_orders, read_customers, target = files(orders), files(customers), files(out)
    assert shape(operations_of(env, result.run_urn)) == {
        ("Orders.read", "READ", read_orders, (), ("id", "customer", "amount", "note")),
        ("Customers.read", "READ", read_customers, (), ("cid", "city")),
        ("Clean.drop note", "TRANSFORM", None, (("Orders.read", "note"),), ()),
        ("Clean.convert amount", "TRANSFORM", None, (("Orders.read", "amount"),), ("amount",)),
        ("Clean.rename customer", "TRANSFORM", None, (("Orders.read", "customer"),), ("cust",)),
        ("Totals.group by", "TRANSFORM", None, (("Clean.rename customer", "cust"),), ("cust",)),
        ("Totals.sum total", "TRANSFORM", None, (("Clean.convert amount", "amount"),), ("total",)),
        ("Join.join", "TRANSFORM", None, (("Totals.group by", "cust"), ("Customers.read", "cid")),
         ("Totals.cust", "Customers.cid")),
        ("Join.select customer", "TRANSFORM", None, (("Join.join", "Totals.cust"),), ("customer",)),
        ("Join.select total", "TRANSFORM", None, (("Totals.sum total", "total"),), ("total",)),
        ("Join.select city", "TRANSFORM", None, (("Customers.read", "city"),), ("city",)),
        ("Out.write", "WRITE", target, (("Join.select customer", "customer"), ("Join.select total", "total"),
                                        ("Join.select city", "city")), ())}  # count(*) feeds nothing written
    assert incoming(env, target, "total") == {read_orders: ["amount"]}
    assert incoming(env, target, "customer") == {read_customers: ["cid"], read_orders: ["customer"]}
    assert sorted(env.recorded.aspect(result.run_urn, "dataProcessInstanceInput")["inputs"]) == sorted(
        [read_orders, read_customers])


def test_a_union_and_two_sinks_each_destination_gets_the_operations_that_lead_to_it(env: Env) -> None:
    from spark_emitter.pipeline import parse

    source, more, out = env.root / "multi.csv", env.root / "multi-more.csv", env.root / "multi-a"
    source.write_text("a,1,x\nb,2,y\n")
    more.write_text("c,3,z\n")

    pipeline = parse({"name": "TwoSinks", "stages": [
        stage("In", "File", "batchsource", referenceName="multi", path=str(source), format="csv",
              schema="k string, v int, note string"),
        stage("More", "File", "batchsource", referenceName="multi-more", path=str(more), format="csv",
              schema="k string, v int, note string"),
        stage("Clean", "Projection", "transform", drop="note"),
        stage("A", "File", "batchsink", referenceName="multi-a", path=str(out), format="parquet"),
        stage("Rename", "Projection", "transform", keep="v", rename="v:value"),
        stage("B", "Table", "batchsink", name="multi_b")],
        "connections": [{"from": a, "to": b} for a, b in (("In", "Clean"), ("More", "Clean"), ("Clean", "A"),
                                                          ("Clean", "Rename"), ("Rename", "B"))]})
    result = run(env, pipeline)
    assert result.status == "SUCCEEDED", result.error
    assert sorted(r["value"] for r in env.spark.table("multi_b").collect()) == [1, 2, 3]  # the inputs' union
    read, read_more, to_a, to_b = files(source), files(more), files(out), table("multi_b")
    recorded = env.recorded.aspect(result.run_urn, "fieldOperations")
    shared = {"In.read", "More.read", "Clean.drop note"}
    assert {d["destination"]: set(d["operations"]) for d in recorded["destinations"]} == {
        to_a: shared | {"A.write"},  # Rename's drop leads to B only
        to_b: shared | {"Rename.drop k", "Rename.rename v", "B.write"}}
    assert ("Clean.drop note", "TRANSFORM", None, (("In.read", "note"), ("More.read", "note")), ()) in shape(
        recorded["operations"])
    assert {op["name"] for op in recorded["operations"]} == shared | {"A.write", "Rename.drop k", "Rename.rename v",
                                                                      "B.write"}
    assert [(s.name, s.rows_in, s.rows_out) for s in result.stages] == [
        ("In", None, 2), ("More", None, 1), ("Clean", 3, 3), ("A", 3, None), ("Rename", 3, 3), ("B", 3, None)]
    # through CDAP's v3 routes: each destination answers with its own operations
    assert incoming(env, to_b, "value") == {read: ["v"], read_more: ["v"]}
    assert incoming(env, to_a, "v") == {read: ["v"], read_more: ["v"]}
    assert outgoing(env, read, "v") == {to_a: ["v"], to_b: ["value"]}
    body = env.v3(f"/datasets/{ds(read)}/lineage/fields/k/operations?direction=outgoing&start=0&end=now%2B1h")
    assert sorted(sorted(op["name"] for op in group["operations"]) for group in body["outgoing"]) == [
        ["A.write", "In.read"], ["In.read", "Rename.drop k"]]
    body = env.v3(f"/datasets/{ds(to_a)}/lineage/fields/v/operations?direction=incoming&start=0&end=now%2B1h")
    assert [sorted(op["name"] for op in group["operations"]) for group in body["incoming"]] == [
        ["A.write", "In.read", "More.read"]]
    assert [p["urn"] for group in body["incoming"] for p in group["programs"]] == [result.program_urn]


class Tagger:
    """A custom plugin: tags its input dataset, records an upper-casing, fails when told to."""

    types = ("transform",)
    required = ("field", "dataset")
    properties: dict[str, Any]

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        return input_fields

    def prepare_run(self, context: Any) -> None:
        from spark_emitter.pipeline import FieldTransform

        context.metadata.add_tags(self.properties["dataset"], "touched-by-tagger")
        context.metadata.add_properties(self.properties["dataset"], {"tagger": context.stage})
        field = self.properties["field"]
        context.record([FieldTransform("upper", f"upper-cased {field}", [field], [field])])

    def transform(self, df: Any) -> Any:
        from pyspark.sql import functions as F

        if self.properties.get("fail") == "yes":
            raise RuntimeError("the tagger was told to fail")
        field = self.properties["field"]
        return df.withColumn(field, F.upper(F.col(field)))


def _tagger_pipeline(env: Env, name: str, fail: str) -> Any:
    from spark_emitter.pipeline import parse

    source = env.root / f"{name}.txt"
    source.write_text("a\nb\n")
    return parse({"name": name, "stages": [
        {"name": "In", "plugin": {"name": "File", "type": "batchsource",
                                  "properties": {"referenceName": "in", "path": "${root}/" + source.name}}},
        {"name": "Tag", "plugin": {"name": f"{__name__}:Tagger", "type": "transform",
                                   "properties": {"field": "body", "dataset": files(source), "fail": fail}}},
        {"name": "Out", "plugin": {"name": "File", "type": "batchsink",
                                   "properties": {"referenceName": "out", "path": str(env.root / f"{name}-out"),
                                                  "format": "text"}}}],
        "connections": [{"from": "In", "to": "Tag"}, {"from": "Tag", "to": "Out"}]}), files(source)


def test_a_custom_plugin_records_its_operations_and_metadata_with_a_macro(env: Env) -> None:
    pipeline, source = _tagger_pipeline(env, "tagged", "no")
    env.client.propose([mcp(source, "datasetProperties", {"name": "tagged"})])
    result = run(env, pipeline, {"root": str(env.root)})
    assert result.status == "SUCCEEDED", result.error
    assert [r["value"] for r in env.spark.read.text(str(env.root / "tagged-out")).collect()] == ["A", "B"]
    target = files(env.root / "tagged-out")
    assert shape(operations_of(env, result.run_urn)) == {
        ("In.read", "READ", source, (), ("body",)),
        ("Tag.upper", "TRANSFORM", None, (("In.read", "body"),), ("body",)),
        ("Out.write", "WRITE", target, (("Tag.upper", "body"),), ())}
    tags = env.client.call("GET", f"/v3/urns/{ds(source)}/metadata/tags?scope=USER")
    assert "touched-by-tagger" in tags


def test_a_failing_run_is_recorded_failed_and_its_metadata_is_retained(env: Env) -> None:
    pipeline, source = _tagger_pipeline(env, "doomed", "yes")
    env.client.propose([mcp(source, "datasetProperties", {"name": "doomed"})])
    result = run(env, pipeline, {"root": str(env.root)})
    assert result.status == "FAILED"
    assert "the tagger was told to fail" in result.error
    assert [s.status for s in result.stages] == ["done", "failed", "pending"]
    events = env.recorded.run_events(result.run_urn, 2)
    assert events[-1]["result"]["type"] == "FAILURE"
    assert operations_of(env, result.run_urn) == []
    assert env.recorded.aspect(result.run_urn, "dataProcessInstanceOutput") is None
    properties = env.client.call("GET", f"/v3/urns/{ds(source)}/metadata/properties?scope=USER")
    assert properties.get("tagger") == "Tag"  # added by the failed run: retained


def test_a_pipeline_that_fails_validation_records_nothing(env: Env) -> None:
    from spark_emitter.pipeline import PipelineError

    pipeline, _ = _tagger_pipeline(env, "unresolved", "no")
    with pytest.raises(PipelineError, match=r"the macro \$\{root\} has no value"):
        run(env, pipeline, {})
    program = "urn:li:dataJob:(urn:li:dataFlow:(cdap,unresolved,default),DataPipelineWorkflow)"
    assert env.recorded.aspect(program, "dataJobInfo") is None


def test_the_seeds_pii_example_fll1_and_upstream_tags(env: Env) -> None:
    from spark_emitter.pipeline import load

    started = int(__import__("time").time()) - 5
    env.spark.createDataFrame([("u1", 50.0), ("u2", 70.0), ("u1", 60.0)], "UID string, amount double") \
        .write.mode("overwrite").saveAsTable("DailyTransactions")
    spend = run(env, load(EXAMPLES / "daily-spend.json"))
    loyalty = run(env, load(EXAMPLES / "loyalty.json"))
    assert (spend.status, loyalty.status) == ("SUCCEEDED", "SUCCEEDED"), (spend.error, loyalty.error)
    daily, spend_ds, report = table("dailytransactions"), table("customerspend"), table("loyaltyreport")
    segments = sorted((r["amount"], r["segment"]) for r in env.spark.table("LoyaltyReport").collect())
    assert segments == [(70.0, "silver"), (110.0, "gold")]
    # FLL-1: which processes consumed UID in the window, and which fields derive from it
    window = f"start={started}&end=now%2B1h"
    body = env.v3(f"/datasets/{ds(daily)}/lineage/fields/UID/operations?direction=outgoing&{window}")
    assert [p["urn"] for group in body["outgoing"] for p in group["programs"]] == [spend.program_urn]
    derived = outgoing(env, daily, "UID")
    assert derived[spend_ds] == ["customer_key"]
    assert outgoing(env, daily, "amount")[spend_ds] == ["amount"]
    assert incoming(env, report, "segment") == {spend_ds: ["customer_key"]}
    # the reviewer tags UID as PII: upstreamTags:PII finds the fields derived from it
    env.client.call("POST", f"/v3/urns/{ds(f'urn:li:schemaField:({daily},UID)')}/metadata/tags", ["PII"])

    def derived_from_pii() -> list[str]:
        hits = env.client.call("GET", f"/v1/search?query={quote('upstreamTags:PII')}&count=100")["results"]
        return sorted(h["urn"] for h in hits)
    expected = sorted([f"urn:li:schemaField:({spend_ds},customer_key)", f"urn:li:schemaField:({report},segment)",
                       f"urn:li:schemaField:({report},customer_key)"])  # grouped by, so derived from UID too
    found: list[list[str]] = []
    with contextlib.suppress(AssertionError):
        await_(lambda: found.append(derived_from_pii()) or found[-1] == expected, "upstreamTags:PII")
    assert found[-1] == expected


def test_cli_run_shows_each_stage_and_a_summary(env: Env) -> None:
    import json

    from tests.support.processes import run_cli

    source, out = env.root / "cli-in.txt", env.root / "cli-out"
    source.write_text("a,1\nb,2\n")
    definition = env.root / "cli.json"
    definition.write_text(json.dumps({"name": "CliPipeline", "stages": [
        {"name": "In", "plugin": {"name": "File", "type": "batchsource",
                                  "properties": {"referenceName": "cli-in", "path": "${input}"}}},
        {"name": "Parse", "plugin": {"name": "CSVParser", "type": "transform",
                                     "properties": {"field": "body", "schema": "k string, v int"}}},
        {"name": "Out", "plugin": {"name": "File", "type": "batchsink",
                                   "properties": {"referenceName": "cli-out", "path": str(out), "format": "json"}}}],
        "connections": [{"from": "In", "to": "Parse"}, {"from": "Parse", "to": "Out"}]}))
    done = run_cli("pipeline", "run", str(definition), "--arg", f"input={source}", "--master", "local[1]",
                   "--server", env.url, "--token", TOKEN, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert re.search(r"Parse\s+│\s+CSVParser\s+│\s+2\s+│\s+2\s+│\s+1\b", done.stdout), done.stdout
    assert "SUCCEEDED" in done.stdout and "3 field operations recorded" in done.stdout, done.stdout
    run_urn = re.search(r"run (urn:li:dataProcessInstance:\w+)", done.stdout).group(1)
    assert env.recorded.run_events(run_urn, 2)[-1]["result"]["type"] == "SUCCESS"
    assert sorted(r["v"] for r in env.spark.read.json(str(out)).collect()) == [1, 2]
    failed = run_cli("pipeline", "run", str(definition), "--server", env.url, "--token", TOKEN)
    assert failed.returncode == 1 and "the macro ${input} has no value" in failed.stderr


# what trying the listener on real jobs showed

def test_listener_a_comma_in_a_path_a_failed_write_and_a_failure_before_spark_ran(env: Env) -> None:
    import sys

    from pyspark.sql import functions as F

    from spark_emitter.urns import dataset_urn

    listener = attach(env.spark, server=env.url, token=TOKEN, job="bugs")
    try:
        comma = env.root / "out,1"
        env.spark.createDataFrame([(1, "a")], "k long, s string").write.parquet(str(comma))

        def explode(value: int) -> int:
            raise ValueError(f"cannot take {value}")

        failed = env.root / "failed-target"
        with pytest.raises(Exception, match="cannot take"):
            env.spark.createDataFrame([(1,)], "v long").select(F.udf(explode, "long")("v").alias("x")) \
                .write.parquet(str(failed))
        try:
            env.spark.read.parquet(str(env.root / "missing"))
        except Exception as err:  # noqa: BLE001 - handed to the hook as if uncaught
            sys.excepthook(type(err), err, err.__traceback__)  # closes the listener
        assert listener.counts.failed == 0 and listener.counts.dropped == 0
    finally:
        listener.close(30)
    urn = dataset_urn("file", str(comma), "PROD")
    assert "%2C" in urn
    assert [f for f, _ in env.recorded.schema(urn)] == ["k", "s"]  # the dataset was recorded
    outputs = env.recorded.aspect(listener.app.job_urn, "dataJobInputOutput")["outputDatasets"]
    assert urn in outputs and files(failed) not in outputs
    run = listener.app.action_urn("failed-1")
    started, ended = env.recorded.run_events(run, 2)
    assert ended["result"] == {"type": "FAILURE", "nativeResultType": "PATH_NOT_FOUND"}
    assert env.recorded.aspect(run, "dataProcessInstanceProperties")["customProperties"]["errorClass"] \
        == "PATH_NOT_FOUND"
    assert env.recorded.run_events(listener.app.run_urn, 2)[-1]["result"]["type"] == "FAILURE"


def test_a_pipeline_with_the_listener_attached_records_its_operations_once(env: Env) -> None:
    from spark_emitter.pipeline import parse

    source, out = env.root / "merge.csv", env.root / "merge-out"
    source.write_text("a,1\nb,2\n")
    pipeline = parse({"name": "Merged", "stages": [
        {"name": "In", "plugin": {"name": "File", "type": "batchsource", "properties": {
            "referenceName": "merge", "path": str(source), "format": "csv", "schema": "k string, v int"}}},
        {"name": "Rename", "plugin": {"name": "Projection", "type": "transform", "properties": {"rename": "v:value"}}},
        {"name": "Out", "plugin": {"name": "File", "type": "batchsink", "properties": {
            "referenceName": "merge-out", "path": str(out), "format": "parquet"}}}],
        "connections": [{"from": "In", "to": "Rename"}, {"from": "Rename", "to": "Out"}]})
    listener = attach(env.spark, server=env.url, token=TOKEN, job="merged")
    try:
        result = run(env, pipeline)
        assert listener.flush(60) and listener.counts.failed == 0
    finally:
        listener.close(30)
    assert result.status == "SUCCEEDED", result.error
    target = files(out)
    runs = env.recorded.runs_producing(target, 2)
    assert result.run_urn in runs and len(runs) == 2
    action_run = next(r for r in runs if r != result.run_urn)
    assert operations_of(env, action_run) == []  # the listener's operations for the target are not recorded
    assert {op["name"] for op in operations_of(env, result.run_urn)} == {"In.read", "Rename.rename v", "Out.write"}
    assert incoming(env, target, "value") == {files(source): ["v"]}
    body = env.v3(f"/datasets/{ds(target)}/lineage/fields/value/operations?direction=incoming&start=0&end=now%2B1h")
    assert [p["urn"] for group in body["incoming"] for p in group["programs"]] == [result.program_urn]


def test_a_python_stage_runs_from_a_virtualenv_that_is_not_activated(env: Env) -> None:
    from tests.support.python_stage_pipeline import BARE_PATH, recorded_lineage, run_unactivated

    assert not any(Path(d, "lodestar").exists() for d in BARE_PATH.split(":"))  # not found through PATH
    ran = run_unactivated(env.root, "Shouted", env.url, TOKEN, "--master", "local[1]")
    assert recorded_lineage(env.client, env.root, "Shouted", ran.run_urn) == {
        "operations": [("In.read", "READ", "IN", (), ("name", "n")),
                       ("Out.write", "WRITE", "OUT", (("In.read", "n"), ("Shout.upper", "name")), ()),
                       ("Shout.upper", "TRANSFORM", "-", (("In.read", "name"),), ("name",))],
        "incoming": {"name": {"IN": ["name"]}, "n": {"IN": ["n"]}},
        "rows": [("ANN", 1), ("BOB", 2), ("CY", 3)]}
