"""A run (dataProcessInstance) is found by the id in its URN, as DataHub's search finds it,
and not only by the name in its properties."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import AuditStampClass, DataProcessInstancePropertiesClass

from tests.support.graphql import emit, live_server, post_graphql

RUN = "urn:li:dataProcessInstance:nightly-load-4711"
OTHER = "urn:li:dataProcessInstance:hourly-sync-0815"
QUERY = ("query s($input: ScrollAcrossEntitiesInput!) { scrollAcrossEntities(input: $input) {"
         " total searchResults { entity { urn } } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-run-search") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=urn, aspect=DataProcessInstancePropertiesClass(
            name=name, created=AuditStampClass(time=1, actor="urn:li:corpuser:etl")))
            for urn, name in ((RUN, "Warehouse load"), (OTHER, "Warehouse sync"))])
        yield live


@pytest.mark.parametrize("query", ["nightly-load-4711", "4711", "nightly"])
def test_a_run_is_found_by_its_id(server, query):
    answer = post_graphql(server, {"query": QUERY, "variables": {"input": {
        "types": ["DATA_PROCESS_INSTANCE"], "query": query, "count": 10}}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["scrollAcrossEntities"] == {"total": 1, "searchResults": [{"entity": {"urn": RUN}}]}
