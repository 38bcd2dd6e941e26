"""Metadata tests and views through the GraphQL API: createTest and updateTest write the `testInfo` aspect
DataHub's SDK reads back, `test` answers it, listTests lists the tests, and a test that exists
is not made twice nor one that does not exist changed."""

from __future__ import annotations

import pytest
from datahub.metadata import schema_classes as models  # its Test* classes, kept from pytest's collection

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import graph, live_server, post_graphql, wait_indexed
from tests.support.server import TOKEN

FIELDS = "urn name category description definition { json }"
UPDATE = "mutation u($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-managed") / "data") as live:
        yield live


def call(server, query: str, variables: dict) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    return answer.json()


def create(server, given: dict) -> dict:
    return call(server, "mutation c($input: CreateTestInput!) { createTest(input: $input) }", {"input": given})


def read(server, urn: str) -> dict | None:
    return call(server, f"query t($urn: String!) {{ test(urn: $urn) {{ {FIELDS} }} }}", {"urn": urn})["data"]["test"]


def stored(server, urn: str) -> models.TestInfoClass | None:
    client = graph(server)
    try:
        return client.get_aspect(urn, models.TestInfoClass)
    finally:
        client.close()


def test_a_test_is_made_changed_and_listed(server):
    given = {"id": "owned", "name": "Every table has an owner", "category": "Governance",
             "description": "tables without owners fail", "definition": {"json": '{"on": {"types": ["dataset"]}}'}}
    assert create(server, given) == {"data": {"createTest": "urn:li:test:owned"}}
    info = stored(server, "urn:li:test:owned")
    assert (info.name, info.category, info.definition.type, info.definition.json) == (
        "Every table has an owner", "Governance", "JSON", '{"on": {"types": ["dataset"]}}')
    assert read(server, "urn:li:test:owned") == {
        "urn": "urn:li:test:owned", "name": "Every table has an owner", "category": "Governance",
        "description": "tables without owners fail", "definition": {"json": '{"on": {"types": ["dataset"]}}'}}
    changed = call(server, UPDATE,
                   {"urn": "urn:li:test:owned", "input": {"name": "Owned", "category": "Quality",
                                                          "definition": {"json": "{}"}}})
    assert changed == {"data": {"updateTest": "urn:li:test:owned"}}
    assert read(server, "urn:li:test:owned") == {"urn": "urn:li:test:owned", "name": "Owned", "category": "Quality",
                                                 "description": None, "definition": {"json": "{}"}}
    assert create(server, {"name": "Described", "category": "Docs", "definition": {"json": "{}"}})["data"][
        "createTest"].startswith("urn:li:test:")
    wait_indexed(server)
    listed = call(server, "query l($input: ListTestsInput!) { listTests(input: $input) { start count total"
                          " tests { urn name } } }", {"input": {"start": 0, "count": 1}})["data"]["listTests"]
    assert (listed["start"], listed["count"], listed["total"], len(listed["tests"])) == (0, 1, 2, 1)


def test_a_test_is_not_made_twice_nor_a_missing_one_changed(server):
    given = {"id": "twice", "name": "First", "category": "A", "definition": {"json": "{}"}}
    assert create(server, given)["data"]["createTest"] == "urn:li:test:twice"
    again = create(server, {**given, "name": "Second"})
    assert again["data"]["createTest"] is None and "exists" in again["errors"][0]["message"]
    assert stored(server, "urn:li:test:twice").name == "First"
    missing = call(server, UPDATE,
                   {"urn": "urn:li:test:nowhere", "input": {"name": "N", "category": "C", "definition": {}}})
    assert missing["data"]["updateTest"] is None and "does not exist" in missing["errors"][0]["message"]
    assert stored(server, "urn:li:test:nowhere") is None


VIEW = "urn name viewType description definition { entityTypes filter { operator filters { field values condition } } }"
PII = {"entityTypes": ["DATASET", "DASHBOARD"], "filter": {"operator": "OR", "filters": [
    {"field": "tags", "values": ["urn:li:tag:pii"], "condition": "EQUAL"},
    {"field": "platform", "values": ["urn:li:dataPlatform:hive"]}]}}


def views(server, operation: str, given: dict, token: str = TOKEN) -> dict:
    input_type = {"listGlobalViews": "ListGlobalViewsInput", "listMyViews": "ListMyViewsInput"}[operation]
    query = f"query l($input: {input_type}!) {{ {operation}(input: $input) {{ total views {{ urn }} }} }}"
    answer = post_graphql(server, {"query": query, "variables": {"input": given}}, token=token)
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    return answer.json()["data"][operation]


def test_views_are_made_listed_changed_and_deleted(server):
    made = call(server, f"mutation c($input: CreateViewInput!) {{ createView(input: $input) {{ {VIEW} }} }}",
                {"input": {"viewType": "GLOBAL", "name": "Sensitive", "description": "pii", "definition": PII}})
    assert "errors" not in made, made
    view = made["data"]["createView"]
    assert view["urn"].startswith("urn:li:dataHubView:") and view["viewType"] == "GLOBAL"
    assert view["definition"] == {"entityTypes": ["DATASET", "DASHBOARD"], "filter": {"operator": "OR", "filters": [
        {"field": "tags", "values": ["urn:li:tag:pii"], "condition": "EQUAL"},
        {"field": "platform", "values": ["urn:li:dataPlatform:hive"], "condition": "EQUAL"}]}}
    client = graph(server)
    try:
        info = client.get_aspect(view["urn"], models.DataHubViewInfoClass)
    finally:
        client.close()
    assert info.definition.entityTypes == ["dataset", "dashboard"] and len(info.definition.filter.or_) == 2
    mine = call(server, "mutation c($input: CreateViewInput!) { createView(input: $input) { urn } }",
                {"input": {"viewType": "PERSONAL", "name": "Mine", "definition": {
                    "entityTypes": [], "filter": {"operator": "AND", "filters": []}}}})["data"]["createView"]["urn"]
    wait_indexed(server)
    assert [v["urn"] for v in views(server, "listGlobalViews", {"start": 0, "count": 20})["views"]] == [view["urn"]]
    assert [v["urn"] for v in views(server, "listMyViews", {"viewType": "PERSONAL"})["views"]] == [mine]
    assert views(server, "listMyViews", {})["total"] == 2
    stranger = principal_with_grants(server, "stranger", [("*", ["READ"])])
    assert views(server, "listMyViews", {}, token=stranger)["total"] == 0

    changed = call(server, f"mutation u($urn: String!, $input: UpdateViewInput!) {{ updateView(urn: $urn, input:"
                           f" $input) {{ {VIEW} }} }}", {"urn": view["urn"], "input": {"name": "Secret"}})
    assert changed["data"]["updateView"]["name"] == "Secret"
    assert changed["data"]["updateView"]["description"] == "pii"
    deleted = call(server, "mutation d($urn: String!) { deleteView(urn: $urn) }", {"urn": view["urn"]})
    assert deleted == {"data": {"deleteView": True}}
    wait_indexed(server)
    assert views(server, "listGlobalViews", {})["total"] == 0
    again = call(server, "mutation d($urn: String!) { deleteView(urn: $urn) }", {"urn": view["urn"]})
    assert again["data"]["deleteView"] is None and "does not exist" in again["errors"][0]["message"]
