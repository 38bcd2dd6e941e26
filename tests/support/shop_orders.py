"""shop.orders as a DataHub connector writes it, through DataHub's own REST emitter: two schema
versions (nested, keyed, nullable, tagged fields), owners, a domain, a glossary term, a tag,
deprecation, a documentation link, and upstream and column lineage from shop.raw_orders. Used by
the entity page's tests and the README's screenshots."""

from __future__ import annotations

from urllib.parse import quote

from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import (
    AuditStampClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    DeprecationClass,
    DomainsClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    GlossaryTermsClass,
    InstitutionalMemoryClass,
    InstitutionalMemoryMetadataClass,
    NumberTypeClass,
    OtherSchemaClass,
    OwnerClass,
    OwnershipClass,
    RecordTypeClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StringTypeClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support.processes import TOKEN, ServeProcess
from tests.support.waiting import await_

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:hive,shop.orders,PROD)"
RAW = "urn:li:dataset:(urn:li:dataPlatform:kafka,shop.raw_orders,PROD)"
EMAIL = make_schema_field_urn(ORDERS, "customer.email")
STAMP = AuditStampClass(time=1_700_000_000_000, actor="urn:li:corpuser:alice")


def _field(path: str, native: str, kind: object, **extra: object) -> SchemaFieldClass:
    return SchemaFieldClass(fieldPath=path, nativeDataType=native, type=SchemaFieldDataTypeClass(kind), **extra)


def _schema(*extra: SchemaFieldClass, total: str = "decimal(10,2)") -> SchemaMetadataClass:
    fields = [_field("id", "bigint", NumberTypeClass(), isPartOfKey=True),
              _field("customer", "struct<email:string,name:string>", RecordTypeClass()),
              _field("customer.email", "string", StringTypeClass(), nullable=True, description="Where receipts go",
                     globalTags=GlobalTagsClass([TagAssociationClass("urn:li:tag:pii")])),
              _field("customer.name", "string", StringTypeClass(), nullable=True),
              _field("total", total, NumberTypeClass()), *extra]
    return SchemaMetadataClass(schemaName="orders", platform="urn:li:dataPlatform:hive", version=0, hash="",
                               platformSchema=OtherSchemaClass(rawSchema=""), fields=fields, primaryKeys=["id"])


def emit_shop_orders(server: ServeProcess) -> str:
    """shop.orders as a DataHub connector writes it (two schema versions), fed by shop.raw_orders."""
    aspects = [
        (RAW, DatasetPropertiesClass(name="raw_orders", description="Orders as the shop emits them.")),
        (RAW, SchemaMetadataClass(schemaName="raw_orders", platform="urn:li:dataPlatform:kafka", version=0, hash="",
                                  platformSchema=OtherSchemaClass(rawSchema=""),
                                  fields=[_field("email", "string", StringTypeClass())])),
        (ORDERS, DatasetPropertiesClass(name="orders", description="Every order placed in the shop.")),
        (ORDERS, _schema(total="double")),
        # v2: total retyped, currency added
        (ORDERS, _schema(_field("currency", "string", StringTypeClass(), nullable=True))),
        (ORDERS, OwnershipClass([OwnerClass("urn:li:corpuser:alice", "TECHNICAL_OWNER")])),
        (ORDERS, DomainsClass(["urn:li:domain:sales"])),
        (ORDERS, GlossaryTermsClass([GlossaryTermAssociationClass("urn:li:glossaryTerm:Revenue")], STAMP)),
        (ORDERS, GlobalTagsClass([TagAssociationClass("urn:li:tag:gold")])),
        (ORDERS, DeprecationClass(deprecated=True, note="Use shop.orders_v2", actor="urn:li:corpuser:alice")),
        (ORDERS, InstitutionalMemoryClass([InstitutionalMemoryMetadataClass(
            url="https://wiki.example.com/orders", description="Orders runbook", createStamp=STAMP)])),
        (ORDERS, UpstreamLineageClass(
            upstreams=[UpstreamClass(dataset=RAW, type=DatasetLineageTypeClass.TRANSFORMED)],
            fineGrainedLineages=[FineGrainedLineageClass(
                upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET,
                upstreams=[make_schema_field_urn(RAW, "email")],
                downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD, downstreams=[EMAIL])])),
    ]
    emitter = DatahubRestEmitter(gms_server=server.url, token=TOKEN)
    try:
        for urn, aspect in aspects:
            emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))
    finally:
        emitter.close()
    client = server.client()
    await_(lambda: client.request("GET", f"/v1/lineage?urn={quote(ORDERS, safe='')}&direction=upstream")[1]["edges"],
           "the emitted upstreamLineage in the lineage graph")
    await_(lambda: client.request("GET", "/v1/search?query=tags:gold")[1]["total"] == 1, "the tag gold indexed")
    return ORDERS


