"""The lineage-graph port's contract: every adapter (SQLite, Cassandra) passes these tests."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest import topics
from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.processor import GROUP, TOPICS
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import ACTOR
from tests.support.lineage_adapters import (
    GraphFactory,
    IndexedWith,
)

RAW, CLEAN, AGG, REPORT, EXPORT = (dataset_urn(f"db.{n}") for n in ("raw", "clean", "agg", "report", "export"))


JOB = "urn:li:dataJob:(urn:li:dataFlow:(spark,etl,PROD),clean_raw)"


RUN = "urn:li:dataProcessInstance:run-42"


GHOST = dataset_urn("db.ghost")


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


def hops(result) -> dict[str, int]:
    return {node["urn"]: node["hops"] for node in result.to_json()["nodes"]}


def edges(result) -> set[tuple[str, str, str, str]]:
    return {(e["source"], e["destination"], e["type"], e["via"]) for e in result.to_json()["edges"]}


FIELDS = (field(RAW, "body"), field(CLEAN, "id"), field(CLEAN, "name"), field(AGG, "id"))


def answers(harness: IndexedWith) -> dict[str, Any]:
    """Every walk from every node of the fixture, for comparing states."""
    out = {urn: harness.lineage.query(urn, "both", 10).to_json() for urn in (RAW, CLEAN, AGG, REPORT, EXPORT, JOB, RUN)}
    return out | {urn: harness.lineage.field_query(urn, "both", 10).to_json() for urn in FIELDS}


# A child process that indexes what is pending, as the processor would, and dies where told.
CHILD = ("import pickle, sys; from pathlib import Path; from tests.support.lineage_adapters import IndexedWith;"
         "IndexedWith(Path(sys.argv[1]), pickle.loads(bytes.fromhex(sys.argv[2]))).index()")


class LineageGraphContract:
    """The tests every lineage-graph adapter passes; a subclass provides the `graphs` fixture."""

    @pytest.fixture
    def graphs(self) -> GraphFactory:
        raise NotImplementedError

    @pytest.fixture
    def graph(self, tmp_path: Path, graphs: GraphFactory) -> Iterator[IndexedWith]:
        """RAW -> JOB -> CLEAN -> AGG -> REPORT -> RAW (a cycle), and AGG -> RUN -> EXPORT."""
        harness = IndexedWith(tmp_path / "data", graphs)
        harness.lineage.clear()
        harness.write(
            proposal(JOB, "dataJobInputOutput", {
                "inputDatasets": [RAW], "outputDatasets": [CLEAN],
                "fineGrainedLineages": [fine([field(RAW, "body")], [field(CLEAN, "id"), field(CLEAN, "name")],
                                             "parse")]}),
            proposal(AGG, "upstreamLineage", upstreams(CLEAN, fine=[fine([field(CLEAN, "id")], [field(AGG, "id")],
                                                                           "IDENTITY")])),
            proposal(REPORT, "upstreamLineage", upstreams(AGG)),
            proposal(RAW, "upstreamLineage", upstreams(REPORT)),
            proposal(RUN, "dataProcessInstanceInput", {"inputs": [AGG]}),
            proposal(RUN, "dataProcessInstanceOutput", {"outputs": [EXPORT]}),
        )
        yield harness
        harness.close()

    def test_upstream_walk_crosses_jobs_and_stops_at_the_cycle(self, graph):
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

    def test_downstream_walk_reaches_runs_and_their_outputs(self, graph):
        result = graph.lineage.query(RAW, "downstream", 6)
        assert hops(result) == {RAW: 0, JOB: 1, CLEAN: 2, AGG: 3, REPORT: 4, RUN: 4, EXPORT: 5}
        assert (AGG, RUN, "Consumes", "dataProcessInstanceInput") in edges(result)
        assert (RUN, EXPORT, "Produces", "dataProcessInstanceOutput") in edges(result)
        assert (REPORT, RAW, "DownstreamOf", "upstreamLineage") in edges(result)

    def test_both_directions_walk_each_side_separately(self, graph):
        result = graph.lineage.query(CLEAN, "both", 1).to_json()
        assert {(n["urn"], n["direction"]) for n in result["nodes"]} == {(CLEAN, "root"), (JOB, "upstream"),
                                                                        (AGG, "downstream")}
        assert len(result["edges"]) == 2
        around = graph.lineage.query(AGG, "both", 10).to_json()["nodes"]  # the cycle reaches RAW both ways
        assert {n["urn"]: (n["hops"], n["direction"]) for n in around}[RAW] == (3, "upstream")

    def test_field_lineage_from_fine_grained_lineage(self, graph):
        result = graph.lineage.field_query(field(AGG, "id"), "upstream", 5)
        assert hops(result) == {field(AGG, "id"): 0, field(CLEAN, "id"): 1, field(RAW, "body"): 2}
        assert edges(result) == {(field(CLEAN, "id"), field(AGG, "id"), "IDENTITY", "upstreamLineage"),
                                 (field(RAW, "body"), field(CLEAN, "id"), "parse", "dataJobInputOutput")}
        assert set(hops(graph.lineage.field_query(field(RAW, "body"), "downstream", 5))) == {
            field(RAW, "body"), field(CLEAN, "id"), field(CLEAN, "name"), field(AGG, "id")}
        assert hops(graph.lineage.query(field(AGG, "id"), "upstream", 5)) == {field(AGG, "id"): 0}  # not dataset edges

    def test_field_edge_changes_are_reported_and_fields_reached_transitively(self, graph):
        body, clean_id, clean_name, agg_id = FIELDS
        assert graph.lineage.fields_reached([body], "downstream") == {clean_id, clean_name, agg_id}
        assert graph.lineage.fields_reached([clean_id, agg_id], "downstream") == {agg_id}  # reached from clean_id
        assert graph.lineage.fields_reached([agg_id], "upstream") == {clean_id, body}
        assert graph.lineage.fields_reached([agg_id, clean_name], "upstream") == {clean_id, body}
        replaced = AspectChange(AGG, "dataset", "upstreamLineage", 2, upstreams(CLEAN))  # without its field edge
        assert graph.lineage.apply(ChangeBatch(changes=(replaced,))) == {agg_id}
        added = AspectChange(REPORT, "dataset", "upstreamLineage", 2, upstreams(
            AGG, fine=[fine([field(CLEAN, "name")], [field(REPORT, "name")])]))
        assert graph.lineage.apply(ChangeBatch(changes=(added,))) == {field(REPORT, "name")}
        assert graph.lineage.apply(ChangeBatch(resets=(JOB,))) == {clean_id, clean_name}
        assert graph.lineage.apply(ChangeBatch(changes=(AspectChange(RUN, "dataProcessInstance", "status", 1,
                                                                     {"removed": True}),))) == set()
        assert graph.lineage.fields_reached([field(REPORT, "name")], "upstream") == {clean_name}

    def test_fields_derived_from_a_tagged_field_are_found_by_their_upstream_tags(self, graph):
        body, clean_id, clean_name, agg_id = FIELDS
        graph.write(proposal(body, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}))
        assert sorted(h.urn for h in graph.search.query("upstreamTags:pii", count=10).hits) == sorted(
            [clean_id, clean_name, agg_id])
        graph.write(proposal(clean_id, "status", {"removed": True}))  # the chain to AGG breaks there
        assert sorted(h.urn for h in graph.search.query("upstreamTags:pii", count=10).hits) == [clean_name]

    def test_deleting_an_aspect_removes_exactly_its_edges(self, graph):
        graph.write(proposal(REPORT, "upstreamLineage", change="DELETE"))
        assert hops(graph.lineage.query(REPORT, "upstream", 10)) == {REPORT: 0}
        assert hops(graph.lineage.query(REPORT, "downstream", 1)) == {REPORT: 0, RAW: 1}  # RAW's own edge stays
        identity = fine([field(CLEAN, "id")], [field(AGG, "id")], "IDENTITY")
        graph.write(proposal(REPORT, "upstreamLineage", upstreams(AGG, fine=[identity])))  # AGG declares it too
        graph.write(proposal(AGG, "upstreamLineage", upstreams(CLEAN)))  # a new version replaces AGG's edges
        assert hops(graph.lineage.query(AGG, "upstream", 1)) == {AGG: 0, CLEAN: 1}
        assert edges(graph.lineage.field_query(field(AGG, "id"), "upstream", 5)) == {
            (field(CLEAN, "id"), field(AGG, "id"), "IDENTITY", "upstreamLineage"),  # REPORT still declares it
            (field(RAW, "body"), field(CLEAN, "id"), "parse", "dataJobInputOutput")}
        graph.write(proposal(REPORT, "upstreamLineage", change="DELETE"))
        assert graph.lineage.field_query(field(AGG, "id"), "upstream", 5).edges == []

    def test_soft_deleted_entities_are_left_out_of_the_walk(self, graph):
        graph.write(proposal(CLEAN, "status", {"removed": True}))
        assert hops(graph.lineage.query(AGG, "upstream", 10)) == {AGG: 0}
        assert hops(graph.lineage.query(RAW, "downstream", 10)) == {RAW: 0, JOB: 1}  # not through CLEAN
        graph.write(proposal(CLEAN, "status", {"removed": False}))
        assert CLEAN in hops(graph.lineage.query(AGG, "upstream", 10))

    def test_a_soft_deleted_field_is_neither_reached_nor_passes_anything_on(self, graph):
        body, clean_id, clean_name, agg_id = FIELDS
        graph.write(proposal(clean_id, "status", {"removed": True}))
        assert graph.lineage.fields_reached([body], "downstream") == {clean_name}
        assert graph.lineage.fields_reached([agg_id], "upstream") == set()
        graph.write(proposal(clean_id, "status", {"removed": False}))
        assert graph.lineage.fields_reached([body], "downstream") == {clean_id, clean_name, agg_id}

    def test_deleting_an_entity_removes_its_edges(self, graph):
        graph.gms.delete_entity(JOB, hard=True, actor=ACTOR)
        graph.index()
        assert hops(graph.lineage.query(CLEAN, "upstream", 10)) == {CLEAN: 0}
        assert graph.lineage.field_query(field(CLEAN, "id"), "upstream", 3).edges == []
        graph.write(proposal(JOB, "dataJobInputOutput", {"inputDatasets": [RAW], "outputDatasets": [CLEAN]}))
        assert hops(graph.lineage.query(CLEAN, "upstream", 2)) == {CLEAN: 0, JOB: 1, RAW: 2}  # re-created

    def test_bad_walks_are_rejected(self, graph):
        with pytest.raises(ValueError):
            graph.lineage.query(RAW, "sideways", 1)
        with pytest.raises(ValueError):
            graph.lineage.query(RAW, "upstream", 0)
        assert hops(graph.lineage.query("urn:li:dataset:(urn:li:dataPlatform:hive,nowhere,PROD)", "both", 3)) == {
            "urn:li:dataset:(urn:li:dataPlatform:hive,nowhere,PROD)": 0}

    def test_duplicate_mcls_change_nothing(self, graph):
        graph.write(proposal(AGG, "upstreamLineage", upstreams(RAW)), proposal(CLEAN, "status", {"removed": True}))
        before = answers(graph)
        records = graph.gms.log.read(topics.MCL_VERSIONED, limit=10_000)
        graph.processor.process(records)  # every MCL again in one batch, as a replay from offset 0 delivers them
        for record in records:  # and one by one
            graph.processor.process([record])
        assert answers(graph) == before

    def test_older_mcls_after_newer_ones_change_nothing(self, graph):
        graph.write(proposal(AGG, "upstreamLineage", upstreams(RAW)))  # version 2 replaces CLEAN -> AGG
        graph.write(proposal(REPORT, "upstreamLineage", change="DELETE"))
        graph.write(proposal(CLEAN, "status", {"removed": True}), proposal(JOB, "status", {"removed": True}))
        graph.write(proposal(JOB, "status", {"removed": False}))
        before = answers(graph)
        assert hops(graph.lineage.query(AGG, "upstream", 10)) == {AGG: 0, RAW: 1, REPORT: 2}
        records = graph.gms.log.read(topics.MCL_VERSIONED, limit=10_000)
        for record in reversed(records):  # every older version after the newest
            graph.processor.process([record])
        assert answers(graph) == before
        graph.lineage.clear()
        for record in reversed(records):  # into an empty graph: newest first, one batch each
            graph.processor.process([record])
        assert answers(graph) == before

    def test_a_batch_replayed_after_a_crash_mid_apply_converges(self, graph, graphs, tmp_path):
        graph.gms.apply([proposal(AGG, "upstreamLineage", upstreams(RAW, fine=[fine([field(RAW, "body")],
                                                                                      [field(AGG, "id")])])),
                         proposal(REPORT, "upstreamLineage", change="DELETE"),
                         proposal(RUN, "status", {"removed": True})], ACTOR)
        graph.gms.delete_entity(JOB, hard=True, actor=ACTOR)
        committed = {t: graph.gms.log.committed(GROUP, t, 0) for t in TOPICS}
        with open(tmp_path / "child.log", "wb") as log:
            died = subprocess.run([sys.executable, "-c", CHILD, str(graph.data_dir), pickle.dumps(graphs).hex()],
                                  env={**os.environ, "LODESTAR_CRASH_AT": "lineage-before-versions"},
                                  stdout=log, stderr=subprocess.STDOUT, timeout=120)
        assert died.returncode == 137, (tmp_path / "child.log").read_text()
        assert {t: graph.gms.log.committed(GROUP, t, 0) for t in TOPICS} == committed  # applied in part, not committed
        # newer versions arrive before the replay, so the batch replayed is not the batch that died
        graph.gms.apply([proposal(AGG, "upstreamLineage", upstreams(CLEAN, RAW)),
                         proposal(JOB, "dataJobInputOutput", {"inputDatasets": [RAW], "outputDatasets": [AGG]})], ACTOR)
        graph.index()
        assert hops(graph.lineage.query(AGG, "upstream", 10)) == {AGG: 0, CLEAN: 1, RAW: 1, JOB: 1, REPORT: 2}
        assert hops(graph.lineage.query(AGG, "downstream", 10)) == {AGG: 0}  # REPORT's edge deleted, RUN soft-deleted
        assert graph.lineage.field_query(field(AGG, "id"), "both", 5).edges == []
        assert graph.lineage.field_query(field(CLEAN, "id"), "both", 5).edges == []  # JOB's went with it
        assert graph.processor.check(graph.gms.store).ok

    def test_check_finds_what_differs_from_the_store(self, graph):
        assert graph.processor.check(graph.gms.store).ok
        change = AspectChange  # (urn, entity type, aspect, version, value); versions in the store are all 1
        graph.lineage.apply(ChangeBatch(resets=(REPORT,)))  # missing
        graph.lineage.apply(ChangeBatch(changes=(
            change(AGG, "dataset", "upstreamLineage", 7, upstreams(CLEAN)),  # stale: a version the store lacks
            change(AGG, "dataset", "status", 1, {"removed": False}),  # extra: an aspect the store lacks
            change(GHOST, "dataset", "upstreamLineage", 1, upstreams(RAW)))))  # extra: an entity the store lacks
        graph.lineage.apply(ChangeBatch(changes=(change(RAW, "dataset", "upstreamLineage", 1, upstreams(AGG)),),
                                        replace_equal=True))  # content: the same version with other edges
        report = graph.processor.check(graph.gms.store)
        assert dict(report.counts) == {("lineage", "missing"): 1, ("lineage", "stale"): 1,
                                       ("lineage", "content"): 1, ("lineage", "extra"): 2}
        assert {(d.kind, d.urn, d.aspect) for d in report.examples} == {
            ("missing", REPORT, "upstreamLineage"), ("stale", AGG, "upstreamLineage"), ("extra", AGG, "status"),
            ("extra", GHOST, None), ("content", RAW, "upstreamLineage")}
        graph.processor.restore(graph.gms.store)  # repairs what is missing or damaged, never goes back
        assert dict(graph.processor.check(graph.gms.store).counts) == {("lineage", "stale"): 1,
                                                                       ("lineage", "extra"): 2}
        graph.models.clear()
        graph.processor.restore(graph.gms.store)
        assert graph.processor.check(graph.gms.store).ok
        assert hops(graph.lineage.query(REPORT, "upstream", 1)) == {REPORT: 0, AGG: 1}

    def test_entities_are_listed_in_order_page_by_page(self, graph):
        listed, after = [], ""
        while page := graph.lineage.urns(after, limit=2):
            assert len(page) <= 2
            listed += page
            after = page[-1]
        assert listed == [JOB, RUN, AGG, RAW, REPORT]  # those with a lineage aspect, by URN
        graph.write(proposal(REPORT, "upstreamLineage", change="DELETE"))
        assert graph.lineage.urns(JOB) == [RUN, AGG, RAW]  # REPORT has nothing live left
