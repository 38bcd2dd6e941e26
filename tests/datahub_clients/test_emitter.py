"""DataHub's `DatahubRestEmitter` (Rest.li mode, as shipped) against `lodestar serve`: single
proposals, batches (sync and async) with and without invalid proposals, patch builders, MCEs,
usage buckets; each result read back through Lodestar's API."""

from __future__ import annotations

import time

import pytest
import requests
from datahub.configuration.common import OperationalError
from datahub.emitter.emit_mode import EmitMode
from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DatahubIngestionCheckpointClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    DatasetSnapshotClass,
    FieldUsageCountsClass,
    FineGrainedLineageClass,
    GlobalTagsClass,
    IngestionCheckpointStateClass,
    MetadataChangeEventClass,
    OwnerClass,
    OwnershipTypeClass,
    StatusClass,
    TagAssociationClass,
    UpstreamClass,
    UsageAggregationClass,
    UsageAggregationMetricsClass,
    UserUsageCountsClass,
    WindowDurationClass,
)
from datahub.specific.dataset import DatasetPatchBuilder

from tests.support import datahub_clients
from tests.support.datahub_clients import entity, indexed, points
from tests.support.waiting import await_

# the fixtures used here (tests/support/datahub_clients.py)
emitter, graph, lodestar = datahub_clients.emitter, datahub_clients.graph, datahub_clients.lodestar


def dataset(name: str) -> str:
    return make_dataset_urn("hive", name)


def props(urn: str, description: str, **headers: str) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(description=description),
                                         headers=headers or None)


def wrong_entity(name: str) -> MetadataChangeProposalWrapper:
    """Valid for DataHub's client, refused by GMS: the aspect does not belong to the entity."""
    return MetadataChangeProposalWrapper(entityUrn=f"urn:li:corpuser:{name}", entityType="corpuser",
                                         aspect=DatasetPropertiesClass(description="wrong entity"))


def test_connection_and_config(emitter, lodestar):
    emitter.test_connection()
    config = requests.get(f"{lodestar.url}/config", timeout=30).json()
    assert config["noCode"] == "true" and config["statefulIngestionCapable"] is True
    assert config["patchCapable"] is True and "versions" not in config  # Rest.li, not OpenAPI


def test_emit_mcp_and_an_invalid_one_raises_with_lodestar_message(emitter, lodestar):
    urn = dataset("emitter.single")
    emitter.emit_mcp(props(urn, "one"))
    assert entity(lodestar.client(), urn)["datasetProperties"]["value"]["description"] == "one"
    with pytest.raises(OperationalError, match="does not belong to entity 'corpuser'"):
        emitter.emit_mcp(wrong_entity("single"))
    assert entity(lodestar.client(), "urn:li:corpuser:single") is None


def test_a_sync_batch_with_an_invalid_proposal_applies_none(emitter, lodestar):
    good, other = dataset("emitter.batch_good"), dataset("emitter.batch_other")
    with pytest.raises(OperationalError) as raised:
        emitter.emit_mcps([props(good, "good"), wrong_entity("batch"), props(other, "other")])
    message, info = raised.value.message, raised.value.info
    assert "1 of 3 proposals failed, none was applied: proposal 1 (urn:li:corpuser:batch datasetProperties)" \
        in message
    assert [r["status"] for r in info["results"]] == ["skipped", "failed", "skipped"]
    assert entity(lodestar.client(), good) is None and entity(lodestar.client(), other) is None


def test_a_sync_batch_failing_a_precondition_applies_the_others_and_says_so(emitter, lodestar):
    first, second, third = dataset("emitter.pre1"), dataset("emitter.pre2"), dataset("emitter.pre3")
    with pytest.raises(OperationalError) as raised:
        emitter.emit_mcps([props(first, "1"), props(second, "2", **{"If-Version-Match": "7"}), props(third, "3")])
    assert "1 of 3 proposals failed, the other 2 were applied" in raised.value.message
    assert raised.value.info["status"] == 412
    assert [r["status"] for r in raised.value.info["results"]] == ["applied", "failed", "applied"]
    client = lodestar.client()
    assert entity(client, first) is not None and entity(client, third) is not None
    assert entity(client, second) is None


def test_an_async_batch_is_queued_whole_or_refused_whole(emitter, lodestar):
    queued, refused = dataset("emitter.async_ok"), dataset("emitter.async_refused")
    emitter.emit_mcps([props(queued, "queued"), MetadataChangeProposalWrapper(
        entityUrn=queued, aspect=StatusClass(removed=False))], emit_mode=EmitMode.ASYNC)
    client = lodestar.client()
    await_(lambda: entity(client, queued) and "status" in entity(client, queued), "the queued batch applied")
    with pytest.raises(OperationalError, match="1 of 2 proposals failed, none was queued"):
        emitter.emit_mcps([props(refused, "refused"), wrong_entity("async")], emit_mode=EmitMode.ASYNC)
    marker = dataset("emitter.async_marker")  # queued after the refused batch: once it is in, that one was not
    emitter.emit_mcp(props(marker, "after"), emit_mode=EmitMode.ASYNC)
    await_(lambda: entity(client, marker), "a proposal queued after the refused batch applied")
    assert entity(client, refused) is None


def test_patch_builders(emitter, lodestar):
    urn, raw = dataset("emitter.patched"), dataset("emitter.raw")
    builder = (DatasetPatchBuilder(urn)
               .add_tag(TagAssociationClass("urn:li:tag:pii")).add_tag(TagAssociationClass("urn:li:tag:gold"))
               .add_owner(OwnerClass("urn:li:corpuser:jdoe", OwnershipTypeClass.TECHNICAL_OWNER))
               .add_upstream_lineage(UpstreamClass(raw, DatasetLineageTypeClass.TRANSFORMED))
               .add_fine_grained_lineage(FineGrainedLineageClass(
                   upstreamType="FIELD_SET", upstreams=[f"urn:li:schemaField:({raw},id)"], downstreamType="FIELD",
                   downstreams=[f"urn:li:schemaField:({urn},id)"], transformOperation="COPY"))
               .add_custom_property("team", "sales"))
    for mcp in builder.build():
        emitter.emit_mcp(mcp)
    for mcp in DatasetPatchBuilder(urn).remove_tag("urn:li:tag:pii").add_custom_property("tier", "gold").build():
        emitter.emit_mcp(mcp)
    aspects = entity(lodestar.client(), urn)
    assert aspects["globalTags"]["value"] == {"tags": [{"tag": "urn:li:tag:gold"}]}
    assert [(o["owner"], o["type"]) for o in aspects["ownership"]["value"]["owners"]] == [
        ("urn:li:corpuser:jdoe", "TECHNICAL_OWNER")]
    lineage = aspects["upstreamLineage"]["value"]
    assert [u["dataset"] for u in lineage["upstreams"]] == [raw]
    assert lineage["fineGrainedLineages"][0]["downstreams"] == [f"urn:li:schemaField:({urn},id)"]
    assert aspects["datasetProperties"]["value"]["customProperties"] == {"team": "sales", "tier": "gold"}


def test_emit_mce_applies_each_aspect(emitter, lodestar):
    urn = dataset("emitter.mce")
    emitter.emit_mce(MetadataChangeEventClass(proposedSnapshot=DatasetSnapshotClass(urn=urn, aspects=[
        DatasetPropertiesClass(description="from an MCE"), GlobalTagsClass([TagAssociationClass("urn:li:tag:mce")]),
        StatusClass(removed=False)])))
    aspects = entity(lodestar.client(), urn)
    assert aspects["datasetProperties"]["value"]["description"] == "from an MCE"
    assert aspects["globalTags"]["value"]["tags"] == [{"tag": "urn:li:tag:mce"}]
    assert aspects["status"]["systemMetadata"]["runId"] == "no-run-id-provided"


def test_emit_usage_becomes_dataset_usage_statistics(emitter, lodestar):
    urn = dataset("emitter.usage")
    day = 1_700_006_400_000
    emitter.emit_usage(UsageAggregationClass(
        bucket=day, duration=WindowDurationClass.DAY, resource=urn, metrics=UsageAggregationMetricsClass(
            uniqueUserCount=2, totalSqlQueries=5, topSqlQueries=["select 1"],
            users=[UserUsageCountsClass(user="urn:li:corpuser:ann", count=3), UserUsageCountsClass(count=2)],
            fields=[FieldUsageCountsClass(fieldName="id", count=4)])))
    client = lodestar.client()
    indexed(client)
    (point,) = points(client, urn, "datasetUsageStatistics")
    assert point["timestampMillis"] == day and point["eventGranularity"] == {"unit": "DAY", "multiple": 1}
    assert point["userCounts"] == [{"user": "urn:li:corpuser:ann", "count": 3}]
    assert point["fieldCounts"] == [{"fieldPath": "id", "count": 4}] and point["totalSqlQueries"] == 5


def test_checkpoints_of_stateful_ingestion_are_read_back(emitter, graph, lodestar):
    job = "urn:li:dataJob:(urn:li:dataFlow:(datahub,file_pipeline,PROD),file_source)"
    now = int(time.time() * 1000)
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=job, aspect=DatahubIngestionCheckpointClass(
        timestampMillis=now, pipelineName="file_pipeline", platformInstanceId="", config="", runId="run-1",
        state=IngestionCheckpointStateClass(formatVersion="1.0", serde="base85-bz2-json"))))
    indexed(lodestar.client())
    latest = graph.get_latest_timeseries_value(entity_urn=job, aspect_type=DatahubIngestionCheckpointClass,
                                               filter_criteria_map={"pipelineName": "file_pipeline"})
    assert latest is not None and latest.runId == "run-1"
