"""GraphQL fields of DataHub's schema read from aspects written with DataHub's emitter: a chart's
input fields (each a schema field with its field entity), a schema field's documentation, when a
schema version was written, and an entity's relationships."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ChangeAuditStampsClass,
    ChartInfoClass,
    DatasetLineageTypeClass,
    DocumentationAssociationClass,
    DocumentationClass,
    GlobalTagsClass,
    InputFieldClass,
    InputFieldsClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StringTypeClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import emit, live_server, post_graphql

CHART = "urn:li:chart:(looker,fields.revenue)"
DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,fields.orders,PROD)"
FIELD = make_schema_field_urn(DATASET, "amount")
DOWNSTREAM = "urn:li:dataset:(urn:li:dataPlatform:hive,fields.totals,PROD)"
QUERY = """query q($urn: String!) { chart(urn: $urn) { inputFields { fields { schemaFieldUrn
  schemaField { fieldPath nativeDataType type schemaFieldEntity { urn fieldPath parent { urn }
    documentation { documentations { documentation } } } } } } } }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-fields") / "data") as live:
        column = SchemaFieldClass("amount", SchemaFieldDataTypeClass(StringTypeClass()), "varchar")
        emit(live, [
            MetadataChangeProposalWrapper(entityUrn=CHART, aspect=ChartInfoClass(
                title="revenue", description="", lastModified=ChangeAuditStampsClass())),
            MetadataChangeProposalWrapper(entityUrn=CHART, aspect=InputFieldsClass(
                [InputFieldClass(FIELD, column), InputFieldClass(make_schema_field_urn(DATASET, "bare"))])),
            MetadataChangeProposalWrapper(entityUrn=FIELD, aspect=DocumentationClass(
                [DocumentationAssociationClass("amount paid, in cents")])),
            MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=SchemaMetadataClass(
                "orders", "urn:li:dataPlatform:hive", 0, "", OtherSchemaClass(""), fields=[
                    SchemaFieldClass(name, SchemaFieldDataTypeClass(StringTypeClass()), "varchar",
                                     globalTags=GlobalTagsClass([TagAssociationClass(tag)]))
                    for name, tag in (("amount", "urn:li:tag:money"), ("payer", "urn:li:tag:pii"))])),
            MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=GlobalTagsClass(
                [TagAssociationClass("urn:li:tag:gold")])),
            MetadataChangeProposalWrapper(entityUrn=DOWNSTREAM, aspect=UpstreamLineageClass(
                [UpstreamClass(DATASET, DatasetLineageTypeClass.TRANSFORMED)]))])
        yield live


def test_a_chart_input_fields_with_their_field_entities(server):
    answer = post_graphql(server, {"query": QUERY, "variables": {"urn": CHART}}).json()
    assert "errors" not in answer, answer
    assert answer["data"]["chart"]["inputFields"]["fields"] == [
        {"schemaFieldUrn": FIELD, "schemaField": {
            "fieldPath": "amount", "nativeDataType": "varchar", "type": "STRING", "schemaFieldEntity": {
                "urn": FIELD, "fieldPath": "amount", "parent": {"urn": DATASET},
                "documentation": {"documentations": [{"documentation": "amount paid, in cents"}]}}}},
        {"schemaFieldUrn": make_schema_field_urn(DATASET, "bare"), "schemaField": None}]


RELATED = """query q($urn: String!, $direction: RelationshipDirection!, $types: [String!]!) {
  dataset(urn: $urn) { schemaMetadata { createdAt } related: relationships(input: {types: $types,
    direction: $direction, start: 0, count: 10}) { start count total relationships { type direction
      entity { urn type } } } } }"""


def related(server, token=None, **variables):
    body = {"query": RELATED, "variables": {"urn": DATASET, **variables}}
    return (post_graphql(server, body, token) if token else post_graphql(server, body)).json()


def test_relationships_and_when_the_schema_was_written(server):
    answer = related(server, direction="OUTGOING", types=["SchemaFieldTaggedWith", "TaggedWith"])
    assert "errors" not in answer, answer
    dataset = answer["data"]["dataset"]
    assert dataset["schemaMetadata"]["createdAt"] > 1_600_000_000_000
    assert dataset["related"] == {"start": 0, "count": 3, "total": 3, "relationships": [
        {"type": kind, "direction": "OUTGOING", "entity": {"urn": tag, "type": "TAG"}}
        for kind, tag in (("SchemaFieldTaggedWith", "urn:li:tag:money"), ("SchemaFieldTaggedWith", "urn:li:tag:pii"),
                          ("TaggedWith", "urn:li:tag:gold"))]}
    incoming = related(server, direction="INCOMING", types=["DownstreamOf"])["data"]["dataset"]["related"]
    assert incoming["relationships"] == [{"type": "DownstreamOf", "direction": "INCOMING",
                                          "entity": {"urn": DOWNSTREAM, "type": "DATASET"}}]
    refused = related(server, direction="INCOMING", types=["ContractFor"])
    assert "incoming ContractFor cannot be answered" in refused["errors"][0]["message"]
    outsider = principal_with_grants(server, "fields-outsider")
    assert "forbidden" in related(server, outsider, direction="OUTGOING", types=["TaggedWith"])["errors"][0]["message"]
