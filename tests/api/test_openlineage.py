"""OpenLineage intake: the real openlineage-python client's HTTP transport posts RunEvents to
POST /api/v1/lineage; jobs, runs, inputs and outputs, schema facets and the columnLineage facet
become runs, accesses, schemas and field operations that the lineage APIs answer from."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.generated.column_lineage_dataset import (
    ColumnLineageDatasetFacet,
    Fields,
    InputField,
    Transformation,
)
from openlineage.client.generated.documentation_job import DocumentationJobFacet
from openlineage.client.generated.job_type_job import JobTypeJobFacet
from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields
from openlineage.client.generated.sql_job import SQLJobFacet
from openlineage.client.serde import Serde
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

from gms.service import Gms
from ingest.openlineage import dataset_urn
from mcl_processor.embedded import SqliteReadModels
from tests.support.server import TOKEN

PRODUCER = "https://example.com/lodestar-tests"
ORDERS = dataset_urn("postgres://db:5432", "shop.public.orders")
CUSTOMERS = dataset_urn("postgres://db:5432", "shop.public.customers")
REPORT = dataset_urn("s3://warehouse", "reports/order_summary")


@pytest.fixture
def client(server):
    transport = HttpTransport(HttpConfig(url=server.url, auth=ApiKeyTokenProvider({"apiKey": TOKEN}), timeout=10,
                                         retry={"total": 0}))
    return OpenLineageClient(transport=transport)


def schema(*names: str) -> SchemaDatasetFacet:
    return SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=n, type="VARCHAR") for n in names])


def event(state: RunState, run_id: str, at: datetime, outputs: bool = True) -> RunEvent:
    inputs = [InputDataset("postgres://db:5432", "shop.public.orders", facets={"schema": schema("id", "amount",
                                                                                                   "customer_id")}),
              InputDataset("postgres://db:5432", "shop.public.customers", facets={"schema": schema("id", "name")})]
    lineage = ColumnLineageDatasetFacet(fields={
        "customer": Fields(inputFields=[InputField("postgres://db:5432", "shop.public.customers", "name", [
            Transformation(type="DIRECT", subtype="IDENTITY")])]),
        "total": Fields(inputFields=[InputField("postgres://db:5432", "shop.public.orders", "amount", [
            Transformation(type="DIRECT", subtype="AGGREGATION", description="sum")])],
            transformationDescription="sum of amount per customer"),
    })
    out = [OutputDataset("s3://warehouse", "reports/order_summary",
                         facets={"schema": schema("customer", "total"), "columnLineage": lineage})] if outputs else []
    return RunEvent(eventType=state, eventTime=at.isoformat(), run=Run(runId=run_id),
                    job=Job(namespace="etl", name="order_summary"), producer=PRODUCER, inputs=inputs, outputs=out)


def wait_for_index(server) -> None:
    server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})


def test_run_events_become_runs_accesses_schemas_and_field_operations(server, client):
    run_id = str(uuid.uuid4())
    start, end = datetime(2024, 5, 1, 10, 0, tzinfo=UTC), datetime(2024, 5, 1, 10, 5, tzinfo=UTC)
    client.emit(event(RunState.START, run_id, start, outputs=False))
    client.emit(event(RunState.RUNNING, run_id, start))
    client.emit(event(RunState.COMPLETE, run_id, end))
    wait_for_index(server)
    run = server.gms.store.get(f"urn:li:dataProcessInstance:{run_id}", "dataProcessInstanceRelationships").value
    assert run["parentTemplate"] == "urn:li:dataJob:(urn:li:dataFlow:(openlineage,etl,PROD),order_summary)"
    derived = derived_run(server, run_id)
    assert (derived["start"], derived["end"], derived["status"]) == (int(start.timestamp() * 1000),
                                                                     int(end.timestamp() * 1000), "SUCCESS")
    window = f"start={int(start.timestamp()) - 1}&end={int(end.timestamp()) + 1}"
    lineage = server.client().call("GET", f"/v3/namespaces/default/datasets/{quote(REPORT, safe='')}/lineage?"
                                          f"{window}&collapse=run")
    assert {(r["data"], tuple(r["accesses"])) for r in lineage["relations"]} == {
        ("dataset.postgres.shop.public.orders", ("read",)), ("dataset.postgres.shop.public.customers", ("read",)),
        ("dataset.s3.reports/order_summary", ("write",))}
    summary = server.client().call("GET", f"/v3/namespaces/default/datasets/{quote(REPORT, safe='')}/lineage/fields/"
                                          f"total?{window}&direction=incoming")
    assert summary["incoming"] == [{"namespace": "postgres", "dataset": "shop.public.orders", "urn": ORDERS,
                                    "fields": ["amount"]}]
    operations = server.client().call("GET", f"/v3/namespaces/default/datasets/{quote(REPORT, safe='')}/lineage/"
                                             f"fields/total/operations?{window}&direction=incoming")
    assert [op["description"] for op in operations["incoming"][0]["operations"]][1] == "sum of amount per customer"
    schema_fields = server.gms.store.get(CUSTOMERS, "schemaMetadata").value["fields"]
    assert [f["fieldPath"] for f in schema_fields] == ["id", "name"]


def test_a_job_becomes_a_data_job_entity_with_its_facets_and_its_datasets(server, client):
    job = Job(namespace="etl", name="order_summary", facets={
        "jobType": JobTypeJobFacet(processingType="BATCH", integration="SPARK", jobType="QUERY"),
        "documentation": DocumentationJobFacet(description="Totals per customer, every night"),
        "sql": SQLJobFacet(query="SELECT customer, sum(amount) FROM orders GROUP BY customer")})
    done = event(RunState.COMPLETE, str(uuid.uuid4()), datetime(2024, 5, 2, tzinfo=UTC))
    client.emit(RunEvent(eventType=done.eventType, eventTime=done.eventTime, run=done.run, job=job,
                         producer=PRODUCER, inputs=done.inputs, outputs=done.outputs))
    wait_for_index(server)
    urn = "urn:li:dataJob:(urn:li:dataFlow:(openlineage,etl,PROD),order_summary)"
    aspects = server.client().entity(urn)["aspects"]
    info = aspects["dataJobInfo"]["value"]
    assert (info["name"], info["type"], info["description"]) == (
        "order_summary", {"string": "QUERY"}, "Totals per customer, every night")
    assert info["customProperties"] == {"namespace": "etl", "integration": "SPARK", "processingType": "BATCH",
                                        "sql": "SELECT customer, sum(amount) FROM orders GROUP BY customer"}
    assert aspects["dataJobInputOutput"]["value"] == {"inputDatasets": [ORDERS, CUSTOMERS],
                                                      "outputDatasets": [REPORT]}
    flow = server.client().entity("urn:li:dataFlow:(openlineage,etl,PROD)")["aspects"]["dataFlowInfo"]["value"]
    assert flow["name"] == "etl"
    hits = server.client().call("GET", "/v1/search?query=order_summary&types=dataJob")["results"]
    assert [hit["urn"] for hit in hits] == [urn]
    downstream = server.client().call("GET", f"/v1/lineage?urn={quote(ORDERS, safe='')}&direction=downstream")
    assert urn in {node["urn"] for node in downstream["nodes"]}


def test_documentation_and_tags_facets_as_dbt_ol_sends_them(server):
    """dbt-ol: a model's description in each dataset's documentation facet, its tags (and meta) in
    the run's tags facet (the client adds its version there); a tags facet of a dataset may tag
    one of its fields."""
    table = dataset_urn("duckdb:///data/shop.duckdb", "shop.main.customer_revenue")
    server.client().call("POST", "/v1/proposals", {"proposals": [{
        "entityUrn": table, "changeType": "UPSERT", "aspectName": "datasetProperties",
        "aspect": {"json": {"customProperties": {"owner_team": "finance"}}}}]})
    status, body = server.client().request("POST", "/api/v1/lineage", {
        "eventType": "COMPLETE", "eventTime": "2024-05-02T08:00:00Z", "producer": PRODUCER,
        "run": {"runId": str(uuid.uuid4()), "facets": {"tags": {"tags": [
            {"key": "mart", "value": "true", "source": "DBT"}, {"key": "finance", "value": "true", "source": "DBT"},
            {"key": "owner", "value": "ada", "source": "DBT_META"},
            {"key": "openlineage_client_version", "value": "1.54.0", "source": "OPENLINEAGE_CLIENT"}]}}},
        "job": {"namespace": "shop", "name": "shop.main.shop.customer_revenue"},
        "outputs": [{"namespace": "duckdb:///data/shop.duckdb", "name": "shop.main.customer_revenue", "facets": {
            "documentation": {"description": "Revenue of shipped orders per customer."},
            "tags": {"tags": [{"key": "gold", "value": "true"}, {"key": "pii", "value": "true", "field": "name"}]}}}]})
    assert status == 201, body
    wait_for_index(server)
    aspects = server.client().entity(table)["aspects"]
    assert aspects["datasetProperties"]["value"] == {"description": "Revenue of shipped orders per customer.",
                                                     "customProperties": {"owner_team": "finance"}}
    assert aspects["globalTags"]["value"] == {"tags": [{"tag": "urn:li:tag:gold"}]}
    job = "urn:li:dataJob:(urn:li:dataFlow:(openlineage,shop,PROD),shop.main.shop.customer_revenue)"
    tags = server.client().entity(job)["aspects"]["globalTags"]["value"]["tags"]
    assert sorted(t["tag"] for t in tags) == ["urn:li:tag:finance", "urn:li:tag:mart", "urn:li:tag:owner:ada"]


def test_an_input_schema_fills_in_a_dataset_without_one_an_output_schema_replaces_it(server, client):
    """Airflow's SQL operators send the schemas of the tables they read, as information_schema
    has them: they do not replace the schema another source (DataHub's postgres source, with
    column comments) gave those tables; the output's schema is the job's own and replaces."""
    described = {"schemaName": "orders", "platform": "urn:li:dataPlatform:postgres", "version": 0, "hash": "",
                 "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
                 "fields": [{"fieldPath": "amount", "nativeDataType": "numeric(10,2)", "description": "In euros",
                             "type": {"type": {"com.linkedin.schema.NumberType": {}}}}]}
    server.client().call("POST", "/v1/proposals", {"proposals": [
        {"entityUrn": urn, "changeType": "UPSERT", "aspectName": "schemaMetadata", "aspect": {"json": described}}
        for urn in (ORDERS, REPORT)]})
    client.emit(event(RunState.COMPLETE, str(uuid.uuid4()), datetime(2024, 5, 2, tzinfo=UTC)))
    wait_for_index(server)
    orders = server.client().entity(ORDERS)["aspects"]["schemaMetadata"]["value"]
    assert orders["fields"] == described["fields"]
    report = server.client().entity(REPORT)["aspects"]["schemaMetadata"]["value"]
    assert [f["fieldPath"] for f in report["fields"]] == ["customer", "total"]
    customers = server.client().entity(CUSTOMERS)["aspects"]["schemaMetadata"]["value"]
    assert [f["fieldPath"] for f in customers["fields"]] == ["id", "name"]


def test_a_failed_run(server, client):
    run_id = str(uuid.uuid4())
    at = datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
    client.emit(event(RunState.START, run_id, at))
    client.emit(event(RunState.FAIL, run_id, at.replace(minute=1)))
    wait_for_index(server)
    assert derived_run(server, run_id)["status"] == "FAILURE"


def test_a_bad_event_is_rejected_with_a_reason(server):
    status, body = server.client().request("POST", "/api/v1/lineage", {
        "eventType": "START", "eventTime": "yesterday", "run": {"runId": "x"}, "job": {"namespace": "n", "name": "j"}})
    assert status == 400 and body["message"] == "eventTime: 'yesterday' is not an ISO 8601 time"
    status, body = server.client().request("POST", "/api/v1/lineage", {
        "eventType": "START", "eventTime": "2024-01-01T00:00:00Z", "run": {"runId": "x"}, "job": {"namespace": "n"}})
    assert status == 400 and body["message"] == "job.name: must be a non-empty string"


def derived_run(server, run_id: str) -> dict:
    return server.client().call("GET", f"/v1/runs/{quote(f'urn:li:dataProcessInstance:{run_id}', safe='')}")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=20)
PATHS = [("eventType",), ("eventTime",), ("run",), ("run", "runId"), ("run", "facets"), ("run", "facets", "parent"),
         ("job",), ("job", "name"), ("inputs",), ("outputs",), ("outputs", 0, "facets"),
         ("outputs", 0, "facets", "columnLineage"), ("outputs", 0, "facets", "columnLineage", "fields", "total"),
         ("outputs", 0, "facets", "columnLineage", "fields", "total", "inputFields", 0),
         ("inputs", 0, "facets", "schema"), ("inputs", 0, "facets", "schema", "fields", 0),
         ("outputs", 0, "facets", "documentation"), ("outputs", 0, "facets", "documentation", "description"),
         ("outputs", 0, "facets", "tags"), ("run", "facets", "tags"), ("job", "facets")]


@given(replacements=st.lists(st.tuples(st.sampled_from(PATHS), json_values), min_size=1, max_size=3))
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_mangled_events_are_accepted_or_refused_with_a_reason_never_a_server_error(ol_server, replacements):
    body = json.loads(Serde.to_json(event(RunState.COMPLETE, str(uuid.uuid4()), datetime(2024, 5, 3, tzinfo=UTC))))
    for path, value in replacements:
        target = body
        for key in path[:-1]:
            try:
                target = target[key]
            except (KeyError, IndexError, TypeError):
                break
        else:
            if isinstance(target, dict) or (isinstance(target, list) and isinstance(path[-1], int)
                                            and path[-1] < len(target)):
                target[path[-1]] = value
    status, answer = ol_server.client().request("POST", "/api/v1/lineage", body)
    assert status in (201, 400), (status, answer)
    if status == 400:
        assert answer["message"], answer


@pytest.fixture(scope="module")
def ol_server(tmp_path_factory):
    from tests.support.server import start_server  # one server for all the generated events

    service = Gms.embedded(tmp_path_factory.mktemp("ol") / "data")
    models = SqliteReadModels.in_data_dir(tmp_path_factory.mktemp("ol-models"), service.registry)
    live, thread = start_server(service, models)
    yield live
    thread.stop()
    models.close()
    service.close()
