"""DataHub's secrets through the GraphQL API: made, listed, given new values, read back and
deleted by an admin; the value lives in the secret store, never in the dataHubSecret aspect."""

from __future__ import annotations

import pytest
from datahub.metadata.schema_classes import DataHubSecretValueClass

from lodestar.secrets import fingerprint
from lodestar.secrets.beside import secret_store_of
from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import graph, live_server, post_graphql, wait_indexed

CREATE = "mutation c($input: CreateSecretInput!) { createSecret(input: $input) }"
UPDATE = "mutation u($input: UpdateSecretInput!) { updateSecret(input: $input) }"
DELETE = "mutation d($urn: String!) { deleteSecret(urn: $urn) }"
LIST = ("query l($input: ListSecretsInput!) { listSecrets(input: $input) { start count total"
        " secrets { urn name description } } }")
VALUES = "query v($input: GetSecretValuesInput!) { getSecretValues(input: $input) { name value } }"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-secrets") / "data") as live:
        yield live


def call(server, query: str, variables: dict, token: str | None = None) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables}, **({"token": token} if token else {}))
    assert answer.status_code == 200, answer.text
    return answer.json()


def ok(answer: dict) -> dict:
    assert "errors" not in answer, answer
    return answer["data"]


def values(server, *names: str) -> list[dict]:
    return ok(call(server, VALUES, {"input": {"secrets": list(names)}}))["getSecretValues"]


def test_a_secret_is_made_listed_changed_read_and_deleted(server):
    urn = ok(call(server, CREATE, {"input": {"name": "PG_PASSWORD", "value": "s3cret", "description": "warehouse"}}))[
        "createSecret"]
    assert urn == "urn:li:dataHubSecret:PG_PASSWORD"
    client = graph(server)
    try:
        stored = client.get_aspect(urn, DataHubSecretValueClass)
    finally:
        client.close()
    assert (stored.name, stored.value, stored.description) == ("PG_PASSWORD", fingerprint("s3cret"), "warehouse")
    assert stored.created.actor == "urn:li:corpuser:admin"
    ok(call(server, CREATE, {"input": {"name": "API_KEY", "value": "k-1"}}))
    wait_indexed(server)
    assert ok(call(server, LIST, {"input": {"start": 0, "count": 10}}))["listSecrets"] == {
        "start": 0, "count": 2, "total": 2, "secrets": [
            {"urn": "urn:li:dataHubSecret:API_KEY", "name": "API_KEY", "description": None},
            {"urn": urn, "name": "PG_PASSWORD", "description": "warehouse"}]}
    assert values(server, "PG_PASSWORD", "NOT_THERE") == [{"name": "PG_PASSWORD", "value": "s3cret"}]
    updated = ok(call(server, UPDATE, {"input": {"urn": urn, "name": "PG_PASSWORD", "value": "n3w"}}))
    assert updated["updateSecret"] == urn
    assert values(server, "PG_PASSWORD") == [{"name": "PG_PASSWORD", "value": "n3w"}]
    assert set(secret_store_of(server.gms.store).valid(urn)) == {fingerprint("n3w")}
    assert ok(call(server, DELETE, {"urn": urn}))["deleteSecret"] == urn
    assert values(server, "PG_PASSWORD", "API_KEY") == [{"name": "API_KEY", "value": "k-1"}]
    assert secret_store_of(server.gms.store).valid(urn) == {}


def test_bad_requests_and_callers_without_admin_are_refused(server):
    ok(call(server, CREATE, {"input": {"name": "TOKEN", "value": "t"}}))
    again = call(server, CREATE, {"input": {"name": "TOKEN", "value": "other"}})
    assert again["errors"][0]["extensions"]["code"] == 409
    assert values(server, "TOKEN") == [{"name": "TOKEN", "value": "t"}]
    renamed = call(server, UPDATE, {"input": {"urn": "urn:li:dataHubSecret:TOKEN", "name": "OTHER", "value": "x"}})
    assert renamed["errors"][0]["extensions"]["code"] == 400
    assert call(server, CREATE, {"input": {"name": "a,b", "value": "x"}})["errors"][0]["extensions"]["code"] == 400
    assert call(server, DELETE, {"urn": "urn:li:dataHubSecret:NONE"})["errors"][0]["extensions"]["code"] == 404
    writer = principal_with_grants(server, "secret-writer", [("instance", ["READ", "WRITE"])])
    for query, variables in ((VALUES, {"input": {"secrets": ["TOKEN"]}}), (LIST, {"input": {}}),
                             (CREATE, {"input": {"name": "MINE", "value": "x"}})):
        assert call(server, query, variables, writer)["errors"][0]["extensions"]["code"] == 403
