"""DataHub's GraphQL edit mutations (addTag, removeTag, addTerm, removeTerm, updateDescription) on
an entity and on a dataset's field, as DataHub's web app and its tests send them; each result read
back through Lodestar's own API, and through the GraphQL fields that show it (globalTags,
glossaryTerms, editableSchemaMetadata, editableProperties)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import requests
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ChangeAuditStampsClass,
    ChartInfoClass,
    ContainerClass,
    ContainerPropertiesClass,
    DatasetPropertiesClass,
    TagPropertiesClass,
)

from tests.support.access_fixtures import principal_with_grants
from tests.support.graphql import emit, live_server, post_graphql
from tests.support.server import TOKEN, LiveServer

DATASET = "urn:li:dataset:(urn:li:dataPlatform:kafka,edits.orders,PROD)"
CHART = "urn:li:chart:(looker,edits.revenue)"
FIELD = "[version=2.0].[type=boolean].is_paid"
LEGACY = "urn:li:tag:Legacy"
TERM = "urn:li:glossaryTerm:Revenue"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-edits") / "data") as live:
        emit(live, [
            MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=DatasetPropertiesClass(description="orders")),
            MetadataChangeProposalWrapper(entityUrn=CHART, aspect=ChartInfoClass(
                title="revenue", description="", lastModified=ChangeAuditStampsClass())),
            MetadataChangeProposalWrapper(entityUrn=LEGACY, aspect=TagPropertiesClass(
                name="Legacy", description="no longer supported"))])
        yield live


def graphql(server: LiveServer, query: str, token: str = TOKEN, **variables: Any) -> dict[str, Any]:
    answer = post_graphql(server, {"query": query, "variables": variables}, token)
    assert answer.status_code == 200, answer.text
    return answer.json()


def mutate(server: LiveServer, name: str, kind: str, token: str = TOKEN, **given: Any) -> dict[str, Any]:
    return graphql(server, f"mutation m($input: {kind}!) {{ {name}(input: $input) }}", token, input=given)


def aspect(server: LiveServer, urn: str, name: str) -> Any:
    answer = requests.get(f"{server.url}/v1/entities/{quote(urn, safe='')}/aspects/{name}",
                          headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return answer.json()["value"] if answer.status_code == 200 else None


DATASET_TAGS = """query q($urn: String!) { dataset(urn: $urn) {
  description globalTags { tags { tag { urn name description } } } glossaryTerms { terms { term { urn } } }
  editableProperties { description }
  editableSchemaMetadata { editableSchemaFieldInfo { fieldPath description
    globalTags { tags { tag { urn } } } glossaryTerms { terms { term { urn } } } } } } }"""


def test_tags_and_terms_of_an_entity(server):
    before = graphql(server, DATASET_TAGS, urn=DATASET)["data"]["dataset"]
    assert before["globalTags"] is None and before["glossaryTerms"] is None and before["description"] == "orders"
    assert mutate(server, "addTag", "TagAssociationInput", tagUrn=LEGACY, resourceUrn=DATASET) == {
        "data": {"addTag": True}}
    assert aspect(server, DATASET, "globalTags") == {"tags": [{"tag": LEGACY}]}
    tagged = graphql(server, DATASET_TAGS, urn=DATASET)["data"]["dataset"]["globalTags"]
    assert tagged == {"tags": [{"tag": {"urn": LEGACY, "name": "Legacy", "description": "no longer supported"}}]}

    assert mutate(server, "addTerm", "TermAssociationInput", termUrn=TERM, resourceUrn=DATASET)["data"]["addTerm"]
    terms = aspect(server, DATASET, "glossaryTerms")
    assert terms["terms"] == [{"urn": TERM}] and terms["auditStamp"]["actor"] == "urn:li:corpuser:admin"

    for name, kind, given in (("removeTag", "TagAssociationInput", {"tagUrn": LEGACY}),
                              ("removeTerm", "TermAssociationInput", {"termUrn": TERM})):
        for _ in range(2):  # removing what is gone is done already
            assert mutate(server, name, kind, resourceUrn=DATASET, **given)["data"][name] is True
    after = graphql(server, DATASET_TAGS, urn=DATASET)["data"]["dataset"]
    assert after["globalTags"] == {"tags": []} and after["glossaryTerms"] == {"terms": []}


def test_tags_terms_and_description_of_a_dataset_field(server):
    field = {"resourceUrn": DATASET, "subResourceType": "DATASET_FIELD", "subResource": FIELD}
    assert mutate(server, "addTag", "TagAssociationInput", tagUrn=LEGACY, **field)["data"]["addTag"] is True
    assert mutate(server, "addTerm", "TermAssociationInput", termUrn=TERM, **field)["data"]["addTerm"] is True
    assert mutate(server, "updateDescription", "DescriptionUpdateInput", description="paid yet?", **field
                  )["data"]["updateDescription"] is True
    [info] = aspect(server, DATASET, "editableSchemaMetadata")["editableSchemaFieldInfo"]
    assert info["fieldPath"] == FIELD and info["description"] == "paid yet?"
    assert info["globalTags"] == {"tags": [{"tag": LEGACY}]} and info["glossaryTerms"]["terms"] == [{"urn": TERM}]
    shown = graphql(server, DATASET_TAGS, urn=DATASET)["data"]["dataset"]["editableSchemaMetadata"]
    assert shown == {"editableSchemaFieldInfo": [{
        "fieldPath": FIELD, "description": "paid yet?", "globalTags": {"tags": [{"tag": {"urn": LEGACY}}]},
        "glossaryTerms": {"terms": [{"term": {"urn": TERM}}]}}]}

    assert mutate(server, "removeTag", "TagAssociationInput", tagUrn=LEGACY, **field)["data"]["removeTag"] is True
    [info] = aspect(server, DATASET, "editableSchemaMetadata")["editableSchemaFieldInfo"]
    assert info["globalTags"] == {"tags": []} and info["description"] == "paid yet?"


def test_descriptions_and_other_entity_types(server):
    assert mutate(server, "updateDescription", "DescriptionUpdateInput", description="edited",
                  resourceUrn=DATASET)["data"]["updateDescription"] is True
    assert aspect(server, DATASET, "editableDatasetProperties")["description"] == "edited"
    assert graphql(server, DATASET_TAGS, urn=DATASET)["data"]["dataset"]["editableProperties"] == {
        "description": "edited"}
    assert mutate(server, "addTag", "TagAssociationInput", tagUrn=LEGACY, resourceUrn=CHART)["data"]["addTag"]
    chart = graphql(server, "query q($urn: String!) { chart(urn: $urn) { globalTags { tags { tag { urn } } } } }",
                    urn=CHART)["data"]["chart"]
    assert chart == {"globalTags": {"tags": [{"tag": {"urn": LEGACY}}]}}


def test_refusals_name_the_problem_and_write_nothing(server):
    reader = principal_with_grants(server, "edits-reader", [("instance", ["READ"])])
    unwritten = "urn:li:dataset:(urn:li:dataPlatform:kafka,edits.untouched,PROD)"
    cases = [
        (("addTag", "TagAssociationInput"), {"tagUrn": LEGACY, "resourceUrn": unwritten}, reader, "forbidden"),
        (("addTag", "TagAssociationInput"), {"tagUrn": LEGACY, "resourceUrn": "no-urn"}, TOKEN, "no URN"),
        (("addTag", "TagAssociationInput"), {"tagUrn": LEGACY, "resourceUrn": CHART,
                                             "subResourceType": "DATASET_FIELD", "subResource": "x"}, TOKEN, "dataset"),
        (("addTerm", "TermAssociationInput"), {"termUrn": TERM, "resourceUrn": unwritten,
                                               "subResourceType": "DATASET_FIELD"}, TOKEN, "subResource"),
        (("updateDescription", "DescriptionUpdateInput"), {"description": "x", "resourceUrn": "urn:li:corpuser:x"},
         TOKEN, "corpuser"),
    ]
    for (name, kind), given, token, named in cases:
        answer = mutate(server, name, kind, token, **given)
        assert answer["data"][name] is None and named in answer["errors"][0]["message"], answer
    assert aspect(server, unwritten, "globalTags") is None


CONTAINER = "urn:li:container:edits-schema"
CONTAINER_VIEW = """query q($urn: String!) { container(urn: $urn) {
  editableProperties { description } institutionalMemory { elements { url label } }
  ownership { owners { owner { ... on CorpUser { urn } } type } }
  entities(input: {}) { total searchResults { entity { urn } } } } }"""


def test_a_container_edited_and_its_entities(server):
    inside = "urn:li:dataset:(urn:li:dataPlatform:kafka,edits.inside,PROD)"
    emit(server, [MetadataChangeProposalWrapper(entityUrn=CONTAINER, aspect=ContainerPropertiesClass(name="schema")),
                  MetadataChangeProposalWrapper(entityUrn=inside, aspect=ContainerClass(CONTAINER))])
    before = graphql(server, CONTAINER_VIEW, urn=CONTAINER)["data"]["container"]
    assert before["editableProperties"] is None and before["institutionalMemory"] is None
    assert before["entities"] == {"total": 1, "searchResults": [{"entity": {"urn": inside}}]}

    assert mutate(server, "addOwner", "AddOwnerInput", ownerUrn="urn:li:corpuser:jdoe", ownerEntityType="CORP_USER",
                  ownershipTypeUrn="urn:li:ownershipType:__system__technical_owner",
                  resourceUrn=CONTAINER)["data"]["addOwner"] is True
    for label in ("Runbook", "Runbook v2"):  # one link per URL
        assert mutate(server, "addLink", "AddLinkInput", linkUrl="https://wiki.example/a/b", label=label,
                      resourceUrn=CONTAINER)["data"]["addLink"] is True
    assert mutate(server, "updateDescription", "DescriptionUpdateInput", description="edited schema",
                  resourceUrn=CONTAINER)["data"]["updateDescription"] is True
    [owner] = aspect(server, CONTAINER, "ownership")["owners"]
    assert owner == {"owner": "urn:li:corpuser:jdoe", "type": "TECHNICAL_OWNER",
                     "typeUrn": "urn:li:ownershipType:__system__technical_owner"}
    [link] = aspect(server, CONTAINER, "institutionalMemory")["elements"]
    assert link["url"] == "https://wiki.example/a/b" and link["description"] == "Runbook v2"
    after = graphql(server, CONTAINER_VIEW, urn=CONTAINER)["data"]["container"]
    assert after["editableProperties"] == {"description": "edited schema"}
    assert after["institutionalMemory"] == {"elements": [{"url": "https://wiki.example/a/b", "label": "Runbook v2"}]}
    assert after["ownership"] == {"owners": [{"owner": {"urn": "urn:li:corpuser:jdoe"}, "type": "TECHNICAL_OWNER"}]}
    wrong = mutate(server, "addOwner", "AddOwnerInput", ownerUrn="urn:li:corpGroup:x", ownerEntityType="CORP_USER",
                   resourceUrn=CONTAINER)
    assert "CORP_USER" in wrong["errors"][0]["message"]


def test_deprecation_is_set_whole_by_the_caller(server):
    view = "query q($urn: String!) { dataset(urn: $urn) { deprecation { deprecated decommissionTime note actor } } }"
    assert graphql(server, view, urn=DATASET)["data"]["dataset"]["deprecation"] is None
    assert mutate(server, "updateDeprecation", "UpdateDeprecationInput", urn=DATASET, deprecated=True,
                  note="use orders_v2", decommissionTime=1_700_000_000_000)["data"]["updateDeprecation"] is True
    assert aspect(server, DATASET, "deprecation") == {"deprecated": True, "note": "use orders_v2",
                                                      "decommissionTime": 1_700_000_000_000,
                                                      "actor": "urn:li:corpuser:admin"}
    assert mutate(server, "updateDeprecation", "UpdateDeprecationInput", urn=DATASET, deprecated=False
                  )["data"]["updateDeprecation"] is True
    assert graphql(server, view, urn=DATASET)["data"]["dataset"]["deprecation"] == {
        "deprecated": False, "decommissionTime": None, "note": "", "actor": "urn:li:corpuser:admin"}
