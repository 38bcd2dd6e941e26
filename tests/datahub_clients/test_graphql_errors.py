"""`POST /api/graphql` names what it does not serve and never answers a bad request with a 5xx:
fields, operations, filters, conditions, sorts, flags and enum values Lodestar lacks are
GraphQL errors naming them (200, DataHub's clients raise them as GraphError), a request that is
no GraphQL request is 400 with a JSON error, and generated documents of every shape the schema
allows (hypothesis-graphql) never get a 5xx."""

from __future__ import annotations

import json

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis_graphql import from_schema

from lodestar.api.graphql import MAX_DEPTH, schema
from tests.support.builders import dataset_urn
from tests.support.graphql import graph, live_server, post_graphql
from tests.support.server import TOKEN, LiveServer

ORDERS = dataset_urn("shop.orders")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-errors") / "data") as live:
        assert live.client().propose([{"entityUrn": ORDERS, "changeType": "UPSERT", "aspectName": "datasetProperties",
                                       "aspect": {"value": {"description": "orders"}}}])[0]["status"] == "applied"
        yield live


def errors(server: LiveServer, query: str, variables: dict | None = None) -> list[str]:
    answer = post_graphql(server, {"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    return [e["message"] for e in answer.json()["errors"]]


def search(filters: str = "", extra: str = "") -> str:
    or_filters = f"orFilters: [{{and: [{filters}]}}]" if filters else ""
    return f'{{ searchAcrossEntities(input: {{query: "*" {or_filters} {extra}}}) {{ total }} }}'


@pytest.mark.parametrize(("query", "named"), [
    ('{ searchAcrossEntities(input: {query: "*"}) { total bogusField } }', "bogusField"),
    ('{ assertion(urn: "urn:li:assertion:a") { urn } }', "assertion"),
    ('mutation { deleteAssertion(urn: "urn:li:assertion:a") }', "deleteAssertion"),
    (f'{{ dataset(urn: "{ORDERS}") {{ urn operations {{ actor }} }} }}', "operations"),
    ('{ searchAcrossEntities(input: {query: "*", types: [MLMODEL_DEPLOYMENT]}) { total } }', "MLMODEL_DEPLOYMENT"),
    (search('{field: "hasDescription", values: ["true"]}'), "'hasDescription'"),
    (search('{field: "platform", values: ["a"], condition: GREATER_THAN}'), "condition GREATER_THAN"),
    (search('{field: "platform", values: ["urn:li:dataPlatform:hive"], negated: true}'), "negated conditions"),
    (search('{field: "description", values: ["orders"]}'), "'description'"),
    (search('{field: "degree", values: ["1"]}'), "degree filters only lineage searches"),
    (search('{field: "platform", values: ["a\\"b"]}'), "double quote"),
    (search(extra='sortInput: {sortCriterion: {field: "lastModifiedAt", sortOrder: ASCENDING}}'), "'lastModifiedAt'"),
    (search(extra='viewUrn: "urn:li:dataHubView:v"'), "viewUrn"),
    (search(extra='searchFlags: {fetchExtraFields: ["x"]}'), "fetchExtraFields"),
    (search(extra="count: 100000"), "count: must be between 0 and 10000"),
    ('{ scrollAcrossEntities(input: {query: "*", scrollId: "garbage"}) { total } }', "scrollId"),
    ('{ entity(urn: "urn:li:webhook:1") { urn } }', "'webhook'"),
    ('{ searchAcrossEntities(input: {query: "*"} { total } }', "Syntax Error"),
    (f'{{ dataset(urn: "{ORDERS}") ' + "{ container " * 40 + "{ urn }" + " }" * 41, "nests over 32 selections"),
])
def test_what_is_not_served_is_a_graphql_error_naming_it(server, query, named):
    found = errors(server, query)
    assert any(named in message for message in found), found


def test_a_filter_of_too_many_alternatives_is_named(server):
    values = json.dumps([f"urn:li:dataPlatform:p{i}" for i in range(40)])
    found = errors(server, search(f'{{field: "platform", values: {values}}}'))
    assert "multiply out to 40 alternatives" in found[0]


def test_datahub_graph_raises_the_error_naming_the_field(server):
    client = graph(server)
    try:
        with pytest.raises(Exception, match="'hasDescription'"):
            list(client.get_urns_by_filter(extraFilters=[{"field": "hasDescription", "values": ["true"],
                                                          "condition": "EQUAL"}]))
    finally:
        client.close()


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"query": 5}', b'{"variables": {}}',
                                  b'{"query": "{ entity(urn: \\"x\\") { urn } }", "variables": [1]}',
                                  b'{"query": "{ __typename }", "operationName": 7}'])
def test_a_malformed_request_is_400_with_a_json_error(server, body):
    answer = requests.post(f"{server.url}/api/graphql", data=body, timeout=30,
                           headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["error"] in ("invalid_request", "invalid_json")


def test_a_token_is_needed(server):
    assert post_graphql(server, {"query": "{ __typename }"}, token=None).status_code == 401


def test_introspection_answers_what_the_clients_ask(server):
    answer = post_graphql(server, {"query": '{ __type(name: "SearchFlags") { inputFields { name } } }'}).json()
    names = {f["name"] for f in answer["data"]["__type"]["inputFields"]}
    assert {"skipHighlighting", "skipAggregates", "skipCache", "includeSoftDeleted"} <= names


def test_the_depth_limit_is_what_the_module_says():
    assert 8 < MAX_DEPTH < 64


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(document=from_schema(schema()))
def test_generated_documents_never_get_a_5xx(server, document):
    answer = post_graphql(server, {"query": document})
    assert answer.status_code == 200, (document, answer.text)
    body = answer.json()
    assert "data" in body or "errors" in body
