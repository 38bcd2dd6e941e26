"""DataHub's paths of routes Lodestar has under its own too, against `lodestar serve`: Rest.li's
`GET /relationships` (the OpenAPI relationships route in Rest.li's shape) and GMS's OpenLineage
intake `POST /openapi/openlineage/api/v1/lineage`; written with DataHub's SDK, read back through
Lodestar's API."""

from __future__ import annotations

from urllib.parse import quote

import requests
from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    DatasetAssertionInfoClass,
    GlobalTagsClass,
    TagAssociationClass,
)

from tests.support import datahub_clients
from tests.support.datahub_clients import entity, indexed
from tests.support.processes import TOKEN

emitter, lodestar = datahub_clients.emitter, datahub_clients.lodestar
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def relationships(lodestar, query: str) -> requests.Response:
    return requests.get(f"{lodestar.url}/relationships?{query}", headers=AUTH, timeout=60)


def test_relationships_outgoing_and_incoming_in_restli_shape(emitter, lodestar):
    orders = make_dataset_urn("postgres", "paths.orders")
    column = f"urn:li:schemaField:({orders},amount)"
    check = "urn:li:assertion:paths-amount"
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=check, aspect=AssertionInfoClass(
        type="DATASET", datasetAssertion=DatasetAssertionInfoClass(
            dataset=orders, scope="DATASET_COLUMN", fields=[column], operator="BETWEEN"))))
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=orders, aspect=GlobalTagsClass(
        [TagAssociationClass("urn:li:tag:finance")])))
    indexed(lodestar.client())

    outgoing = relationships(lodestar, f"urn={quote(check)}&direction=OUTGOING&types=List(Asserts)")
    assert outgoing.status_code == 200, outgoing.text
    assert outgoing.json() == {"start": 0, "count": 2, "total": 2, "relationships": [
        {"type": "Asserts", "entity": orders}, {"type": "Asserts", "entity": column}]}
    for target in (orders, column):  # an entity's (a field's) assertions
        asserted = relationships(lodestar, f"urn={quote(target)}&direction=INCOMING&types=Asserts")
        assert asserted.json()["relationships"] == [{"type": "Asserts", "entity": check}], asserted.text
    tagged = relationships(lodestar, f"urn={quote('urn:li:tag:finance')}&direction=INCOMING&types=TaggedWith")
    assert tagged.json()["relationships"] == [{"type": "TaggedWith", "entity": orders}]
    assert relationships(lodestar, f"urn={quote(orders)}&direction=OUTGOING&types=TaggedWith&start=1"
                         ).json() == {"start": 1, "count": 0, "total": 1, "relationships": []}


def test_relationships_refuses_what_it_cannot_answer(lodestar):
    orders = quote(make_dataset_urn("postgres", "paths.orders"))
    for query, named in ((f"urn={orders}", "direction"), (f"urn={orders}&direction=UP", "direction"),
                         ("urn=notaurn&direction=INCOMING", "urn"),
                         # no lineage edge or searchable field holds a data contract's entity
                         (f"urn={orders}&direction=INCOMING&types=ContractFor", "ContractFor")):
        refused = relationships(lodestar, query)
        assert refused.status_code == 400 and named in refused.json()["message"], (query, refused.text)


def test_openlineage_events_at_datahub_path(lodestar):
    event = {"eventType": "COMPLETE", "eventTime": "2024-05-01T10:00:00Z", "producer": "paths-test",
             "run": {"runId": "0b9a7f2e-1c3d-4e5f-8a9b-0c1d2e3f4a5b"}, "job": {"namespace": "paths", "name": "load"},
             "inputs": [{"namespace": "postgres://db:5432", "name": "shop.public.orders"}],
             "outputs": [{"namespace": "postgres://db:5432", "name": "shop.public.totals"}]}
    done = requests.post(f"{lodestar.url}/openapi/openlineage/api/v1/lineage", json=event, headers=AUTH, timeout=60)
    assert done.status_code == 201, done.text
    job = "urn:li:dataJob:(urn:li:dataFlow:(openlineage,paths,PROD),load)"
    found = entity(lodestar.client(), job)
    assert found is not None, done.text
    inputs = found["dataJobInputOutput"]["value"]["inputDatasets"]
    assert len(inputs) == 1 and "shop.public.orders" in inputs[0]
