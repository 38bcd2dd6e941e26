"""`browse` walks the browse paths written with DataHub's emitter: the entities at a path, the
groups below it with their counts, and paging; what it cannot do is an error naming it."""

from __future__ import annotations

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import BrowsePathsClass, StatusClass

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, live_server, post_graphql

LOOSE, NESTED, TWICE, GONE = (dataset_urn(f"shelf.{n}") for n in ("loose", "nested", "twice", "gone"))
CHART = "urn:li:chart:(looker,shelf)"
QUERY = ("query b($input: BrowseInput!) { browse(input: $input) { start count total entities { urn }"
         " groups { name count } metadata { path totalNumEntities } } }")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-browse") / "data") as live:
        paths = [(LOOSE, ["/prod"]), (NESTED, ["/prod/hive/sales"]), (TWICE, ["/prod/hive", "/prod/Kafka/topics"]),
                 (GONE, ["/prod/hive"]), (CHART, ["/prod/looker"])]
        emit(live, [*(MetadataChangeProposalWrapper(entityUrn=u, aspect=BrowsePathsClass(paths=p)) for u, p in paths),
                    MetadataChangeProposalWrapper(entityUrn=GONE, aspect=StatusClass(removed=True))])
        yield live


def browse(server, **given) -> dict:
    answer = post_graphql(server, {"query": QUERY, "variables": {"input": {"type": "DATASET", **given}}}).json()
    assert "errors" not in answer, answer
    return answer["data"]["browse"]


def test_a_path_shows_its_entities_and_the_groups_below(server):
    assert browse(server, path=["prod"]) == {
        "start": 0, "count": 1, "total": 1, "entities": [{"urn": LOOSE}],
        "groups": [{"name": "hive", "count": 2}, {"name": "Kafka", "count": 1}],
        "metadata": {"path": ["prod"], "totalNumEntities": 3}}
    hive = browse(server, path=["prod", "HIVE"])  # segments compare without case
    assert hive["entities"] == [{"urn": TWICE}] and hive["groups"] == [{"name": "sales", "count": 1}]
    assert browse(server, path=["prod", "hive", "sales"])["entities"] == [{"urn": NESTED}]
    assert browse(server)["groups"] == [{"name": "prod", "count": 3}] and browse(server)["total"] == 0


def test_pages_and_types(server):
    page = browse(server, path=["prod", "hive"], start=1, count=5)
    assert (page["start"], page["count"], page["total"], page["entities"]) == (1, 0, 1, [])
    charts = post_graphql(server, {"query": QUERY, "variables": {"input": {"type": "CHART", "path": ["prod"]}}}).json()
    assert charts["data"]["browse"]["groups"] == [{"name": "looker", "count": 1}]
    filtered = post_graphql(server, {"query": QUERY, "variables": {"input": {
        "type": "DATASET", "filters": [{"field": "platform", "values": ["hive"]}]}}}).json()
    assert filtered["data"]["browse"] is None and "browse filters are not supported" in filtered["errors"][0]["message"]
