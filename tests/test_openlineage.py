"""OpenLineage intake: the real openlineage-python client's HTTP transport posts RunEvents to
POST /api/v1/lineage; jobs, runs, inputs and outputs, schema facets and the columnLineage facet
become runs, accesses, schemas and field operations that the lineage APIs answer from."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from urllib.parse import quote

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.generated.column_lineage_dataset import (
    ColumnLineageDatasetFacet,
    Fields,
    InputField,
    Transformation,
)
from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

from ingest.openlineage import dataset_urn
from tests.conftest import TOKEN

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
