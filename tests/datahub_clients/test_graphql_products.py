"""Data products through the GraphQL API: createDataProduct, updateDataProduct,
batchSetDataProduct and deleteDataProduct write what DataHub's SDK reads back, and
listDataProductAssets lists the assets."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DataProductPropertiesClass,
    DatasetPropertiesClass,
    DomainPropertiesClass,
    DomainsClass,
)

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, post_graphql, wait_indexed

SALES = "urn:li:domain:sales"
ORDERS, REFUNDS = dataset_urn("sales.orders"), dataset_urn("sales.refunds")
PRODUCT = "urn:li:dataProduct:revenue"
CREATE = ("mutation c($input: CreateDataProductInput!) { createDataProduct(input: $input)"
          " { urn type properties { name description } domain { domain { urn } } } }")
ASSETS = ("query l($urn: String!, $input: SearchAcrossEntitiesInput!) { listDataProductAssets(urn: $urn, input: $input)"
          " { start count total searchResults { entity { urn } } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-products") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=SALES, aspect=DomainPropertiesClass(name="Sales")),
                    *(MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(name=u[-20:]))
                      for u in (ORDERS, REFUNDS))])
        yield live


def call(server, query: str, variables: dict) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    return answer.json()


def stored(server, urn: str, cls):
    client = graph(server)
    try:
        return client.get_aspect(urn, cls)
    finally:
        client.close()


def test_a_data_product_is_made_given_assets_renamed_and_deleted(server):
    made = call(server, CREATE, {"input": {"id": "revenue", "domainUrn": SALES,
                                           "properties": {"name": "Revenue", "description": "money in"}}})
    assert made == {"data": {"createDataProduct": {
        "urn": PRODUCT, "type": "DATA_PRODUCT", "properties": {"name": "Revenue", "description": "money in"},
        "domain": {"domain": {"urn": SALES}}}}}
    assert stored(server, PRODUCT, DomainsClass).domains == [SALES]
    for resources in ([ORDERS], [ORDERS, REFUNDS]):
        answer = call(server, "mutation s($input: BatchSetDataProductInput!) { batchSetDataProduct(input: $input) }",
                      {"input": {"dataProductUrn": PRODUCT, "resourceUrns": resources}})
        assert answer == {"data": {"batchSetDataProduct": True}}
    assert [a.destinationUrn for a in stored(server, PRODUCT, DataProductPropertiesClass).assets] == [ORDERS, REFUNDS]
    page = call(server, ASSETS, {"urn": PRODUCT, "input": {"query": "*", "start": 1, "count": 5}})
    assert page == {"data": {"listDataProductAssets": {"start": 1, "count": 1, "total": 2,
                                                       "searchResults": [{"entity": {"urn": REFUNDS}}]}}}
    renamed = call(server, "mutation u($urn: String!, $input: UpdateDataProductInput!) { updateDataProduct("
                           "urn: $urn, input: $input) { properties { name description } } }",
                   {"urn": PRODUCT, "input": {"name": "Income"}})
    assert renamed["data"]["updateDataProduct"]["properties"] == {"name": "Income", "description": "money in"}
    assert len(stored(server, PRODUCT, DataProductPropertiesClass).assets) == 2
    assert call(server, "mutation d($urn: String!) { deleteDataProduct(urn: $urn) }", {"urn": PRODUCT}) == {
        "data": {"deleteDataProduct": True}}
    assert stored(server, PRODUCT, DataProductPropertiesClass) is None


def test_a_data_product_needs_a_domain_and_existing_assets(server):
    nowhere = call(server, CREATE, {"input": {"id": "x", "domainUrn": "urn:li:domain:nowhere",
                                              "properties": {"name": "X"}}})
    assert nowhere["data"]["createDataProduct"] is None and "does not exist" in nowhere["errors"][0]["message"]
    assert stored(server, "urn:li:dataProduct:x", DataProductPropertiesClass) is None
    call(server, CREATE, {"input": {"id": "y", "domainUrn": SALES, "properties": {"name": "Y"}}})
    missing = call(server, "mutation s($input: BatchSetDataProductInput!) { batchSetDataProduct(input: $input) }",
                   {"input": {"dataProductUrn": "urn:li:dataProduct:y",
                              "resourceUrns": [ORDERS, dataset_urn("sales.nothing")]}})
    assert missing["data"]["batchSetDataProduct"] is None and "does not exist" in missing["errors"][0]["message"]
    assert not stored(server, "urn:li:dataProduct:y", DataProductPropertiesClass).assets


def test_an_asset_names_the_products_it_is_in(server):
    call(server, "mutation c($input: CreateDataProductInput!) { createDataProduct(input: $input) { urn } }",
         {"input": {"id": "refunds", "domainUrn": SALES, "properties": {"name": "Refunds"}}})
    call(server, "mutation s($input: BatchSetDataProductInput!) { batchSetDataProduct(input: $input) }",
         {"input": {"dataProductUrn": "urn:li:dataProduct:refunds", "resourceUrns": [REFUNDS]}})
    wait_indexed(server)
    answer = call(server, "query r($urn: String!) { dataset(urn: $urn) { relationships(input: {types:"
                          " [\"DataProductContains\"], direction: INCOMING}) { total relationships { type entity"
                          " { urn } } } } }", {"urn": REFUNDS})
    assert answer == {"data": {"dataset": {"relationships": {"total": 1, "relationships": [
        {"type": "DataProductContains", "entity": {"urn": "urn:li:dataProduct:refunds"}}]}}}}
