"""DataHub's policy operations on `/api/graphql` against Lodestar: `listPolicies` shows Lodestar's
grants as policies that are not editable, and the DataHub policies `createPolicy` and
`updatePolicy` store (filtered by state and editable); `deletePolicy` removes one. All of it needs
ADMIN on the instance, and a stored policy grants nothing."""

from __future__ import annotations

import pytest

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import live_server, post_graphql, wait_indexed

LIST = """query($input: ListPoliciesInput!) { listPolicies(input: $input) { start count total
  policies { urn type name description state editable privileges resources { type allResources resources }
             actors { users allUsers resourceOwners } } } }"""
CREATE = "mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }"
UPDATE = "mutation($urn: String!, $input: PolicyUpdateInput!) { updatePolicy(urn: $urn, input: $input) }"
DELETE = "mutation($urn: String!) { deletePolicy(urn: $urn) }"
STEWARDS = {"type": "METADATA", "name": "Stewards tag datasets", "description": "tags only", "state": "ACTIVE",
            "resources": {"type": "dataset", "allResources": True}, "privileges": ["EDIT_ENTITY_TAGS"],
            "actors": {"users": ["urn:li:corpuser:steward"], "resourceOwners": False, "allUsers": False,
                       "allGroups": False}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-policies") / "data") as live:
        yield live


def ask(server, query: str, token: str | None = None, **variables) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables}, **({"token": token} if token else {}))
    assert answer.status_code == 200, answer.text
    return answer.json()


def policies(server, **given) -> list[dict]:
    return ask(server, LIST, input={"start": 0, "count": 100, **given})["data"]["listPolicies"]["policies"]


def test_grants_are_listed_as_policies_that_are_not_editable(server):
    principal_with_grants(server, "analyst", [("default", ["READ"])])
    wait_indexed(server)
    shown = {p["name"]: p for p in policies(server)}
    grant = shown["analyst: READ on urn:li:container:default"]  # the namespace's URN
    assert (grant["urn"], grant["type"], grant["editable"], grant["privileges"]) == (
        "urn:li:accessGrants:analyst", "METADATA", False, ["READ"])
    assert grant["resources"] == {"type": None, "allResources": False, "resources": ["urn:li:container:default"]}
    assert grant["actors"] == {"users": ["urn:li:corpuser:analyst"], "allUsers": False, "resourceOwners": False}
    refused = ask(server, UPDATE, urn="urn:li:accessGrants:analyst", input=STEWARDS)["errors"][0]["message"]
    assert "/v1/access/grants" in refused


def test_a_policy_is_created_updated_filtered_and_deleted(server):
    urn = ask(server, CREATE, input=STEWARDS)["data"]["createPolicy"]
    assert urn.startswith("urn:li:dataHubPolicy:")
    wait_indexed(server)  # listed from the search index, as DataHub lists them
    [made] = [p for p in policies(server) if p["urn"] == urn]
    assert (made["name"], made["editable"], made["resources"]["type"], made["privileges"]) == (
        "Stewards tag datasets", True, "dataset", ["EDIT_ENTITY_TAGS"])
    wider = {**STEWARDS, "state": "INACTIVE", "privileges": ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_DOCS"],
             "actors": {"resourceOwners": False, "allUsers": True, "allGroups": False}}
    assert ask(server, UPDATE, urn=urn, input=wider)["data"]["updatePolicy"] == urn
    active_editable = [{"and": [{"field": "state", "values": ["ACTIVE"]}, {"field": "editable", "values": ["true"]}]}]
    assert urn not in [p["urn"] for p in policies(server, orFilters=active_editable)]
    [changed] = [p for p in policies(server, query="stewards") if p["urn"] == urn]
    assert (changed["state"], changed["actors"]["allUsers"]) == ("INACTIVE", True)
    assert ask(server, DELETE, urn=urn)["data"]["deletePolicy"] == urn
    assert urn not in [p["urn"] for p in policies(server)]


def test_policies_need_admin_on_the_instance_and_grant_nothing(server):
    token = principal_with_grants(server, "steward", [("instance", ["READ", "WRITE"])])
    for query, variables in ((LIST, {"input": {}}), (CREATE, {"input": STEWARDS})):
        errors = ask(server, query, token, **variables)["errors"]
        assert "has no ADMIN privilege on the instance" in errors[0]["message"]
    plain = {k: v for k, v in STEWARDS.items() if k != "description"}  # DataHub's input may leave it out
    assert "errors" not in ask(server, CREATE, input={**plain, "privileges": ["MANAGE_POLICIES"]})  # for the steward
    assert "errors" in ask(server, LIST, token, input={})  # and still grants it nothing
