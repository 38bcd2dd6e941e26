"""Incidents through the GraphQL API: raiseIncident and updateIncidentStatus write the
`incidentInfo` DataHub's SDK reads back, and a dataset's `incidents` lists them by state."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetPropertiesClass, IncidentInfoClass

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, post_graphql, wait_indexed

PARCELS = dataset_urn("depot.parcels")
RAISE = "mutation r($input: RaiseIncidentInput!) { raiseIncident(input: $input) }"
STATUS = "mutation s($urn: String!, $input: IncidentStatusInput!) { updateIncidentStatus(urn: $urn, input: $input) }"
LIST = ("query d($urn: String!, $state: IncidentState) { dataset(urn: $urn) { incidents(state: $state, start: 0,"
        " count: 5) { start count total incidents { urn type incidentType title priority status { state message"
        " lastUpdated { actor } } source { type source { __typename } } entity { urn } } } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-incidents") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=PARCELS, aspect=DatasetPropertiesClass(name="parcels"))])
        yield live


def call(server, query: str, variables: dict) -> dict:
    answer = post_graphql(server, {"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    return answer.json()


def listed(server, state: str | None) -> dict:
    answer = call(server, LIST, {"urn": PARCELS, "state": state})
    assert "errors" not in answer, answer
    return answer["data"]["dataset"]["incidents"]


def test_an_incident_is_raised_listed_and_resolved(server):
    raised = call(server, RAISE, {"input": {"type": "OPERATIONAL", "title": "lost van", "priority": "HIGH",
                                            "resourceUrn": PARCELS}})
    urn = raised["data"]["raiseIncident"]
    assert urn.startswith("urn:li:incident:")
    client = graph(server)
    try:
        info = client.get_aspect(urn, IncidentInfoClass)
    finally:
        client.close()
    assert (info.type, info.title, info.entities, info.status.state, info.source.type) == (
        "OPERATIONAL", "lost van", [PARCELS], "ACTIVE", "MANUAL")
    wait_indexed(server)
    active = listed(server, "ACTIVE")
    assert (active["start"], active["count"], active["total"]) == (0, 5, 1)
    [incident] = active["incidents"]
    assert incident["urn"] == urn and incident["type"] == "INCIDENT" and incident["priority"] == "HIGH"
    assert incident["status"]["state"] == "ACTIVE" and incident["entity"] == {"urn": PARCELS}
    assert incident["source"] == {"type": "MANUAL", "source": None}
    assert call(server, STATUS, {"urn": urn, "input": {"state": "RESOLVED", "message": "found it"}}) == {
        "data": {"updateIncidentStatus": True}}
    wait_indexed(server)
    assert listed(server, "ACTIVE")["total"] == 0
    [resolved] = listed(server, "RESOLVED")["incidents"]
    assert resolved["status"]["state"] == "RESOLVED" and resolved["status"]["message"] == "found it"
    assert resolved["status"]["lastUpdated"]["actor"].startswith("urn:li:corpuser:")
    assert listed(server, None)["total"] == 1


def test_an_incident_needs_an_entity_that_exists(server):
    answer = call(server, RAISE, {"input": {"type": "OPERATIONAL", "resourceUrn": dataset_urn("depot.nothing")}})
    assert answer["data"]["raiseIncident"] is None and "does not exist" in answer["errors"][0]["message"]
    missing = call(server, STATUS, {"urn": "urn:li:incident:nowhere", "input": {"state": "RESOLVED"}})
    assert missing["data"]["updateIncidentStatus"] is None and "does not exist" in missing["errors"][0]["message"]
