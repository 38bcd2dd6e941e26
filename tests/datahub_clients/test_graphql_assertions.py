"""Custom assertions with DataHub's SDK (`upsert_custom_assertion`, `report_assertion_result`):
the assertion is stored as DataHub stores it, listed under its dataset with its newest results,
replaced in place, and gone from the list once deleted."""

from __future__ import annotations

import time

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import AssertionInfoClass, DataPlatformInstanceClass, StatusClass

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, post_graphql, wait_indexed

ORDERS = dataset_urn("shop.orders", "snowflake")
ASSERTIONS = """query a($urn: String!) { dataset(urn: $urn) { assertions(start: 0, count: 10) { total assertions {
  urn info { type description externalUrl lastUpdated { actor } customAssertion { type entityUrn field { path } logic }
  source { type created { actor } } }
  runEvents(status: COMPLETE, limit: 2) { total failed succeeded errored runEvents { timestampMillis status
    result { type externalUrl nativeResults { key value } error { type properties { key value } } } } } } } } }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-assertions") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=StatusClass(removed=False))])
        yield live


def listed(server) -> dict:
    answer = post_graphql(server, {"query": ASSERTIONS, "variables": {"urn": ORDERS}})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    return answer.json()["data"]["dataset"]["assertions"]


def test_a_custom_assertion_is_made_reported_replaced_and_deleted(server):
    client = graph(server)
    try:
        urn = client.upsert_custom_assertion(urn=None, entity_urn=ORDERS, type="Row parity", description="rows match",
                                             platform_name="greatExpectations", field_path="id")["urn"]
        assert urn.startswith("urn:li:assertion:")
        info = client.get_aspect(urn, AssertionInfoClass)
        assert (info.type, info.customAssertion.type, info.customAssertion.entity, info.source.type) == (
            "CUSTOM", "Row parity", ORDERS, "EXTERNAL")
        assert info.customAssertion.field == f"urn:li:schemaField:({ORDERS},id)"
        assert client.get_aspect(urn, DataPlatformInstanceClass).platform == "urn:li:dataPlatform:greatExpectations"
        replaced = client.upsert_custom_assertion(
            urn=urn, entity_urn=ORDERS, type="Row parity", description="rows match the source",
            platform_name="greatExpectations", external_url="https://dq.example.com/parity", logic="count(*)")
        assert replaced["urn"] == urn
        now = int(time.time() * 1000)
        assert client.report_assertion_result(urn=urn, timestamp_millis=now - 2000, type="SUCCESS",
                                              properties=[{"key": "rows", "value": "120"}])
        assert client.report_assertion_result(urn=urn, timestamp_millis=now - 1000, type="FAILURE",
                                              external_url="https://dq.example.com/runs/2")
        assert client.report_assertion_result(urn=urn, timestamp_millis=now, type="ERROR",
                                              error_type="SOURCE_QUERY_FAILED", error_message="permission denied")
        wait_indexed(server)
        found = listed(server)
        assert found["total"] == 1
        [assertion] = found["assertions"]
        assert assertion["info"] == {
            "type": "CUSTOM", "description": "rows match the source", "externalUrl": "https://dq.example.com/parity",
            "lastUpdated": {"actor": "urn:li:corpuser:admin"},
            "customAssertion": {"type": "Row parity", "entityUrn": ORDERS, "field": None, "logic": "count(*)"},
            "source": {"type": "EXTERNAL", "created": {"actor": "urn:li:corpuser:admin"}}}
        assert assertion["runEvents"] == {"total": 2, "failed": 1, "succeeded": 0, "errored": 1, "runEvents": [
            {"timestampMillis": now, "status": "COMPLETE", "result": {
                "type": "ERROR", "externalUrl": None, "nativeResults": None,
                "error": {"type": "SOURCE_QUERY_FAILED", "properties": [{"key": "message",
                                                                         "value": "permission denied"}]}}},
            {"timestampMillis": now - 1000, "status": "COMPLETE", "result": {
                "type": "FAILURE", "externalUrl": "https://dq.example.com/runs/2", "nativeResults": None,
                "error": None}}]}
        client.delete_entity(urn, hard=True)
        assert listed(server) == {"total": 0, "assertions": []}
    finally:
        client.close()


def test_bad_assertions_are_refused(server):
    client = graph(server)
    try:
        with pytest.raises(Exception, match="platform: a urn or a name is required"):
            client.upsert_custom_assertion(urn=None, entity_urn=ORDERS, type="t", description="d")
        with pytest.raises(Exception, match="does not exist"):
            client.upsert_custom_assertion(urn=None, entity_urn=dataset_urn("shop.none"), type="t", description="d",
                                           platform_name="dq")
        with pytest.raises(Exception, match="does not exist"):
            client.report_assertion_result(urn="urn:li:assertion:none", timestamp_millis=1, type="SUCCESS")
    finally:
        client.close()
