"""dbt (dbt-core + dbt-duckdb, in a venv of their own) on the project in dbt_project/: its run
through `dbt-ol` (openlineage-dbt) into Lodestar's OpenLineage endpoint, its artifacts (manifest,
catalog, run_results of `dbt build`) through DataHub's `dbt` source into Lodestar's REST API, and
both on the same project. Checked through Lodestar's API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dbt_project import MODELS, Project, build_project, datahub_dbt, dbt_node, dbt_ol_run, duckdb, job
from tests.support.integrations import aspects, field_lineage, fields, lineage, path_of, settled
from tests.support.processes import ServeProcess

# The first run builds the tool's venv from PyPI (tests/support/tool_venvs.py), minutes more
# than the test itself; below faulthandler_timeout (1,260 s), which would end the worker.
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return build_project(tmp_path_factory.mktemp("dbt"))


@pytest.fixture
def lodestar(tmp_path: Path) -> Iterator[ServeProcess]:
    with ServeProcess(tmp_path / "data") as serve:
        yield serve


def assert_openlineage_run(client) -> None:
    """What dbt-ol's events of `dbt run` became."""
    revenue = duckdb("main.customer_revenue")
    table = aspects(client, revenue)
    columns = fields(table["schemaMetadata"])
    assert list(columns) == ["customer_id", "country_code", "order_count", "revenue"]
    assert columns["revenue"]["description"] == "Revenue of the shipped orders in euros."
    assert table["datasetProperties"]["description"] == "Revenue of shipped orders per customer."
    # the model is a job with its SQL and its tags; its run completed
    model = aspects(client, job("customer_revenue"))
    assert "sum(p.amount) as revenue" in model["dataJobInfo"]["customProperties"]["sql"]
    assert {t["tag"] for t in model["globalTags"]["tags"]} == {"urn:li:tag:mart", "urn:li:tag:finance"}
    runs = client.call("GET", f"/v1/runs?program={path_of(job('customer_revenue'))}")["runs"]
    assert [run["status"] for run in runs] == ["SUCCESS"], runs
    # dataset lineage through the model's job, the sources' tables upstream of the staging models
    upstream = lineage(client, revenue, hops=4)
    assert {source for source, _ in upstream} >= {duckdb("main.stg_payments"), duckdb("raw.payments"),
                                                  job("customer_revenue"), job("stg_payments")}
    # column lineage: the mart's revenue comes from the payments' amount_cents
    revenue_field = f"urn:li:schemaField:({revenue},revenue)"
    nodes = {node["urn"] for node in field_lineage(client, revenue_field)["nodes"]}
    assert {f"urn:li:schemaField:({duckdb('main.stg_payments')},amount)",
            f"urn:li:schemaField:({duckdb('raw.payments')},amount_cents)"} <= nodes, nodes


def assert_datahub_dbt(client) -> None:
    """What DataHub's dbt source made of the artifacts."""
    customers = aspects(client, dbt_node("main.stg_customers"))
    assert customers["datasetProperties"]["description"] == "Customers, renamed and cleaned."
    columns = fields(customers["schemaMetadata"])
    assert columns["customer_id"]["nativeDataType"] == "INTEGER"
    assert columns["country_code"]["description"] == "ISO 3166 country code, upper case."
    assert {t["tag"] for t in columns["country_code"]["globalTags"]["tags"]} == {"urn:li:tag:dbt:pii"}
    assert {t["tag"] for t in customers["globalTags"]["tags"]} == {"urn:li:tag:dbt:staging"}
    assert "View" in customers["subTypes"]["typeNames"] or "Model" in customers["subTypes"]["typeNames"]
    # lineage: a model's node reads its refs' warehouse tables and is copied to its own table
    revenue = dbt_node("main.customer_revenue")
    assert {edge for edge in lineage(client, revenue) if "dataProcessInstance" not in edge[0]} == {
        (duckdb(f"main.{ref}"), revenue)
        for ref in ("stg_customers", "stg_orders", "stg_payments")}
    assert (revenue, duckdb("main.customer_revenue")) in lineage(client, duckdb("main.customer_revenue"))
    # the model's run in the build is a run of its own, with its result
    runs = [source for source, _ in lineage(client, revenue) if "dataProcessInstance" in source]
    assert len(runs) == 1, runs
    events = client.call("GET", f"/v1/timeseries/{path_of(runs[0])}/dataProcessInstanceRunEvent")["points"]
    assert events[-1]["result"]["type"] == "SUCCESS", events
    # and down to the columns
    fine = aspects(client, revenue)["upstreamLineage"]["fineGrainedLineages"]
    assert {"downstreams": [f"urn:li:schemaField:({revenue},revenue)"],
            "upstreams": [f"urn:li:schemaField:({duckdb('main.stg_payments')},amount)"]} in [
        {"downstreams": item["downstreams"], "upstreams": item["upstreams"]} for item in fine], fine
    # the dbt tests are assertions with the result of the run
    assertions = client.call("GET", "/v1/search?query=*&types=assertion&count=100")["results"]
    assert len(assertions) == 10, assertions
    results = [client.call("GET", f"/v1/timeseries/{path_of(hit['urn'])}/assertionRunEvent")["points"]
               for hit in assertions]
    assert {points[-1]["result"]["type"] for points in results} == {"SUCCESS"}


def test_dbt_ol_run_into_the_openlineage_endpoint(project, lodestar):
    dbt_ol_run(project, lodestar)
    settled(lodestar)
    client = lodestar.client()
    assert_openlineage_run(client)


def test_datahub_dbt_source_into_the_rest_api(project, lodestar, tmp_path):
    datahub_dbt(project, lodestar, tmp_path)
    settled(lodestar)
    client = lodestar.client()
    assert_datahub_dbt(client)


def test_both_on_the_same_project_make_one_table_entity_each(project, lodestar, tmp_path):
    dbt_ol_run(project, lodestar)
    datahub_dbt(project, lodestar, tmp_path)
    settled(lodestar)
    client = lodestar.client()
    assert_openlineage_run(client)
    assert_datahub_dbt(client)
    for model in MODELS:
        # one warehouse table per model, named alike by both; DataHub's dbt node beside it
        hits = client.call("GET", f"/v1/search?query={model}&types=dataset&count=100")["results"]
        assert {hit["urn"] for hit in hits} == {duckdb(f"main.{model}"), dbt_node(f"main.{model}")}, hits
        # no aspect of the table written by both: OpenLineage's schema stays as it first was
        table = path_of(duckdb(f"main.{model}"))
        versions = client.call("GET", f"/v1/entities/{table}/aspects/schemaMetadata/versions")
        assert len(versions["versions"]) == 1, versions
