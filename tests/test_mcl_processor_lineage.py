"""Lineage over real MCLs: datasets, jobs and runs over several hops and a cycle; field lineage."""

from __future__ import annotations

import pytest

from tests.builders import dataset_urn, proposal
from tests.test_mcl_processor import Indexed

RAW, CLEAN, AGG, REPORT, EXPORT = (dataset_urn(f"db.{n}") for n in ("raw", "clean", "agg", "report", "export"))
JOB = "urn:li:dataJob:(urn:li:dataFlow:(spark,etl,PROD),clean_raw)"
RUN = "urn:li:dataProcessInstance:run-42"


def field(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def upstreams(*urns: str, fine: list[dict] | None = None) -> dict:
    value: dict = {"upstreams": [{"dataset": u, "type": "TRANSFORMED"} for u in urns]}
    if fine:
        value["fineGrainedLineages"] = fine
    return value


def fine(upstream: list[str], downstream: list[str], operation: str | None = None) -> dict:
    return {"upstreamType": "FIELD_SET", "upstreams": upstream, "downstreamType": "FIELD",
            "downstreams": downstream, **({"transformOperation": operation} if operation else {})}


@pytest.fixture
def graph(tmp_path):
    """RAW -> JOB -> CLEAN -> AGG -> REPORT -> RAW (a cycle), and AGG -> RUN -> EXPORT."""
    harness = Indexed(tmp_path / "data")
    harness.write(
        proposal(JOB, "dataJobInputOutput", {
            "inputDatasets": [RAW], "outputDatasets": [CLEAN],
            "fineGrainedLineages": [fine([field(RAW, "body")], [field(CLEAN, "id"), field(CLEAN, "name")], "parse")]}),
        proposal(AGG, "upstreamLineage", upstreams(CLEAN, fine=[fine([field(CLEAN, "id")], [field(AGG, "id")],
                                                                       "IDENTITY")])),
        proposal(REPORT, "upstreamLineage", upstreams(AGG)),
        proposal(RAW, "upstreamLineage", upstreams(REPORT)),
        proposal(RUN, "dataProcessInstanceInput", {"inputs": [AGG]}),
        proposal(RUN, "dataProcessInstanceOutput", {"outputs": [EXPORT]}),
    )
    yield harness
    harness.close()


def hops(result) -> dict[str, int]:
    return {node["urn"]: node["hops"] for node in result.to_json()["nodes"]}


def edges(result) -> set[tuple[str, str, str, str]]:
    return {(e["source"], e["destination"], e["type"], e["via"]) for e in result.to_json()["edges"]}


def test_upstream_walk_crosses_jobs_and_stops_at_the_cycle(graph):
    result = graph.lineage.query(REPORT, "upstream", 10)
    assert hops(result) == {REPORT: 0, AGG: 1, CLEAN: 2, JOB: 3, RAW: 4}
    assert edges(result) == {
        (AGG, REPORT, "DownstreamOf", "upstreamLineage"),
        (CLEAN, AGG, "DownstreamOf", "upstreamLineage"),
        (JOB, CLEAN, "Produces", "dataJobInputOutput"),  # job outputs: job -> dataset
        (RAW, JOB, "Consumes", "dataJobInputOutput"),  # job inputs: dataset -> job
        (REPORT, RAW, "DownstreamOf", "upstreamLineage"),  # the edge closing the cycle
    }
    assert hops(graph.lineage.query(REPORT, "upstream", 2)) == {REPORT: 0, AGG: 1, CLEAN: 2}


def test_downstream_walk_reaches_runs_and_their_outputs(graph):
    result = graph.lineage.query(RAW, "downstream", 6)
    assert hops(result) == {RAW: 0, JOB: 1, CLEAN: 2, AGG: 3, REPORT: 4, RUN: 4, EXPORT: 5}
    assert (AGG, RUN, "Consumes", "dataProcessInstanceInput") in edges(result)
    assert (RUN, EXPORT, "Produces", "dataProcessInstanceOutput") in edges(result)
    assert (REPORT, RAW, "DownstreamOf", "upstreamLineage") in edges(result)


def test_both_directions_walk_each_side_separately(graph):
    result = graph.lineage.query(CLEAN, "both", 1).to_json()
    assert {(n["urn"], n["direction"]) for n in result["nodes"]} == {(CLEAN, "root"), (JOB, "upstream"),
                                                                    (AGG, "downstream")}
    assert len(result["edges"]) == 2


def test_field_lineage_from_fine_grained_lineage(graph):
    result = graph.lineage.field_query(field(AGG, "id"), "upstream", 5)
    assert hops(result) == {field(AGG, "id"): 0, field(CLEAN, "id"): 1, field(RAW, "body"): 2}
    assert edges(result) == {(field(CLEAN, "id"), field(AGG, "id"), "IDENTITY", "upstreamLineage"),
                             (field(RAW, "body"), field(CLEAN, "id"), "parse", "dataJobInputOutput")}
    assert set(hops(graph.lineage.field_query(field(RAW, "body"), "downstream", 5))) == {
        field(RAW, "body"), field(CLEAN, "id"), field(CLEAN, "name"), field(AGG, "id")}
    assert hops(graph.lineage.query(field(AGG, "id"), "upstream", 5)) == {field(AGG, "id"): 0}  # not dataset edges


def test_deleting_an_aspect_removes_its_edges(graph):
    graph.write(proposal(REPORT, "upstreamLineage", change="DELETE"))
    assert hops(graph.lineage.query(REPORT, "upstream", 10)) == {REPORT: 0}
    graph.write(proposal(AGG, "upstreamLineage", upstreams(CLEAN)))  # a new version replaces the old edges
    assert graph.lineage.field_query(field(AGG, "id"), "upstream", 5).edges == []


def test_soft_deleted_entities_are_left_out_of_the_walk(graph):
    graph.write(proposal(CLEAN, "status", {"removed": True}))
    assert hops(graph.lineage.query(AGG, "upstream", 10)) == {AGG: 0}
    graph.write(proposal(CLEAN, "status", {"removed": False}))
    assert CLEAN in hops(graph.lineage.query(AGG, "upstream", 10))


def test_deleting_an_entity_removes_its_edges(graph):
    graph.gms.delete_entity(JOB, hard=True, actor="urn:li:corpuser:tester")
    graph.index()
    assert hops(graph.lineage.query(CLEAN, "upstream", 10)) == {CLEAN: 0}
    assert graph.lineage.field_query(field(CLEAN, "id"), "upstream", 3).edges == []
    graph.write(proposal(JOB, "dataJobInputOutput", {"inputDatasets": [RAW], "outputDatasets": [CLEAN]}))
    assert hops(graph.lineage.query(CLEAN, "upstream", 2)) == {CLEAN: 0, JOB: 1, RAW: 2}  # re-created


def test_bad_walks_are_rejected(graph):
    with pytest.raises(ValueError):
        graph.lineage.query(RAW, "sideways", 1)
    with pytest.raises(ValueError):
        graph.lineage.query(RAW, "upstream", 0)
    assert hops(graph.lineage.query("urn:li:dataset:(urn:li:dataPlatform:hive,nowhere,PROD)", "both", 3)) == {
        "urn:li:dataset:(urn:li:dataPlatform:hive,nowhere,PROD)": 0}
