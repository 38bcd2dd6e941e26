"""Managed ingestion through the GraphQL API: ingestion sources are made, read, listed, changed
and deleted; a request to run one is recorded with the source's recipe (Lodestar runs none, so
its result stays null); all of it needs ADMIN on the instance."""

from __future__ import annotations

import json

import pytest
from datahub.metadata.schema_classes import DataHubIngestionSourceInfoClass, ExecutionRequestInputClass

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import graph, live_server, post_graphql, wait_indexed

RECIPE = json.dumps({"source": {"type": "postgres", "config": {"host_port": "db:5432", "password": "${PG_PASSWORD}"}},
                     "sink": {"type": "datahub-rest"}})
SOURCE_INPUT = {"name": "Warehouse", "type": "postgres", "description": "nightly warehouse load",
                "schedule": {"interval": "0 3 * * *", "timezone": "Europe/Paris"},
                "config": {"recipe": RECIPE, "version": "1.2.0", "executorId": "default",
                           "extraArgs": [{"key": "max_workers", "value": "4"}]}}
CREATE = "mutation c($input: UpdateIngestionSourceInput!) { createIngestionSource(input: $input) }"
READ = ("query s($urn: String!) { ingestionSource(urn: $urn) { urn type name schedule { interval timezone }"
        " config { recipe executorId version debugMode extraArgs { key value } }"
        " executions(start: 0, count: 5) { total executionRequests { urn } } } }")
LIST = ("query l($input: ListIngestionSourcesInput!) { listIngestionSources(input: $input) { start count total"
        " ingestionSources { urn name } } }")
RUN = "mutation r($input: CreateIngestionExecutionRequestInput!) { createIngestionExecutionRequest(input: $input) }"
REQUEST = ("query e($urn: String!) { executionRequest(urn: $urn) { urn type id input { task arguments { key value }"
           " source { type ingestionSource } requestedAt actorUrn executorId } result { status } source { name } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-ingestion") / "data") as live:
        yield live


def call(server, query: str, variables: dict, token: str | None = None) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables}, **({"token": token} if token else {}))
    assert answer.status_code == 200, answer.text
    return answer.json()


def ok(answer: dict) -> dict:
    assert "errors" not in answer, answer
    return answer["data"]


def test_a_source_is_made_read_listed_changed_and_deleted(server):
    urn = ok(call(server, CREATE, {"input": SOURCE_INPUT}))["createIngestionSource"]
    assert urn.startswith("urn:li:dataHubIngestionSource:")
    client = graph(server)
    try:
        stored = client.get_aspect(urn, DataHubIngestionSourceInfoClass)
    finally:
        client.close()
    assert (stored.name, stored.type, stored.schedule.interval, stored.config.extraArgs) == (
        "Warehouse", "postgres", "0 3 * * *", {"max_workers": "4"})
    assert ok(call(server, READ, {"urn": urn}))["ingestionSource"] == {
        "urn": urn, "type": "postgres", "name": "Warehouse",
        "schedule": {"interval": "0 3 * * *", "timezone": "Europe/Paris"},
        "config": {"recipe": RECIPE, "executorId": "default", "version": "1.2.0", "debugMode": None,
                   "extraArgs": [{"key": "max_workers", "value": "4"}]},
        "executions": {"total": 0, "executionRequests": []}}
    other = ok(call(server, CREATE, {"input": {**SOURCE_INPUT, "name": "Archive", "schedule": None}}))
    wait_indexed(server)
    listed = ok(call(server, LIST, {"input": {"start": 0, "count": 10}}))["listIngestionSources"]
    assert listed == {"start": 0, "count": 2, "total": 2, "ingestionSources": [
        {"urn": other["createIngestionSource"], "name": "Archive"}, {"urn": urn, "name": "Warehouse"}]}
    assert ok(call(server, LIST, {"input": {"query": "warehouse"}}))["listIngestionSources"]["total"] == 1
    changed = {**SOURCE_INPUT, "name": "Warehouse (hourly)", "schedule": {"interval": "0 * * * *", "timezone": "UTC"}}
    assert ok(call(server, "mutation u($urn: String!, $input: UpdateIngestionSourceInput!) {"
                           " updateIngestionSource(urn: $urn, input: $input) }", {"urn": urn, "input": changed}))
    assert ok(call(server, READ, {"urn": urn}))["ingestionSource"]["schedule"] == {"interval": "0 * * * *",
                                                                                   "timezone": "UTC"}
    assert ok(call(server, "mutation d($urn: String!) { deleteIngestionSource(urn: $urn) }", {"urn": urn}))
    assert ok(call(server, READ, {"urn": urn})) == {"ingestionSource": None}
    wait_indexed(server)
    assert ok(call(server, LIST, {"input": {}}))["listIngestionSources"]["total"] == 1


def test_a_run_is_recorded_with_the_sources_recipe_and_not_run(server):
    source = ok(call(server, CREATE, {"input": {**SOURCE_INPUT, "name": "Runs"}}))["createIngestionSource"]
    first = ok(call(server, RUN, {"input": {"ingestionSourceUrn": source}}))["createIngestionExecutionRequest"]
    second = ok(call(server, RUN, {"input": {"ingestionSourceUrn": source}}))["createIngestionExecutionRequest"]
    request = ok(call(server, REQUEST, {"urn": first}))["executionRequest"]
    assert request["input"]["requestedAt"] > 0
    del request["input"]["requestedAt"]
    assert request == {"urn": first, "type": "EXECUTION_REQUEST", "id": first.rsplit(":", 1)[1],
                       "input": {"task": "RUN_INGEST", "arguments": [
                           {"key": "recipe", "value": RECIPE}, {"key": "version", "value": "1.2.0"},
                           {"key": "debug_mode", "value": "false"}],
                                 "source": {"type": "MANUAL_INGESTION_SOURCE", "ingestionSource": source},
                                 "actorUrn": "urn:li:corpuser:admin", "executorId": "default"},
                       "result": None, "source": {"name": "Runs"}}
    client = graph(server)
    try:
        assert client.get_aspect(second, ExecutionRequestInputClass).args["debug_mode"] == "false"
    finally:
        client.close()
    wait_indexed(server)
    executions = ok(call(server, READ, {"urn": source}))["ingestionSource"]["executions"]
    assert executions == {"total": 2, "executionRequests": [{"urn": second}, {"urn": first}]}


def test_bad_input_and_callers_without_admin_are_refused(server):
    bad = call(server, CREATE, {"input": {**SOURCE_INPUT, "config": {**SOURCE_INPUT["config"], "recipe": "[1]"}}})
    assert bad["errors"][0]["message"] == "input.config.recipe: must be a JSON object"
    missing = call(server, RUN, {"input": {"ingestionSourceUrn": "urn:li:dataHubIngestionSource:none"}})
    assert missing["errors"][0]["extensions"]["code"] == 404
    assert call(server, READ, {"urn": "urn:li:dataset:x"})["errors"][0]["extensions"]["code"] == 400
    reader = principal_with_grants(server, "ingestion-reader", [("instance", ["READ", "WRITE"])])
    for query, variables in ((LIST, {"input": {}}), (CREATE, {"input": SOURCE_INPUT})):
        refused = call(server, query, variables, reader)
        assert refused["errors"][0]["extensions"]["code"] == 403, refused
