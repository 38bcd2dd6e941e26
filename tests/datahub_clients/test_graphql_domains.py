"""DataHub's domain operations over GraphQL (listDomains, createDomain, setDomain, unsetDomain),
with variables as DataHub's web app sends them (numbers and booleans as text); results read back
through Lodestar's own API."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import requests
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetPropertiesClass

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import emit, live_server, post_graphql, wait_indexed
from tests.support.server import TOKEN, LiveServer

DATASET = "urn:li:dataset:(urn:li:dataPlatform:kafka,domains.orders,PROD)"
LIST = """query l($input: ListDomainsInput!) { listDomains(input: $input) {
  start count total domains { urn id properties { name description } } } }"""
CREATE = "mutation c($input: CreateDomainInput!) { createDomain(input: $input) }"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-domains") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=DatasetPropertiesClass(name="orders"))])
        yield live


def graphql(server: LiveServer, query: str, token: str = TOKEN, **variables: Any) -> dict[str, Any]:
    answer = post_graphql(server, {"query": query, "variables": variables}, token)
    assert answer.status_code == 200, answer.text
    return answer.json()


def aspect(server: LiveServer, urn: str, name: str) -> Any:
    answer = requests.get(f"{server.url}/v1/entities/{quote(urn, safe='')}/aspects/{name}",
                          headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return answer.json()["value"] if answer.status_code == 200 else None


def test_create_list_and_set_domains(server):
    assert graphql(server, LIST, input={"start": "0", "count": "20"})["data"]["listDomains"]["total"] == 0
    created = graphql(server, CREATE, input={"id": "finance", "name": "Finance", "description": "money"})
    assert created == {"data": {"createDomain": "urn:li:domain:finance"}}
    other = graphql(server, CREATE, input={"name": "Sales"})["data"]["createDomain"]
    assert other.startswith("urn:li:domain:") and aspect(server, other, "domainProperties")["name"] == "Sales"
    assert aspect(server, "urn:li:domain:finance", "ownership")["owners"][0]["owner"] == "urn:li:corpuser:admin"
    again = graphql(server, CREATE, input={"id": "finance", "name": "Finance"})
    assert "already exists" in again["errors"][0]["message"]
    wait_indexed(server)
    page = graphql(server, LIST, input={"start": "0", "count": "1"})["data"]["listDomains"]
    assert page["total"] == 2 and page["count"] == 1 and len(page["domains"]) == 1
    listed = graphql(server, LIST, input={"start": "0", "count": "20"})["data"]["listDomains"]["domains"]
    assert [d["urn"] for d in listed] == sorted(["urn:li:domain:finance", other])  # in URN order
    assert {"urn": "urn:li:domain:finance", "id": "finance",
            "properties": {"name": "Finance", "description": "money"}} in listed

    set_domain = "mutation s($e: String!, $d: String!) { setDomain(entityUrn: $e, domainUrn: $d) }"
    assert graphql(server, set_domain, e=DATASET, d="urn:li:domain:finance")["data"]["setDomain"] is True
    assert aspect(server, DATASET, "domains") == {"domains": ["urn:li:domain:finance"]}
    missing = graphql(server, set_domain, e=DATASET, d="urn:li:domain:nowhere")
    assert "domainUrn: urn:li:domain:nowhere does not exist" in missing["errors"][0]["message"]
    unset = "mutation u($e: String!) { unsetDomain(entityUrn: $e) }"
    assert graphql(server, unset, e=DATASET)["data"]["unsetDomain"] is True
    assert aspect(server, DATASET, "domains") == {"domains": []}

    reader = principal_with_grants(server, "domains-reader", [("instance", ["READ"])])
    refused = graphql(server, CREATE, reader, input={"id": "hr", "name": "HR"})
    assert "forbidden" in refused["errors"][0]["message"]
    assert aspect(server, "urn:li:domain:hr", "domainProperties") is None


def test_numbers_and_booleans_as_text_are_read_as_datahub_reads_them(server):
    text = graphql(server, LIST, input={"start": "0", "count": "5"})["data"]["listDomains"]
    assert text == graphql(server, LIST, input={"start": 0, "count": 5})["data"]["listDomains"]
    flags = """query s($input: SearchAcrossEntitiesInput!) { searchAcrossEntities(input: $input) { total } }"""
    hidden = {"query": "*", "types": ["DATASET"], "searchFlags": {"includeSoftDeleted": "false"}}
    assert graphql(server, flags, input=hidden)["data"]["searchAcrossEntities"]["total"] == 1
    not_a_number = graphql(server, LIST, input={"start": "zero"})
    assert "start" in not_a_number["errors"][0]["message"] and not_a_number.get("data") is None
