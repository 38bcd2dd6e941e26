"""`searchAcrossLineage` through queries and data jobs, as DataHub's clients read it from
Lodestar: a query named by an upstream or a fine-grained lineage record sits between the two
ends of an edge in each path (never a result itself); a data job declaring field-level
lineage sits between the fields, and a field walk lists it at the degree of the fields reached
through it. Nodes the caller may not read are in neither."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import make_data_job_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AuditStampClass,
    DataJobInputOutputClass,
    DatasetLineageTypeClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    QueryLanguageClass,
    QueryPropertiesClass,
    QuerySourceClass,
    QueryStatementClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server
from tests.support.server import TOKEN, LiveServer

ORDERS, RETURNS = dataset_urn("sales.orders"), dataset_urn("sales.returns")
NET = dataset_urn("mart.net_sales")
EXPORT = dataset_urn("export.net_sales", "s3")
MERGE = "urn:li:query:merge-orders-and-returns"
PUBLISH = make_data_job_urn("airflow", "publish", "copy_net_sales")
GROUPED = {"groupingSpec": {"groupingCriteria": [{"baseEntityType": "SCHEMA_FIELD", "groupingEntityType": "DATASET"}]}}


def col(dataset: str, name: str = "amount") -> str:
    return make_schema_field_urn(dataset, name)


def fine(upstreams: list[str], downstreams: list[str], query: str | None = None) -> FineGrainedLineageClass:
    return FineGrainedLineageClass(upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET, upstreams=upstreams,
                                   downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD,
                                   downstreams=downstreams, query=query)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stamp = AuditStampClass(time=1, actor="urn:li:corpuser:etl")
    with live_server(tmp_path_factory.mktemp("lineage-through") / "data") as live:
        emit(live, [
            MetadataChangeProposalWrapper(entityUrn=MERGE, aspect=QueryPropertiesClass(
                statement=QueryStatementClass("SELECT o.amount - r.amount", QueryLanguageClass.SQL),
                source=QuerySourceClass.SYSTEM, created=stamp, lastModified=stamp)),
            MetadataChangeProposalWrapper(entityUrn=NET, aspect=UpstreamLineageClass(
                upstreams=[UpstreamClass(u, DatasetLineageTypeClass.TRANSFORMED, query=MERGE)
                           for u in (ORDERS, RETURNS)],
                fineGrainedLineages=[fine([col(ORDERS), col(RETURNS)], [col(NET)], MERGE)])),
            MetadataChangeProposalWrapper(entityUrn=PUBLISH, aspect=DataJobInputOutputClass(
                inputDatasets=[NET], outputDatasets=[EXPORT], fineGrainedLineages=[fine([col(NET)], [col(EXPORT)])])),
        ])
        yield live


QUERY = """query($input: SearchAcrossLineageInput!) { searchAcrossLineage(input: $input) {
  searchResults { degree entity { urn type }
    paths { path { urn type ... on QueryEntity { properties { statement { value language } source } } } } } } }"""


def found(server: LiveServer, urn: str, direction: str, token: str = TOKEN, **given) -> dict[str, tuple[int, list]]:
    """Each result: (degree, its paths as lists of URNs)."""
    client = graph(server, token)
    try:
        answer = client.execute_graphql(QUERY, variables={"input": {"query": "*", "urn": urn, "direction": direction,
                                                                     **given}})["searchAcrossLineage"]
    finally:
        client.close()
    return {r["entity"]["urn"]: (r["degree"], sorted([p["urn"] for p in path["path"]] for path in r["paths"]))
            for r in answer["searchResults"]}


def test_a_query_sits_between_the_datasets_of_a_path_and_is_no_result(server):
    assert found(server, ORDERS, "DOWNSTREAM") == {
        NET: (1, [[ORDERS, MERGE, NET]]), PUBLISH: (2, [[ORDERS, MERGE, NET, PUBLISH]]),
        EXPORT: (3, [[ORDERS, MERGE, NET, PUBLISH, EXPORT]])}
    client = graph(server)
    try:
        answer = client.execute_graphql(QUERY, variables={"input": {"query": "*", "urn": NET, "direction": "UPSTREAM"}})
    finally:
        client.close()
    step = answer["searchAcrossLineage"]["searchResults"][0]["paths"][0]["path"][1]
    assert step == {"urn": MERGE, "type": "QUERY", "properties": {
        "statement": {"value": "SELECT o.amount - r.amount", "language": "SQL"}, "source": "SYSTEM"}}


def test_a_field_walk_goes_through_queries_and_lists_the_jobs_it_went_through(server):
    assert found(server, col(ORDERS), "DOWNSTREAM", searchFlags=GROUPED) == {
        NET: (1, [[col(ORDERS), MERGE, col(NET)]]), PUBLISH: (2, [[col(ORDERS), MERGE, col(NET), PUBLISH]]),
        EXPORT: (2, [[col(ORDERS), MERGE, col(NET), PUBLISH, col(EXPORT)]])}
    assert found(server, col(EXPORT), "UPSTREAM", searchFlags=GROUPED) == {
        PUBLISH: (1, [[col(EXPORT), PUBLISH]]), NET: (1, [[col(EXPORT), PUBLISH, col(NET)]]),
        ORDERS: (2, [[col(EXPORT), PUBLISH, col(NET), MERGE, col(ORDERS)]]),
        RETURNS: (2, [[col(EXPORT), PUBLISH, col(NET), MERGE, col(RETURNS)]])}
    first = [{"and": [{"field": "degree", "condition": "EQUAL", "values": ["1"]}]}]
    assert set(found(server, col(EXPORT), "UPSTREAM", searchFlags=GROUPED, orFilters=first)) == {PUBLISH, NET}


def test_what_the_caller_may_not_read_is_neither_a_result_nor_in_a_path(server):
    token = principal_with_grants(server, "datasets-only", [(u, ["READ"]) for u in (ORDERS, NET, EXPORT)])
    assert found(server, col(ORDERS), "DOWNSTREAM", token, searchFlags=GROUPED) == {
        NET: (1, [[col(ORDERS), col(NET)]]), EXPORT: (2, [[col(ORDERS), col(NET), col(EXPORT)]])}
