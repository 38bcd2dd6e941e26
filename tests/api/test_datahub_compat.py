"""DataHub's own client, unmodified, against Lodestar: DatahubRestEmitter in its default Rest.li mode."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import (
    AuditStampClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    GlobalTagsClass,
    NumberTypeClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
    StringTypeClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support.builders import dataset_urn

ORDERS = dataset_urn("shop.orders")
RAW = dataset_urn("shop.raw_orders")


def field_urn(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def aspects_of_orders() -> list:
    schema = SchemaMetadataClass(
        schemaName="orders", platform="urn:li:dataPlatform:hive", version=0, hash="",
        platformSchema=OtherSchemaClass(rawSchema=""),
        fields=[SchemaFieldClass(fieldPath="id", type=SchemaFieldDataTypeClass(NumberTypeClass()),
                                 nativeDataType="bigint"),
                SchemaFieldClass(fieldPath="customer", type=SchemaFieldDataTypeClass(StringTypeClass()),
                                 nativeDataType="string", description="who ordered")],
    )
    lineage = UpstreamLineageClass(
        upstreams=[UpstreamClass(dataset=RAW, type=DatasetLineageTypeClass.TRANSFORMED,
                                 auditStamp=AuditStampClass(time=0, actor="urn:li:corpuser:etl"))],
        fineGrainedLineages=[FineGrainedLineageClass(
            upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET, upstreams=[field_urn(RAW, "cust")],
            downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD, downstreams=[field_urn(ORDERS, "customer")],
            transformOperation="rename")],
    )
    return [
        DatasetPropertiesClass(name="orders", description="All orders", customProperties={"team": "sales"}),
        schema,
        lineage,
        GlobalTagsClass(tags=[TagAssociationClass(tag="urn:li:tag:pii")]),
        StatusClass(removed=False),
    ]


@pytest.fixture
def emitter(server):
    emitter = DatahubRestEmitter(gms_server=server.url, token=server.token)
    yield emitter
    emitter.close()


def test_test_connection_succeeds(emitter):
    emitter.test_connection()


def test_emit_mcp_round_trip(server, emitter):
    for aspect in aspects_of_orders():
        emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=aspect))
    entity = server.client().entity(ORDERS)["aspects"]
    assert set(entity) == {"datasetKey", "datasetProperties", "schemaMetadata", "upstreamLineage", "globalTags",
                           "status"}
    assert entity["datasetProperties"]["value"]["customProperties"] == {"team": "sales"}
    assert entity["schemaMetadata"]["value"]["fields"][1]["type"] == {
        "type": {"com.linkedin.schema.StringType": {}}}
    lineage = entity["upstreamLineage"]["value"]
    assert lineage["upstreams"][0]["dataset"] == RAW
    assert lineage["fineGrainedLineages"][0]["downstreams"] == [field_urn(ORDERS, "customer")]
    assert entity["datasetProperties"]["systemMetadata"]["runId"] == "no-run-id-provided"


def test_emit_mcps_batch_and_re_emit_is_a_noop(server, emitter):
    mcps = [MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=a) for a in aspects_of_orders()]
    emitter.emit_mcps(mcps)
    emitter.emit_mcps(mcps)
    history = server.gms.store.history(ORDERS, "datasetProperties")
    assert [h.version for h in history] == [1]


def test_emitter_raises_with_lodestar_message_on_invalid_aspect(server, emitter):
    bad = MetadataChangeProposalWrapper(entityUrn="urn:li:corpuser:bob", entityType="corpuser",
                                        aspect=DatasetPropertiesClass(description="wrong entity"))
    with pytest.raises(Exception, match="aspect 'datasetProperties' does not belong to entity 'corpuser'"):
        emitter.emit_mcp(bad)
    assert server.gms.store.entity("urn:li:corpuser:bob") == []


def test_hard_delete_through_the_rest_li_route(server, emitter):
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=StatusClass(removed=False)))
    client = server.client()
    assert client.call("POST", "/entities?action=delete", {"urn": ORDERS}) == {  # status and the key aspect
        "value": {"urn": ORDERS, "rows": 2, "timeseriesRows": 0}}
    assert server.gms.store.entity(ORDERS) == [] and server.gms.store.history(ORDERS, "status") == []
    assert client.call("POST", "/entities?action=delete", {"urn": ORDERS}) == {  # as DataHub: nothing to delete
        "value": {"urn": ORDERS, "rows": 0, "timeseriesRows": 0}}
