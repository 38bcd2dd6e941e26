"""DataHub's `DataHubGraph`, unmodified, reading from Lodestar on the distributed stack: a
`lodestar gms` and a `lodestar mcl-processor` on Kafka, Cassandra and OpenSearch (names of this
test's own). Aspects, versions, existence and timelines come from the Cassandra aspect store;
timeseries values, search, listings and incoming relationships from the OpenSearch indices and
the Cassandra lineage tables the MCL processor writes. `datahub ingest list-runs | show |
rollback` scan the Cassandra aspect store for a run's rows."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph
from datahub.ingestion.graph.openapi import RelationshipDirection
from datahub.metadata.schema_classes import (
    DatasetLineageTypeClass,
    DatasetProfileClass,
    DatasetPropertiesClass,
    GlobalTagsClass,
    SystemMetadataClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support.builders import dataset_urn
from tests.support.datahub_clients import datahub_cli, entity
from tests.support.processes import TOKEN
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

ORDERS, RAW, SPARE = dataset_urn("dh.orders"), dataset_urn("dh.raw_orders"), dataset_urn("dh.spare")


def tags(*names: str) -> GlobalTagsClass:
    return GlobalTagsClass(tags=[TagAssociationClass(tag=f"urn:li:tag:{name}") for name in names])


def test_datahub_reads_on_kafka_cassandra_and_opensearch(stack: Stack, tmp_path: Path):
    gms = stack.gms("gms")
    stack.mcl_processor("mcl")
    stack.await_healthy(gms)
    graph = DataHubGraph(DatahubClientConfig(server=f"http://127.0.0.1:{gms.port}", token=TOKEN))
    try:
        for urn, aspect in ((ORDERS, tags("sales")), (ORDERS, tags("sales", "gold")),
                            (ORDERS, DatasetPropertiesClass(name="orders", description="All orders")),
                            (ORDERS, UpstreamLineageClass(upstreams=[UpstreamClass(
                                dataset=RAW, type=DatasetLineageTypeClass.TRANSFORMED)])),
                            (RAW, tags("gold")), (SPARE, DatasetPropertiesClass(name="spare")),
                            *((ORDERS, DatasetProfileClass(timestampMillis=t, rowCount=t // 100)) for t in (1, 2000))):
            graph.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))
        stack.await_(lambda: gms.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
                     ["indexed"], "the MCL processor indexing every write (waitForIndex)")

        # the aspect store (Cassandra)
        assert graph.get_tags(ORDERS) == tags("sales", "gold")
        assert graph.get_aspect(ORDERS, GlobalTagsClass, version=1) == tags("sales")
        assert graph.exists(RAW) and not graph.exists(dataset_urn("dh.nothing"))
        assert set(graph.get_entity_raw(ORDERS)["aspects"]) == {"datasetKey", "globalTags", "datasetProperties",
                                                                "upstreamLineage"}
        timeline = graph._get_generic(f"{graph._gms_server}/openapi/v2/timeline/v1/{quote(ORDERS, safe='')}",
                                      {"categories": "TAG"})  # as `datahub timeline` asks
        assert [e["modifier"] for t in timeline for e in t["changeEvents"]] == ["urn:li:tag:sales", "urn:li:tag:gold"]
        assert graph.get_aspect_counts("datasetProperties") == 2

        # the read models (OpenSearch, Cassandra lineage)
        assert [p.rowCount for p in graph.get_timeseries_values(ORDERS, DatasetProfileClass, {})] == [20, 0]
        incoming = RelationshipDirection.INCOMING
        assert [e.urn for e in graph.get_related_entities(RAW, ["DownstreamOf"], incoming)] == [ORDERS]
        assert sorted(e.urn for e in graph.get_related_entities("urn:li:tag:gold", ["TaggedWith"], incoming)) == \
            sorted([ORDERS, RAW])
        assert graph.list_all_entity_urns("dataset", 0, 10) == sorted([ORDERS, RAW, SPARE])
        assert graph.get_search_results(0, 10, "dataset")["value"]["numEntities"] == 3
        assert graph.get_domain_urn_by_name("nothing") is None
        assert graph.delete_references_to_urn("urn:li:tag:gold", dry_run=True)[0] == 2

        # ingestion runs: the aspect store scanned for the run's rows
        loaded, client = dataset_urn("dh.loaded"), gms.client()
        before = entity(client, SPARE)["datasetProperties"]["value"]
        run = SystemMetadataClass(runId="dh-run")
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=SPARE, aspect=DatasetPropertiesClass(
            name="spare", description="by the run"), systemMetadata=run), MetadataChangeProposalWrapper(
            entityUrn=loaded, aspect=DatasetPropertiesClass(name="loaded"), systemMetadata=run)])
        datahub = datahub_cli(f"http://127.0.0.1:{gms.port}", tmp_path)
        assert "dh-run" in datahub.ok("ingest", "list-runs")
        shown = datahub.ok("ingest", "show", "--run-id", "dh-run")
        assert shown.count("dh.loaded") == 2 and shown.count("dh.spare") == 1  # key and properties; properties
        out = datahub.ok("ingest", "rollback", "--run-id", "dh-run", "-f", "--report-dir", str(tmp_path / "reports"))
        assert "deleted 1 entities and rolled back 3 aspects" in out, out
        assert entity(client, loaded) is None
        assert entity(client, SPARE)["datasetProperties"]["value"] == before
    finally:
        graph.close()
