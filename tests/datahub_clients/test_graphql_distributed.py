"""DataHub's clients, unmodified, searching and walking lineage through `POST /api/graphql` of
Lodestar on the distributed stack: a `lodestar gms` and a `lodestar mcl-processor` on Kafka,
Cassandra and OpenSearch (names of this test's own). `DataHubGraph.get_urns_by_filter`
(scrollAcrossEntities) and the SDK v2 search client answer from the OpenSearch index, the SDK v2
lineage client (scrollAcrossLineage, entity and column lineage) from the Cassandra lineage
tables; each answer is checked against Lodestar's own /v1/search and /v1/lineage."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph
from datahub.ingestion.graph.filters import RemovedStatusFilter
from datahub.metadata.schema_classes import (
    ContainerClass,
    ContainerPropertiesClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    GlobalTagsClass,
    StatusClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from datahub.sdk.main_client import DataHubClient
from datahub.sdk.search_filters import FilterDsl as F

from ingest.rest import RestClient
from tests.support.builders import dataset_urn
from tests.support.processes import TOKEN
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

RAW = dataset_urn("dq.raw", "mysql", "DEV")
CLEAN, REPORT = dataset_urn("dq.clean"), dataset_urn("dq.report", "postgres")
OLD = dataset_urn("dq.old")  # soft-deleted
DB = "urn:li:container:dq_db"
PII = "urn:li:tag:pii"


def upstream(urn: str, source: str, fields: tuple[str, str]) -> UpstreamLineageClass:
    return UpstreamLineageClass(
        upstreams=[UpstreamClass(dataset=source, type=DatasetLineageTypeClass.TRANSFORMED)],
        fineGrainedLineages=[FineGrainedLineageClass(
            upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET,
            upstreams=[make_schema_field_urn(source, fields[0])],
            downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD,
            downstreams=[make_schema_field_urn(urn, fields[1])])])


def catalog() -> list[MetadataChangeProposalWrapper]:
    aspects = [
        (RAW, DatasetPropertiesClass(name="raw", description="raw rows")),
        (CLEAN, DatasetPropertiesClass(name="clean", description="clean rows")),
        (CLEAN, GlobalTagsClass(tags=[TagAssociationClass(PII)])),
        (CLEAN, ContainerClass(container=DB)),
        (CLEAN, upstream(CLEAN, RAW, ("id", "id"))),
        (REPORT, DatasetPropertiesClass(name="report", description="the report")),
        (REPORT, upstream(REPORT, CLEAN, ("id", "account_id"))),
        (OLD, DatasetPropertiesClass(name="old")),
        (OLD, StatusClass(removed=True)),
        (DB, ContainerPropertiesClass(name="db")),
    ]
    return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in aspects]


def native(client: RestClient, path: str, **params: Any) -> dict[str, Any]:
    return client.call("GET", f"{path}?{urlencode(params)}")


def native_urns(client: RestClient, query: str, include_removed: bool = False) -> set[str]:
    found = native(client, "/v1/search", query=query, types="dataset", count=100,
                   includeRemoved=str(include_removed).lower())
    return {hit["urn"] for hit in found["results"]}


def native_hops(client: RestClient, urn: str, direction: str) -> dict[str, int]:
    path = "/v1/lineage/fields" if urn.startswith("urn:li:schemaField:") else "/v1/lineage"
    nodes = native(client, path, urn=urn, direction=direction, maxHops=10)["nodes"]
    return {n["urn"]: n["hops"] for n in nodes if n["urn"] != urn}


def test_graphql_searches_and_lineage_on_kafka_cassandra_and_opensearch(stack: Stack):
    gms = stack.gms("gms")
    stack.mcl_processor("mcl")
    stack.await_healthy(gms)
    url, client = f"http://127.0.0.1:{gms.port}", gms.client()
    graph = DataHubGraph(DatahubClientConfig(server=url, token=TOKEN))
    try:
        graph.emit_mcps(catalog())
        stack.await_(lambda: client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
                     ["indexed"], "the MCL processor indexing every write (waitForIndex)")

        # get_urns_by_filter: scrollAcrossEntities over the OpenSearch index
        datasets = list(graph.get_urns_by_filter(entity_types=["dataset"]))
        assert sorted(datasets) == sorted({RAW, CLEAN, REPORT}) == sorted(native_urns(client, "*"))
        assert set(graph.get_urns_by_filter(entity_types=["dataset"], platform="hive", env="PROD")) == {CLEAN}
        assert set(graph.get_urns_by_filter(platform="hive", status=RemovedStatusFilter.ONLY_SOFT_DELETED)) == {OLD}
        assert set(graph.get_urns_by_filter(container=DB)) == {CLEAN}
        pii = {"field": "tags", "condition": "EQUAL", "values": [PII]}
        assert set(graph.get_urns_by_filter(extraFilters=[pii])) == {CLEAN} == native_urns(client, f'tags:"{PII}"')
        assert list(graph.get_urns_by_filter(entity_types=["dataset"], batch_size=1)) == datasets  # scrolled

        # the SDK v2 search client
        sdk = DataHubClient(server=url, token=TOKEN)
        urns = lambda f=None, q=None: {str(u) for u in sdk.search.get_urns(query=q, filter=f)}  # noqa: E731
        assert urns(F.and_(F.entity_type("dataset"), F.platform("postgres"))) == {REPORT}
        assert urns(F.or_(F.tag(PII), F.env("DEV"))) == {CLEAN, RAW}
        assert urns(F.soft_deleted(RemovedStatusFilter.ONLY_SOFT_DELETED)) == {OLD}
        assert urns(q="report") == native_urns(client, "report") == {REPORT}

        # the SDK v2 lineage client: the Cassandra lineage tables
        found = sdk.lineage.get_lineage(source_urn=REPORT, direction="upstream", max_hops=3)
        assert [(r.urn, r.hops, r.platform) for r in found] == [(CLEAN, 1, "hive"), (RAW, 2, "mysql")]
        assert {r.urn: r.hops for r in found} == native_hops(client, REPORT, "upstream")
        down = sdk.lineage.get_lineage(source_urn=RAW, direction="downstream", max_hops=3, filter=F.platform("hive"))
        assert [r.urn for r in down] == [CLEAN]
        columns = sdk.lineage.get_lineage(source_urn=REPORT, source_column="account_id", direction="upstream",
                                          max_hops=3)
        assert [(r.urn, r.hops) for r in columns] == [(CLEAN, 1), (RAW, 2)]
        assert [(p.entity_name, p.column_name) for p in columns[1].paths] == [
            ("dq.report", "account_id"), ("dq.clean", "id"), ("dq.raw", "id")]
        assert set(native_hops(client, make_schema_field_urn(REPORT, "account_id"), "upstream")) == {
            make_schema_field_urn(CLEAN, "id"), make_schema_field_urn(RAW, "id")}
    finally:
        graph.close()
