"""DataHub's clients, unmodified, walking Lodestar's lineage through `POST /api/graphql`:
`searchAcrossLineage` sent with `DataHubGraph.execute_graphql` (degrees, types, filters,
paging), the SDK v2 `DataHubClient.lineage.get_lineage` (scrollAcrossLineage, entity and column
lineage) and the `datahub lineage` CLI, each checked against Lodestar's own /v1/lineage."""

from __future__ import annotations

import json
import re

import pytest
from datahub.emitter.mce_builder import make_data_job_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DataJobInputOutputClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    GlobalTagsClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from datahub.sdk.main_client import DataHubClient
from datahub.sdk.search_filters import FilterDsl as F

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn
from tests.support.graphql import datahub_cli, emit, graph, live_server, native_lineage, post_graphql
from tests.support.server import TOKEN, LiveServer

X = dataset_urn("crm.accounts", "mysql", "DEV")
JOB = make_data_job_urn("airflow", "etl", "load", cluster="prod")
A, B = dataset_urn("lake.accounts"), dataset_urn("lake.clean")
C, D = dataset_urn("mart.report", "postgres"), dataset_urn("mart.summary")


def upstreams(urn: str, upstream: str, fields: tuple[str, str] | None = None) -> MetadataChangeProposalWrapper:
    fine = None
    if fields:
        fine = [FineGrainedLineageClass(
            upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET,
            upstreams=[make_schema_field_urn(upstream, fields[0])],
            downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD,
            downstreams=[make_schema_field_urn(urn, fields[1])])]
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=UpstreamLineageClass(
        upstreams=[UpstreamClass(dataset=upstream, type=DatasetLineageTypeClass.TRANSFORMED)],
        fineGrainedLineages=fine))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-lineage") / "data") as live:
        emit(live, [
            *(MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(name=n, description=f"the {n}"))
              for u, n in ((X, "accounts"), (A, "lake accounts"), (B, "clean"), (C, "report"), (D, "summary"))),
            MetadataChangeProposalWrapper(entityUrn=JOB, aspect=DataJobInputOutputClass(
                inputDatasets=[X], outputDatasets=[A])),
            upstreams(B, A, ("id", "id")), upstreams(C, B, ("id", "account_id")), upstreams(D, C),
            MetadataChangeProposalWrapper(entityUrn=C, aspect=GlobalTagsClass(
                tags=[TagAssociationClass("urn:li:tag:pii")])),
        ])
        yield live


LINEAGE = """query($input: SearchAcrossLineageInput!) { searchAcrossLineage(input: $input) {
  start count total
  searchResults { degree entity { urn type ... on Dataset { name platform { name } } } paths { path { urn } } }
  facets { field aggregations { value count } } } }"""


def lineage(server: LiveServer, token: str = TOKEN, **given) -> dict:
    client = graph(server, token)
    try:
        return client.execute_graphql(LINEAGE, variables={"input": {"query": "*", **given}})["searchAcrossLineage"]
    finally:
        client.close()


def degree(*values: str) -> list[dict]:
    return [{"and": [{"field": "degree", "condition": "EQUAL", "values": list(values)}]}]


def native_hops(server: LiveServer, urn: str, direction: str, hops: int = 100) -> dict[str, int]:
    nodes = native_lineage(server, urn, direction, hops)["nodes"]
    return {n["urn"]: n["hops"] for n in nodes if n["urn"] != urn}


def test_search_across_lineage_downstream_with_degrees(server):
    answer = lineage(server, urn=A, direction="DOWNSTREAM", orFilters=degree("1", "2", "3+"))
    found = {r["entity"]["urn"]: r["degree"] for r in answer["searchResults"]}
    assert found == {B: 1, C: 2, D: 3} == native_hops(server, A, "downstream")
    assert answer["total"] == 3
    deepest = next(r for r in answer["searchResults"] if r["entity"]["urn"] == D)
    assert [p["urn"] for p in deepest["paths"][0]["path"]] == [A, B, C, D]
    assert deepest["entity"]["name"] == "mart.summary" and deepest["entity"]["platform"]["name"] == "hive"
    facets = {f["field"]: {a["value"]: a["count"] for a in f["aggregations"]} for f in answer["facets"]}
    assert facets == {"_entityType": {"DATASET": 3}, "degree": {"1": 1, "2": 1, "3+": 1}}
    assert [r["entity"]["urn"] for r in lineage(server, urn=A, direction="DOWNSTREAM",
                                                orFilters=degree("1"))["searchResults"]] == [B]
    assert lineage(server, urn=A, direction="DOWNSTREAM", orFilters=degree("2"), count=0)["total"] == 1


def test_search_across_lineage_upstream_types_filters_and_pages(server):
    up = lineage(server, urn=A, direction="UPSTREAM")
    assert {r["entity"]["urn"]: r["degree"] for r in up["searchResults"]} == {JOB: 1, X: 2} == native_hops(
        server, A, "upstream")
    jobs = lineage(server, urn=A, direction="UPSTREAM", types=["DATA_JOB"])
    assert [(r["entity"]["urn"], r["entity"]["type"]) for r in jobs["searchResults"]] == [(JOB, "DATA_JOB")]
    hive = [{"and": [{"field": "platform", "values": ["urn:li:dataPlatform:hive"]}]}]
    assert [r["entity"]["urn"] for r in lineage(server, urn=A, direction="DOWNSTREAM", orFilters=hive)[
        "searchResults"]] == [B, D]
    tagged = [{"and": [{"field": "tags", "values": ["urn:li:tag:pii"]}]}]
    assert [r["entity"]["urn"] for r in lineage(server, urn=A, direction="DOWNSTREAM", orFilters=tagged)[
        "searchResults"]] == [C]
    assert [r["entity"]["urn"] for r in lineage(server, urn=A, direction="DOWNSTREAM", query="report")[
        "searchResults"]] == [C]
    pages = [lineage(server, urn=A, direction="DOWNSTREAM", start=start, count=2) for start in (0, 2)]
    assert [[r["entity"]["urn"] for r in p["searchResults"]] for p in pages] == [[B, C], [D]]
    assert [p["total"] for p in pages] == [3, 3]


def test_sdk_v2_lineage_client(server, monkeypatch):
    client = DataHubClient(server=server.url, token=TOKEN)
    found = client.lineage.get_lineage(source_urn=C, direction="upstream", max_hops=2)
    assert [(r.urn, r.hops, r.type, r.platform) for r in found] == [(B, 1, "DATASET", "hive"),
                                                                    (A, 2, "DATASET", "hive")]
    assert {r.urn: r.hops for r in found} == {u: h for u, h in native_hops(server, C, "upstream").items() if h <= 2}
    assert [r.description for r in found] == ["the clean", "the lake accounts"]
    everything = client.lineage.get_lineage(source_urn=C, direction="upstream", max_hops=3)
    assert {r.urn: r.hops for r in everything} == {B: 1, A: 2, JOB: 3, X: 4} == native_hops(server, C, "upstream")
    mysql = client.lineage.get_lineage(source_urn=C, direction="upstream", max_hops=3, filter=F.platform("mysql"))
    assert [r.urn for r in mysql] == [X]
    calls = []
    original = client._graph.execute_graphql
    monkeypatch.setattr(client._graph, "execute_graphql", lambda *a, **k: calls.append(1) or original(*a, **k))
    assert [r.urn for r in client.lineage.get_lineage(source_urn=A, direction="downstream", max_hops=3, count=1)] == [
        B, C, D]
    assert len(calls) == 3  # one result a page, scrolled through


def test_sdk_v2_column_lineage(server):
    client = DataHubClient(server=server.url, token=TOKEN)
    found = client.lineage.get_lineage(source_urn=C, source_column="account_id", direction="upstream", max_hops=2)
    assert [(r.urn, r.hops) for r in found] == [(B, 1), (A, 2)]  # fields grouped into their datasets
    assert [(p.entity_name, p.column_name) for p in found[1].paths] == [
        ("mart.report", "account_id"), ("lake.clean", "id"), ("lake.accounts", "id")]
    fields = native_lineage(server, make_schema_field_urn(C, "account_id"), "upstream", 2)["nodes"]
    assert {n["urn"] for n in fields} == {make_schema_field_urn(u, f) for u, f in
                                          ((C, "account_id"), (B, "id"), (A, "id"))}


def test_fields_grouped_into_datasets_as_datahub_names_it(server):
    grouping = {"groupingSpec": {"groupingCriteria": [{"baseEntityType": "SCHEMA_FIELD",
                                                       "groupingEntityType": "DATASET"}]}}
    field = lineage(server, urn=make_schema_field_urn(C, "account_id"), direction="UPSTREAM", searchFlags=grouping)
    assert [(r["entity"]["urn"], r["degree"]) for r in field["searchResults"]] == [(B, 1), (A, 2)]
    datasets = lineage(server, urn=A, direction="DOWNSTREAM", searchFlags=grouping)  # no fields to group
    assert datasets["searchResults"] == lineage(server, urn=A, direction="DOWNSTREAM")["searchResults"]
    other = {"groupingSpec": {"groupingCriteria": [{"baseEntityType": "DATASET", "groupingEntityType": "DATASET"}]}}
    with pytest.raises(Exception, match="only the grouping of SCHEMA_FIELD into its dataset"):
        lineage(server, urn=A, direction="DOWNSTREAM", searchFlags=other)


def test_datahub_lineage_cli(server, tmp_path):
    done = datahub_cli(server, tmp_path, "lineage", "--urn", A, "--direction", "downstream", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = json.loads(done.stdout)
    assert {r["urn"]: r["hops"] for r in printed["results"]} == native_hops(server, A, "downstream")


def test_lineage_shows_only_what_the_caller_may_read(server):
    token = principal_with_grants(server, "lineage-reader", [(A, ["READ"]), (B, ["READ"])])
    found = lineage(server, token, urn=A, direction="DOWNSTREAM")
    assert [r["entity"]["urn"] for r in found["searchResults"]] == [B] and found["total"] == 1
    with pytest.raises(Exception, match=re.escape(f"forbidden: the caller may not read {C}")):
        lineage(server, token, urn=C, direction="UPSTREAM")


def test_what_the_lineage_graph_cannot_answer_is_named(server):
    window = {"query": LINEAGE, "variables": {"input": {"urn": A, "direction": "UPSTREAM", "startTimeMillis": 1}}}
    errors = post_graphql(server, window).json()["errors"]
    assert "startTimeMillis: lineage in a time window is not supported" in errors[0]["message"]
    bad = {"query": LINEAGE, "variables": {"input": {"urn": A, "direction": "UPSTREAM", "orFilters": degree("7")}}}
    assert "degrees are one of 1, 2, 3+" in post_graphql(server, bad).json()["errors"][0]["message"]
    scroll = f'{{ scrollAcrossLineage(input: {{urn: "{A}", direction: DOWNSTREAM, scrollId: "bm9wZQ"}}) {{ total }} }}'
    assert "scrollId: not a scroll position" in post_graphql(server, {"query": scroll}).json()["errors"][0]["message"]


def test_grouping_fields_into_datasets_in_either_form(server):
    field = make_schema_field_urn(C, "account_id")

    def grouped(urn: str, base: str, into: str) -> list[tuple[str, int]]:
        flags = {"groupingSpec": {"groupingCriteria": [{"baseEntityType": base, "groupingEntityType": into}]}}
        found = lineage(server, urn=urn, direction="UPSTREAM", searchFlags=flags)
        return [(r["entity"]["urn"], r["degree"]) for r in found["searchResults"]]

    # DataHub's SDK names SCHEMA_FIELD twice; DataHub's server form groups SCHEMA_FIELD into DATASET
    assert grouped(field, "SCHEMA_FIELD", "DATASET") == grouped(field, "SCHEMA_FIELD", "SCHEMA_FIELD") == [
        (B, 1), (A, 2)]
    plain = lineage(server, urn=C, direction="UPSTREAM")["searchResults"]
    datasets = [(r["entity"]["urn"], r["degree"]) for r in plain]
    assert grouped(C, "SCHEMA_FIELD", "DATASET") == datasets  # a dataset's walk has no fields to group
    refused = post_graphql(server, {"query": LINEAGE, "variables": {"input": {
        "query": "*", "urn": C, "direction": "UPSTREAM",
        "searchFlags": {"groupingSpec": {"groupingCriteria": [{"groupingEntityType": "DOMAIN"}]}}}}})
    assert "only the grouping of SCHEMA_FIELD" in refused.json()["errors"][0]["message"]
