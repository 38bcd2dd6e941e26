"""Every field of every entity type the GraphQL schema serves resolves, for an entity of each
type written with DataHub's emitter: the document asks for all of them (generated from the
schema itself, so a field added to schema.graphql is asked too), and the answer carries no
error; the values are checked against the aspects written where the schema shapes them."""

from __future__ import annotations

import pytest
from datahub.emitter.mce_builder import make_data_job_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata import schema_classes as models  # its Test* classes, kept from pytest's collection
from datahub.metadata.schema_classes import (
    AuditStampClass,
    ChangeAuditStampsClass,
    ChartInfoClass,
    ContainerClass,
    ContainerPropertiesClass,
    CorpGroupInfoClass,
    CorpUserInfoClass,
    DashboardInfoClass,
    DataFlowInfoClass,
    DataJobInfoClass,
    DataJobInputOutputClass,
    DataPlatformInfoClass,
    DataPlatformInstanceClass,
    DataProcessInstancePropertiesClass,
    DataProductPropertiesClass,
    DatasetPropertiesClass,
    DocumentationAssociationClass,
    DocumentationClass,
    DomainPropertiesClass,
    DomainsClass,
    EditableDatasetPropertiesClass,
    GlobalTagsClass,
    GlossaryNodeInfoClass,
    GlossaryTermAssociationClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    InputFieldClass,
    InputFieldsClass,
    MetadataAttributionClass,
    MLFeaturePropertiesClass,
    MLFeatureTablePropertiesClass,
    MLHyperParamClass,
    MLMetricClass,
    MLModelGroupPropertiesClass,
    MLModelPropertiesClass,
    MLPrimaryKeyPropertiesClass,
    MLTrainingRunPropertiesClass,
    OtherSchemaClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
    StringTypeClass,
    SubTypesClass,
    TagAssociationClass,
    TagPropertiesClass,
)
from graphql import (
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLUnionType,
    get_named_type,
)

from lodestar.api.graphql import schema
from lodestar.api.graphql.entities import ENTITY_TYPES
from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, post_graphql
from tests.support.server import LiveServer

STAMP = AuditStampClass(time=1, actor="urn:li:corpuser:admin")
DATASET = dataset_urn("shop.orders")
URNS = {
    "dataset": DATASET,
    "dataJob": make_data_job_urn("airflow", "etl", "load", cluster="prod"),
    "dataFlow": "urn:li:dataFlow:(airflow,etl,prod)",
    "chart": "urn:li:chart:(looker,c1)",
    "dashboard": "urn:li:dashboard:(looker,d1)",
    "container": "urn:li:container:db",
    "corpuser": "urn:li:corpuser:jdoe",
    "corpGroup": "urn:li:corpGroup:analysts",
    "tag": "urn:li:tag:pii",
    "glossaryTerm": "urn:li:glossaryTerm:Revenue",
    "glossaryNode": "urn:li:glossaryNode:Finance",
    "domain": "urn:li:domain:sales",
    "dataPlatform": "urn:li:dataPlatform:hive",
    "dataProduct": "urn:li:dataProduct:orders",
    "schemaField": make_schema_field_urn(DATASET, "id"),
    "dataProcessInstance": "urn:li:dataProcessInstance:run1",
    "mlModel": "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn,PROD)",
    "mlModelGroup": "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churners,PROD)",
    "mlFeature": "urn:li:mlFeature:(users,age)",
    "mlFeatureTable": "urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,users)",
    "mlPrimaryKey": "urn:li:mlPrimaryKey:(users,user_id)",
    "test": "urn:li:test:has-owner",
    "dataHubView": "urn:li:dataHubView:pii-tables",
    "structuredProperty": "urn:li:structuredProperty:io.shop.retention",
    "incident": "urn:li:incident:late-load",
    "assertion": "urn:li:assertion:orders-fresh",
    "versionSet": "urn:li:versionSet:(orders-history,dataset)",
    "query": "urn:li:query:orders-daily",
}
COMMON = [GlobalTagsClass(tags=[TagAssociationClass(URNS["tag"])]),
          GlossaryTermsClass(terms=[GlossaryTermAssociationClass(URNS["glossaryTerm"])], auditStamp=STAMP),
          OwnershipClass(owners=[OwnerClass(URNS["corpuser"], OwnershipTypeClass.TECHNICAL_OWNER),
                                 OwnerClass(URNS["corpGroup"], OwnershipTypeClass.BUSINESS_OWNER)]),
          DomainsClass(domains=[URNS["domain"]]), StatusClass(removed=False)]
OWN = {"dataset": [DatasetPropertiesClass(name="orders", description="d", customProperties={"k": "v"}),
                   EditableDatasetPropertiesClass(description="edited"), ContainerClass(URNS["container"]),
                   models.TestResultsClass(failing=[], passing=[
                       models.TestResultClass(URNS["test"], models.TestResultTypeClass.SUCCESS)]),
                   SubTypesClass(typeNames=["Table"]), DataPlatformInstanceClass(platform=URNS["dataPlatform"]),
                   SchemaMetadataClass(schemaName="orders", platform=URNS["dataPlatform"], version=0, hash="h",
                                       created=AuditStampClass(time=5, actor="urn:li:corpuser:admin"),
                                       platformSchema=OtherSchemaClass(rawSchema=""), fields=[SchemaFieldClass(
                                           fieldPath="id", type=SchemaFieldDataTypeClass(StringTypeClass()),
                                           nativeDataType="varchar", globalTags=COMMON[0])])],
       "dataJob": [DataJobInfoClass(name="load", type="COMMAND"), DataJobInputOutputClass(
           inputDatasets=[DATASET], outputDatasets=[DATASET], inputDatajobs=[])],
       "dataFlow": [DataFlowInfoClass(name="etl", project="p")],
       "chart": [ChartInfoClass(title="c1", description="c", lastModified=ChangeAuditStampsClass()),
                 InputFieldsClass(fields=[InputFieldClass(schemaFieldUrn=make_schema_field_urn(DATASET, "id"),
                                                          schemaField=SchemaFieldClass(
                                                              fieldPath="id", nativeDataType="varchar",
                                                              type=SchemaFieldDataTypeClass(StringTypeClass())))])],
       "dashboard": [DashboardInfoClass(title="d1", description="d", lastModified=ChangeAuditStampsClass())],
       "container": [ContainerPropertiesClass(name="db", env="PROD"),
                     DataPlatformInstanceClass(platform=URNS["dataPlatform"])],
       "corpuser": [CorpUserInfoClass(active=True, displayName="Jane", email="j@example.com"),
                    models.CorpUserEditableInfoClass(pictureLink="https://example.com/jane.png", skills=["sql"])],
       "corpGroup": [CorpGroupInfoClass(admins=[], members=[], groups=[], displayName="Analysts")],
       "tag": [TagPropertiesClass(name="PII", colorHex="#ff0000")],
       "glossaryTerm": [GlossaryTermInfoClass(definition="money", termSource="INTERNAL", name="Revenue")],
       "glossaryNode": [GlossaryNodeInfoClass(definition="finance terms", name="Finance")],
       "domain": [DomainPropertiesClass(name="Sales")],
       "dataPlatform": [DataPlatformInfoClass(name="hive", type="FILE_SYSTEM", datasetNameDelimiter=".",
                                              displayName="Hive")],
       "dataProduct": [DataProductPropertiesClass(name="Orders")],
       "schemaField": [DocumentationClass(documentations=[DocumentationAssociationClass(
           documentation="the order's key", attribution=MetadataAttributionClass(
               time=2, actor="urn:li:corpuser:admin", source="urn:li:dataHubAction:docs", sourceDetail={"k": "v"}))])],
       "dataProcessInstance": [DataProcessInstancePropertiesClass(name="run1", created=STAMP),
                               SubTypesClass(typeNames=["TRAINING"]), ContainerClass(URNS["container"]),
                               MLTrainingRunPropertiesClass(id="fit-7", outputUrls=["s3://models/7"],
                                                            trainingMetrics=[MLMetricClass(name="auc", value="0.8")],
                                                            hyperParams=[MLHyperParamClass(name="depth", value="6")])],
       "mlModel": [MLModelPropertiesClass(name="churn", description="m")],
       "mlModelGroup": [MLModelGroupPropertiesClass(description="g")],
       "mlFeature": [MLFeaturePropertiesClass(description="f")],
       "mlFeatureTable": [MLFeatureTablePropertiesClass(description="t")],
       "mlPrimaryKey": [MLPrimaryKeyPropertiesClass(sources=[], description="k")],
       "test": [models.TestInfoClass(name="Has an owner", category="Governance", definition=models.TestDefinitionClass(
           models.TestDefinitionTypeClass.JSON, json='{"rules": []}'))],
       "incident": [models.IncidentInfoClass(
           type="FRESHNESS", entities=[DATASET], created=STAMP, title="late",
           status=models.IncidentStatusClass(state="ACTIVE", lastUpdated=STAMP),
           source=models.IncidentSourceClass(type="ASSERTION_FAILURE", sourceUrn="urn:li:assertion:orders-fresh"))],
       "assertion": [models.AssertionInfoClass(type="FRESHNESS")],
       "query": [models.QueryPropertiesClass(statement=models.QueryStatementClass("SELECT 1"), source="MANUAL",
                                             created=STAMP, lastModified=STAMP)],
       "dataHubView": [models.DataHubViewInfoClass(
           name="PII tables", type="GLOBAL", created=STAMP, lastModified=STAMP,
           definition=models.DataHubViewDefinitionClass(entityTypes=["dataset"], filter=models.FilterClass(or_=[
               models.ConjunctiveCriterionClass(and_=[models.CriterionClass(field="tags", values=[URNS["tag"]])])])))],
       "versionSet": [models.VersionSetPropertiesClass(
           latest=DATASET, versioningScheme=models.VersioningSchemeClass.LEXICOGRAPHIC_STRING)],
       "structuredProperty": [models.StructuredPropertyDefinitionClass(
           qualifiedName="io.shop.retention", valueType="urn:li:dataType:datahub.number", entityTypes=[
               "urn:li:entityType:datahub.dataset"], displayName="Retention", cardinality="SINGLE")]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-entities") / "data") as live:
        mcps = []
        for kind, urn in URNS.items():
            belongs = set(live.gms.registry.entities[kind].aspects)
            assert all(a.get_aspect_name() in belongs for a in OWN[kind])
            aspects = [*(a for a in COMMON if a.get_aspect_name() in belongs), *OWN[kind]]
            assert aspects, kind
            mcps += [MetadataChangeProposalWrapper(entityUrn=urn, aspect=a) for a in aspects]
        emit(live, mcps)
        yield live


def selection(kind: GraphQLNamedType, depth: int) -> str | None:
    """Every field of a type and of the types it leads to, `depth` levels down (then their
    scalars); None for an object type without scalars at the last level."""
    if isinstance(kind, GraphQLUnionType | GraphQLInterfaceType):
        kinds = schema().get_possible_types(kind)
        return "{ __typename " + " ".join(f"... on {t.name} {{ urn }}" for t in kinds) + " }"
    assert isinstance(kind, GraphQLObjectType)
    parts = []
    for name, f in kind.fields.items():
        if any(isinstance(a.type, GraphQLNonNull) for a in f.args.values()):
            continue  # a field that needs an argument
        inner = get_named_type(f.type)
        if not isinstance(inner, GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType):
            parts.append(name)
        elif depth > 0 and (below := selection(inner, depth - 1)) is not None:
            parts.append(f"{name} {below}")
        elif depth == 0 and (leaves := selection(inner, -1)) is not None:
            parts.append(f"{name} {leaves}")
    if depth < 0:  # scalars only
        parts = [name for name, f in kind.fields.items() if not isinstance(
            get_named_type(f.type), GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType)]
    return "{ " + " ".join(parts) + " }" if parts else None


def ask(server: LiveServer, urn: str) -> dict:
    object_type = schema().get_type(ENTITY_TYPES[urn.removeprefix("urn:li:").partition(":")[0]][1])
    query = f'{{ entity(urn: "{urn}") {{ ... on {object_type.name} {selection(object_type, 3)} }} }}'
    answer = post_graphql(server, {"query": query})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "errors" not in body, (query, body["errors"])
    return body["data"]["entity"]


@pytest.mark.parametrize("kind", sorted(URNS))
def test_every_field_resolves(server, kind):
    found = ask(server, URNS[kind])
    assert found["urn"] == URNS[kind] and found["type"] == ENTITY_TYPES[kind][0]
    if "exists" in found:
        assert found["exists"] is True
    belongs = set(server.gms.registry.entities[kind].aspects)
    if "tags" in found and "globalTags" in belongs:
        assert [t["tag"]["urn"] for t in found["tags"]["tags"]] == [URNS["tag"]]
    if "ownership" in found and "ownership" in belongs:
        assert {o["owner"]["__typename"] for o in found["ownership"]["owners"]} == {"CorpUser", "CorpGroup"}
    if "domain" in found and "domains" in belongs:
        assert found["domain"]["domain"]["urn"] == URNS["domain"]


def test_every_served_type_is_covered():
    assert set(URNS) == set(ENTITY_TYPES)


def test_values_follow_the_aspects(server):
    dataset = ask(server, URNS["dataset"])
    assert dataset["editableProperties"]["description"] == "edited"
    assert dataset["testResults"]["failing"] == []
    [passed] = dataset["testResults"]["passing"]
    assert passed["type"] == "SUCCESS" and passed["test"]["urn"] == URNS["test"]
    assert (passed["test"]["name"], passed["test"]["category"]) == ("Has an owner", "Governance")
    assert ask(server, URNS["test"])["definition"] == {"json": '{"rules": []}'}
    assert ask(server, URNS["structuredProperty"])["definition"] == {
        "qualifiedName": "io.shop.retention", "displayName": "Retention", "description": None,
        "cardinality": "SINGLE", "immutable": False}
    incident = ask(server, URNS["incident"])
    assert (incident["incidentType"], incident["title"], incident["status"]["state"]) == ("FRESHNESS", "late", "ACTIVE")
    assert incident["entity"]["urn"] == DATASET and incident["source"]["type"] == "ASSERTION_FAILURE"
    assert incident["source"]["source"] == {"__typename": "Assertion", "urn": URNS["assertion"]}
    info = ask(server, URNS["assertion"])["info"]
    assert info["type"] == "FRESHNESS" and info["customAssertion"] is None and info["source"] is None
    view = ask(server, URNS["dataHubView"])
    assert (view["name"], view["viewType"]) == ("PII tables", "GLOBAL")
    assert view["definition"] == {"entityTypes": ["DATASET"], "filter": {"operator": "AND", "filters": [
        {"field": "tags", "condition": "EQUAL", "values": [URNS["tag"]], "negated": False}]}}
    assert dataset["schemaMetadata"]["fields"][0]["globalTags"]["tags"] == [
        {"associatedUrn": URNS["schemaField"], "context": None}]
    assert dataset["schemaMetadata"]["aspectVersion"] is None  # the latest, not a given version
    assert dataset["schemaMetadata"]["createdAt"] == 5
    assert dataset["dataPlatformInstance"]["platform"]["properties"] == {
        "type": "FILE_SYSTEM", "displayName": "Hive", "datasetNameDelimiter": ".", "logoUrl": None}
    job = ask(server, URNS["dataJob"])
    assert job["dataFlow"]["urn"] == URNS["dataFlow"] and job["jobId"] == "load"
    assert [d["urn"] for d in job["inputOutput"]["outputDatasets"]] == [DATASET]
    chart = ask(server, URNS["chart"])
    assert chart["properties"]["name"] == "c1"
    [used] = chart["inputFields"]["fields"]
    assert used["schemaFieldUrn"] == URNS["schemaField"] and used["schemaField"]["type"] == "STRING"
    assert used["schemaField"]["schemaFieldEntity"]["urn"] == URNS["schemaField"]
    assert ask(server, URNS["schemaField"])["documentation"]["documentations"] == [
        {"documentation": "the order's key", "attribution": {
            "time": 2, "actor": "urn:li:corpuser:admin", "source": "urn:li:dataHubAction:docs",
            "sourceDetail": [{"key": "k", "value": "v"}]}}]
    assert ask(server, URNS["glossaryTerm"])["properties"]["description"] == "money"
    user = ask(server, URNS["corpuser"])
    assert user["editableInfo"]["pictureLink"] == "https://example.com/jane.png"
    assert user["editableProperties"] == user["editableInfo"] and user["editableInfo"]["skills"] == ["sql"]
    assert ask(server, URNS["glossaryNode"])["properties"] == {"name": "Finance", "description": "finance terms"}
    field = ask(server, URNS["schemaField"])
    assert field["fieldPath"] == "id" and field["parent"]["urn"] == DATASET
    assert ask(server, URNS["tag"])["properties"]["colorHex"] == "#ff0000"
    assert ask(server, URNS["mlFeature"])["featureNamespace"] == "users"
    assert ask(server, URNS["container"])["platform"]["urn"] == URNS["dataPlatform"]
    run = ask(server, URNS["dataProcessInstance"])
    assert run["properties"]["name"] == "run1" and run["properties"]["created"]["time"] == 1
    assert run["subTypes"] == {"typeNames": ["TRAINING"]} and run["container"]["urn"] == URNS["container"]
    assert run["mlTrainingRunProperties"] == {
        "id": "fit-7", "outputUrls": ["s3://models/7"],
        "trainingMetrics": [{"name": "auc", "description": None, "value": "0.8", "createdAt": None}],
        "hyperParams": [{"name": "depth", "description": None, "value": "6", "createdAt": None}]}


def test_structured_properties_are_listed_by_type(server):
    client = graph(server)
    try:
        found = list(client.get_urns_by_filter(entity_types=["structuredProperty"]))
    finally:
        client.close()
    assert found == [URNS["structuredProperty"]]
