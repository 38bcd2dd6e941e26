"""The edit mutations of the GraphQL API (addTag, removeTag, addTerm, removeTerm,
updateDescription, addOwner, addLink, removeLink) write the aspects DataHub's SDK reads back, on
an entity and on one field of a dataset's schema, and the entity fields that show those aspects
(globalTags, editableSchemaMetadata, editableProperties, institutionalMemory) answer them; so do
updateDeprecation, createDomain, setDomain, unsetDomain and updateCorpGroupProperties, and
listDomains and listGroups list the domains and groups."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ContainerClass,
    ContainerPropertiesClass,
    CorpGroupEditableInfoClass,
    CorpGroupInfoClass,
    CorpUserInfoClass,
    DatasetPropertiesClass,
    DeprecationClass,
    DomainPropertiesClass,
    DomainsClass,
    EditableContainerPropertiesClass,
    EditableDatasetPropertiesClass,
    EditableSchemaMetadataClass,
    GlobalTagsClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    InstitutionalMemoryClass,
    OwnershipClass,
    TagPropertiesClass,
)

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, post_graphql, wait_indexed

WAREHOUSE = "urn:li:container:warehouse"
SHIPMENTS = dataset_urn("logistics.shipments")
RETURNS = dataset_urn("logistics.returns")
FRAGILE = "urn:li:tag:fragile"
TRACKING = "urn:li:glossaryTerm:TrackingNumber"
CLERK = "urn:li:corpuser:clerk"
PACKERS, DRIVERS = "urn:li:corpGroup:packers", "urn:li:corpGroup:drivers"
FIELD = "[version=2.0].[type=string].carrier/code"  # a field path with a slash in it


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-edits") / "data") as live:
        emit(live, [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in [
            (WAREHOUSE, ContainerPropertiesClass(name="warehouse")),
            (SHIPMENTS, DatasetPropertiesClass(name="shipments", description="parcels sent")),
            (SHIPMENTS, ContainerClass(WAREHOUSE)),
            (RETURNS, DatasetPropertiesClass(name="returns")),
            (RETURNS, ContainerClass(WAREHOUSE)),
            (FRAGILE, TagPropertiesClass(name="fragile", description="handle with care")),
            (TRACKING, GlossaryTermInfoClass(definition="a parcel's number", termSource="INTERNAL")),
            (CLERK, CorpUserInfoClass(active=True, displayName="Clerk")),
            (PACKERS, CorpGroupInfoClass(admins=[], members=[], groups=[], displayName="Packers")),
            (DRIVERS, CorpGroupInfoClass(admins=[], members=[], groups=[], displayName="Drivers")),
        ]])
        yield live


def mutate(server, name: str, given: dict, token: str | None = None) -> dict:
    input_type = {"addTag": "TagAssociationInput", "removeTag": "TagAssociationInput",
                  "addTerm": "TermAssociationInput", "removeTerm": "TermAssociationInput",
                  "updateDescription": "DescriptionUpdateInput", "addOwner": "AddOwnerInput",
                  "addLink": "AddLinkInput", "removeLink": "RemoveLinkInput",
                  "updateDeprecation": "UpdateDeprecationInput", "createDomain": "CreateDomainInput"}[name]
    body = {"query": f"mutation m($input: {input_type}!) {{ {name}(input: $input) }}", "variables": {"input": given}}
    answer = post_graphql(server, body, **({"token": token} if token else {}))
    assert answer.status_code == 200, answer.text
    return answer.json()


def ask(server, query: str) -> dict:
    answer = post_graphql(server, {"query": query})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    return answer.json()["data"]


def aspect(server, urn: str, cls):
    client = graph(server)
    try:
        return client.get_aspect(urn, cls)
    finally:
        client.close()


def test_tags_and_terms_of_an_entity(server):
    query = f'{{ dataset(urn: "{SHIPMENTS}") {{ description globalTags {{ tags {{ tag {{ urn description }} }} }}' \
            ' glossaryTerms { terms { term { urn } } } } }'
    assert ask(server, query)["dataset"] == {"description": "parcels sent", "globalTags": None, "glossaryTerms": None}
    assert mutate(server, "addTag", {"tagUrn": FRAGILE, "resourceUrn": SHIPMENTS}) == {"data": {"addTag": True}}
    assert mutate(server, "addTag", {"tagUrn": FRAGILE, "resourceUrn": SHIPMENTS})["data"]["addTag"] is True
    assert mutate(server, "addTerm", {"termUrn": TRACKING, "resourceUrn": SHIPMENTS})["data"]["addTerm"] is True
    assert [t.tag for t in aspect(server, SHIPMENTS, GlobalTagsClass).tags] == [FRAGILE]  # once, not twice
    terms = aspect(server, SHIPMENTS, GlossaryTermsClass)
    assert [t.urn for t in terms.terms] == [TRACKING] and terms.auditStamp.actor.startswith("urn:li:corpuser:")
    found = ask(server, query)["dataset"]
    assert found["globalTags"] == {"tags": [{"tag": {"urn": FRAGILE, "description": "handle with care"}}]}
    assert found["glossaryTerms"] == {"terms": [{"term": {"urn": TRACKING}}]}
    assert mutate(server, "removeTag", {"tagUrn": FRAGILE, "resourceUrn": SHIPMENTS})["data"]["removeTag"] is True
    assert mutate(server, "removeTerm", {"termUrn": TRACKING, "resourceUrn": SHIPMENTS})["data"]["removeTerm"] is True
    found = ask(server, query)["dataset"]
    assert found["globalTags"] == {"tags": []} and found["glossaryTerms"] == {"terms": []}


def test_edits_of_a_schema_field(server):
    where = {"resourceUrn": SHIPMENTS, "subResource": FIELD, "subResourceType": "DATASET_FIELD"}
    assert mutate(server, "addTag", {**where, "tagUrn": FRAGILE})["data"]["addTag"] is True
    assert mutate(server, "addTerm", {**where, "termUrn": TRACKING})["data"]["addTerm"] is True
    assert mutate(server, "updateDescription", {**where, "description": "who carries it"})["data"][
        "updateDescription"] is True
    [info] = aspect(server, SHIPMENTS, EditableSchemaMetadataClass).editableSchemaFieldInfo
    assert info.fieldPath == FIELD and info.description == "who carries it"
    assert [t.tag for t in info.globalTags.tags] == [FRAGILE]
    assert [t.urn for t in info.glossaryTerms.terms] == [TRACKING]
    assert mutate(server, "removeTag", {**where, "tagUrn": FRAGILE})["data"]["removeTag"] is True
    found = ask(server, f'{{ dataset(urn: "{SHIPMENTS}") {{ editableSchemaMetadata {{ editableSchemaFieldInfo {{'
                        ' fieldPath description globalTags { tags { tag { urn } } }'
                        ' glossaryTerms { terms { term { urn } } } } } } }')
    assert found["dataset"]["editableSchemaMetadata"] == {"editableSchemaFieldInfo": [{
        "fieldPath": FIELD, "description": "who carries it", "globalTags": {"tags": []},
        "glossaryTerms": {"terms": [{"term": {"urn": TRACKING}}]}}]}


def test_description_owner_and_links_of_a_container(server):
    assert mutate(server, "updateDescription", {"resourceUrn": WAREHOUSE, "description": "where parcels wait"})[
        "data"]["updateDescription"] is True
    assert mutate(server, "addOwner", {"resourceUrn": WAREHOUSE, "ownerUrn": CLERK, "ownerEntityType": "CORP_USER",
                                       "ownershipTypeUrn": "urn:li:ownershipType:__system__business_owner"})[
        "data"]["addOwner"] is True
    for url in ("https://wiki.example/warehouse", "https://wiki.example/old"):
        assert mutate(server, "addLink", {"resourceUrn": WAREHOUSE, "linkUrl": url, "label": "wiki"})[
            "data"]["addLink"] is True
    assert mutate(server, "removeLink", {"resourceUrn": WAREHOUSE, "linkUrl": "https://wiki.example/old"})[
        "data"]["removeLink"] is True
    assert aspect(server, WAREHOUSE, EditableContainerPropertiesClass).description == "where parcels wait"
    [owner] = aspect(server, WAREHOUSE, OwnershipClass).owners
    assert (owner.owner, owner.type) == (CLERK, "BUSINESS_OWNER")
    assert [e.url for e in aspect(server, WAREHOUSE, InstitutionalMemoryClass).elements] == [
        "https://wiki.example/warehouse"]
    wait_indexed(server)
    found = ask(server, f'{{ container(urn: "{WAREHOUSE}") {{ editableProperties {{ description }}'
                        ' institutionalMemory { elements { url label author { urn } } }'
                        ' ownership { owners { owner { ... on CorpUser { urn } } } }'
                        ' entities(input: {count: 5}) { total searchResults { entity { urn } } } } }')["container"]
    assert found["editableProperties"] == {"description": "where parcels wait"}
    [link] = found["institutionalMemory"]["elements"]
    assert link["url"] == "https://wiki.example/warehouse" and link["label"] == "wiki"
    assert link["author"]["urn"].startswith("urn:li:corpuser:")
    assert found["ownership"] == {"owners": [{"owner": {"urn": CLERK}}]}
    assert found["entities"]["total"] == 2
    assert sorted(r["entity"]["urn"] for r in found["entities"]["searchResults"]) == sorted([SHIPMENTS, RETURNS])


def test_deprecation_says_who_and_until_when(server):
    query = f'{{ dataset(urn: "{RETURNS}") {{ deprecation {{ deprecated decommissionTime note actor }} }} }}'
    assert ask(server, query)["dataset"]["deprecation"] is None
    given = {"urn": RETURNS, "deprecated": True, "note": "use shipments", "decommissionTime": 1_900_000_000_000}
    assert mutate(server, "updateDeprecation", given)["data"]["updateDeprecation"] is True
    written = aspect(server, RETURNS, DeprecationClass)
    assert (written.deprecated, written.note, written.decommissionTime) == (True, "use shipments", 1_900_000_000_000)
    assert ask(server, query)["dataset"]["deprecation"] == {
        "deprecated": True, "decommissionTime": 1_900_000_000_000, "note": "use shipments", "actor": written.actor}
    assert mutate(server, "updateDeprecation", {"urn": RETURNS, "deprecated": False})["data"]["updateDeprecation"]
    assert ask(server, query)["dataset"]["deprecation"] == {
        "deprecated": False, "decommissionTime": None, "note": "", "actor": written.actor}


def test_domains_are_made_listed_and_set(server):
    listed = '{ listDomains(input: {start: 0, count: 50}) { total domains { urn properties { name description } } } }'
    before = ask(server, listed)["listDomains"]["total"]
    made = mutate(server, "createDomain", {"id": "logistics", "name": "Logistics", "description": "moving parcels"})
    assert made == {"data": {"createDomain": "urn:li:domain:logistics"}}
    assert aspect(server, "urn:li:domain:logistics", DomainPropertiesClass).name == "Logistics"
    again = mutate(server, "createDomain", {"id": "logistics", "name": "Other"})
    assert again["data"]["createDomain"] is None and "exists" in again["errors"][0]["message"]
    wait_indexed(server)
    found = ask(server, listed)["listDomains"]
    assert found["total"] == before + 1
    assert {"urn": "urn:li:domain:logistics", "properties": {"name": "Logistics", "description": "moving parcels"}} \
        in found["domains"]
    set_domain = 'mutation s($e: String!, $d: String!) { setDomain(entityUrn: $e, domainUrn: $d) }'
    answer = post_graphql(server, {"query": set_domain, "variables": {"e": SHIPMENTS, "d": "urn:li:domain:logistics"}})
    assert answer.json() == {"data": {"setDomain": True}}
    assert aspect(server, SHIPMENTS, DomainsClass).domains == ["urn:li:domain:logistics"]
    assert ask(server, f'{{ dataset(urn: "{SHIPMENTS}") {{ domain {{ domain {{ urn }} }} }} }}')["dataset"] == {
        "domain": {"domain": {"urn": "urn:li:domain:logistics"}}}
    unset = post_graphql(server, {"query": f'mutation {{ unsetDomain(entityUrn: "{SHIPMENTS}") }}'})
    assert unset.json() == {"data": {"unsetDomain": True}}
    assert aspect(server, SHIPMENTS, DomainsClass).domains == []


def test_groups_are_edited_and_listed(server):
    update = "mutation u($urn: String!, $input: CorpGroupUpdateInput!) { updateCorpGroupProperties(urn: $urn," \
             " input: $input) { urn editableProperties { description slack email } } }"
    answer = post_graphql(server, {"query": update, "variables": {"urn": PACKERS, "input": {
        "slack": "#packing", "email": "packers@example.com"}}}).json()
    assert answer == {"data": {"updateCorpGroupProperties": {"urn": PACKERS, "editableProperties": {
        "description": None, "slack": "#packing", "email": "packers@example.com"}}}}
    assert mutate(server, "updateDescription", {"resourceUrn": PACKERS, "description": "they pack"})[
        "data"]["updateDescription"] is True
    written = aspect(server, PACKERS, CorpGroupEditableInfoClass)
    assert (written.description, written.slack, written.email) == ("they pack", "#packing", "packers@example.com")
    listed = ask(server, '{ listGroups(input: {start: 0, count: 1}) { start count total groups { urn } } }')
    assert listed["listGroups"]["total"] == 2 and listed["listGroups"]["count"] == 1
    assert listed["listGroups"]["groups"][0]["urn"] in (PACKERS, DRIVERS)


def test_a_dataset_description_is_its_edited_properties(server):
    assert mutate(server, "updateDescription", {"resourceUrn": RETURNS, "description": "parcels back"})[
        "data"]["updateDescription"] is True
    assert aspect(server, RETURNS, EditableDatasetPropertiesClass).description == "parcels back"


@pytest.mark.parametrize(("given", "says"), [
    ({"tagUrn": "urn:li:tag:missing", "resourceUrn": RETURNS}, "tagUrn: urn:li:tag:missing does not exist"),
    ({"tagUrn": FRAGILE, "resourceUrn": dataset_urn("logistics.missing")}, "does not exist"),
    ({"tagUrn": TRACKING, "resourceUrn": RETURNS}, "is not a tag URN"),
    ({"tagUrn": FRAGILE, "resourceUrn": RETURNS, "subResource": FIELD}, "subResourceType DATASET_FIELD"),
])
def test_a_bad_edit_is_refused_and_writes_nothing(server, given, says):
    answer = mutate(server, "addTag", given)
    assert answer["data"]["addTag"] is None and says in answer["errors"][0]["message"]
    assert aspect(server, RETURNS, GlobalTagsClass) is None


def test_an_edit_needs_the_right_to_write(server):
    token = principal_with_grants(server, "returns-reader", [(RETURNS, ["READ"]), (FRAGILE, ["READ"])])
    answer = mutate(server, "addTag", {"tagUrn": FRAGILE, "resourceUrn": RETURNS}, token=token)
    assert answer["data"]["addTag"] is None and answer["errors"][0]["extensions"]["code"] == 403
    assert aspect(server, RETURNS, GlobalTagsClass) is None
