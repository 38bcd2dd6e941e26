"""Version sets through the GraphQL API: `versionSet` shows the set's latest version and
searches its versions (the entities whose versionProperties name it), the highest sortId first."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DatasetPropertiesClass,
    VersioningSchemeClass,
    VersionPropertiesClass,
    VersionTagClass,
)

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, live_server, post_graphql

MODELS = "urn:li:versionSet:(churn-model,dataset)"
OTHER = "urn:li:versionSet:(ltv-model,dataset)"
RELEASES = {dataset_urn(f"models.churn_{tag}"): sort_id for tag, sort_id in
            (("spring", "b"), ("summer", "c"), ("autumn", "a"))}
LTV = dataset_urn("models.ltv_1")
QUERY = ("query v($urn: String!, $input: SearchAcrossEntitiesInput!) { versionSet(urn: $urn) { urn type"
         " latestVersion { urn } versionsSearch(input: $input) { start count total searchResults { entity { urn } } }"
         " } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-versioning") / "data") as live:
        versions = [(urn, MODELS, sort_id) for urn, sort_id in RELEASES.items()] + [(LTV, OTHER, "a")]
        emit(live, [m for urn, version_set, sort_id in versions for m in (
            MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(name=urn[40:-6])),
            MetadataChangeProposalWrapper(entityUrn=urn, aspect=VersionPropertiesClass(
                versionSet=version_set, version=VersionTagClass(versionTag=sort_id), sortId=sort_id,
                versioningScheme=VersioningSchemeClass.LEXICOGRAPHIC_STRING)))])
        yield live


def ask(server, urn: str, given: dict) -> dict:
    answer = post_graphql(server, {"query": QUERY, "variables": {"urn": urn, "input": given}})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_versions_come_highest_sort_id_first(server):
    summer, spring, autumn = sorted(RELEASES, key=RELEASES.get, reverse=True)
    found = ask(server, MODELS, {"query": "*"})["data"]["versionSet"]
    assert found["urn"] == MODELS and found["type"] == "VERSION_SET"
    assert found["latestVersion"] == {"urn": summer}
    assert found["versionsSearch"] == {"start": 0, "count": 3, "total": 3, "searchResults": [
        {"entity": {"urn": summer}}, {"entity": {"urn": spring}}, {"entity": {"urn": autumn}}]}
    page = ask(server, MODELS, {"query": "*", "start": 1, "count": 1})["data"]["versionSet"]["versionsSearch"]
    assert page == {"start": 1, "count": 1, "total": 3, "searchResults": [{"entity": {"urn": spring}}]}


def test_versions_are_searched_within_the_set(server):
    found = ask(server, MODELS, {"query": "autumn"})["data"]["versionSet"]["versionsSearch"]
    assert [r["entity"]["urn"] for r in found["searchResults"]] == [dataset_urn("models.churn_autumn")]
    assert ask(server, OTHER, {"query": "*"})["data"]["versionSet"]["versionsSearch"]["searchResults"] == [
        {"entity": {"urn": LTV}}]


def test_an_unknown_set_is_null_and_a_sort_is_refused(server):
    assert ask(server, "urn:li:versionSet:(none,dataset)", {"query": "*"}) == {"data": {"versionSet": None}}
    refused = ask(server, MODELS, {"query": "*", "sortInput": {"sortCriteria": [{"field": "name",
                                                                                 "sortOrder": "ASCENDING"}]}})
    assert "sortInput is not supported" in refused["errors"][0]["message"]
