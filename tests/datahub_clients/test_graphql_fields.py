"""GraphQL fields of DataHub's schema read from aspects written with DataHub's emitter: a chart's
input fields (each a schema field with its field entity) and a schema field's documentation."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ChangeAuditStampsClass,
    ChartInfoClass,
    DocumentationAssociationClass,
    DocumentationClass,
    InputFieldClass,
    InputFieldsClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    StringTypeClass,
)

from tests.support.graphql import emit, live_server, post_graphql

CHART = "urn:li:chart:(looker,fields.revenue)"
DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,fields.orders,PROD)"
FIELD = make_schema_field_urn(DATASET, "amount")
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
                [DocumentationAssociationClass("amount paid, in cents")]))])
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
