"""listRecommendations through the GraphQL API: the home and search pages' modules are the
platforms, domains, tags and glossary terms with the most entities the caller may read."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AuditStampClass,
    DomainPropertiesClass,
    DomainsClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    TagAssociationClass,
    TagPropertiesClass,
)

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn
from tests.support.graphql import emit, live_server, post_graphql

FLEET = "urn:li:domain:fleet"
GPS, ENGINE = "urn:li:tag:gps", "urn:li:tag:engine"
MILEAGE = "urn:li:glossaryTerm:mileage"
TRUCKS, VANS = dataset_urn("fleet.trucks", "postgres"), dataset_urn("fleet.vans", "postgres")
TRIPS = dataset_urn("fleet.trips", "kafka")
QUERY = ("query r($input: ListRecommendationsInput!) { listRecommendations(input: $input) { modules {"
         " title moduleId renderType content { value entity { urn }"
         " params { searchParams { query filters { field values } } contentParams { count } } } } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stamp = AuditStampClass(time=0, actor="urn:li:corpuser:fleet")
    with live_server(tmp_path_factory.mktemp("graphql-recommendations") / "data") as live:
        emit(live, [
            MetadataChangeProposalWrapper(entityUrn=FLEET, aspect=DomainPropertiesClass(name="Fleet")),
            *(MetadataChangeProposalWrapper(entityUrn=t, aspect=TagPropertiesClass(name=t[11:]))
              for t in (GPS, ENGINE)),
            MetadataChangeProposalWrapper(entityUrn=MILEAGE, aspect=GlossaryTermInfoClass(
                definition="distance driven", termSource="INTERNAL")),
            *(MetadataChangeProposalWrapper(entityUrn=u, aspect=GlobalTagsClass(tags=[TagAssociationClass(GPS)]))
              for u in (TRUCKS, VANS, TRIPS)),
            MetadataChangeProposalWrapper(entityUrn=TRUCKS, aspect=GlobalTagsClass(
                tags=[TagAssociationClass(GPS), TagAssociationClass(ENGINE)])),
            MetadataChangeProposalWrapper(entityUrn=TRUCKS, aspect=DomainsClass(domains=[FLEET])),
            MetadataChangeProposalWrapper(entityUrn=VANS, aspect=GlossaryTermsClass(
                terms=[GlossaryTermAssociationClass(MILEAGE)], auditStamp=stamp)),
        ])
        yield live


def recommend(server, given: dict, token: str | None = None) -> dict:
    answer = post_graphql(server, {"query": QUERY, "variables": {"input": {"userUrn": "urn:li:corpuser:x", **given}}},
                          **({"token": token} if token else {}))
    assert answer.status_code == 200, answer.text
    return answer.json()


def modules(answer: dict) -> dict[str, list[tuple[str, int]]]:
    assert "errors" not in answer, answer
    return {m["moduleId"]: [(c["value"], c["params"]["contentParams"]["count"]) for c in m["content"]]
            for m in answer["data"]["listRecommendations"]["modules"]}


def test_the_home_page_gets_the_values_with_most_entities(server):
    answer = recommend(server, {"requestContext": {"scenario": "HOME"}})
    assert modules(answer) == {
        "PLATFORMS": [("urn:li:dataPlatform:postgres", 2), ("urn:li:dataPlatform:kafka", 1)],
        "DOMAINS": [(FLEET, 1)],
        "TOP_TAGS": [(GPS, 3), (ENGINE, 1)],
        "TOP_TERMS": [(MILEAGE, 1)]}
    tags = next(m for m in answer["data"]["listRecommendations"]["modules"] if m["moduleId"] == "TOP_TAGS")
    assert tags["title"] == "Top Tags" and tags["renderType"] == "TAG_SEARCH_LIST"
    assert tags["content"][0]["entity"] == {"urn": GPS}
    assert tags["content"][0]["params"]["searchParams"] == {"query": "*", "filters": [{"field": "tags",
                                                                                      "values": [GPS]}]}


def test_modules_are_chosen_and_limited(server):
    chosen = recommend(server, {"requestContext": {"scenario": "SEARCH_RESULTS", "modules": ["TOP_TAGS", "DOMAINS"],
                                                   "searchRequestContext": {"query": "trucks", "filters": []}}})
    assert list(modules(chosen)) == ["DOMAINS", "TOP_TAGS"]
    assert list(modules(recommend(server, {"limit": 1}))) == ["PLATFORMS"]
    profile = {"scenario": "ENTITY_PROFILE", "entityRequestContext": {"type": "DATASET", "urn": TRUCKS}}
    assert modules(recommend(server, {"requestContext": profile})) == {}


def test_a_caller_is_recommended_only_what_it_may_read(server):
    token = principal_with_grants(server, "vans-reader", [(VANS, ["READ"])])
    assert modules(recommend(server, {}, token)) == {
        "PLATFORMS": [("urn:li:dataPlatform:postgres", 1)], "TOP_TAGS": [(GPS, 1)], "TOP_TERMS": [(MILEAGE, 1)]}


def test_a_negative_limit_is_refused(server):
    answer = recommend(server, {"limit": -1})
    assert answer["data"] == {"listRecommendations": None}
    assert "input.limit" in answer["errors"][0]["message"]
