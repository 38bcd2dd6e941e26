"""The run-lineage port's contract: every adapter (SQLite, Cassandra) passes these tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.proposal import parse_proposal
from mcl_processor.changes import AspectChange
from mcl_processor.processor import TOPICS
from mcl_processor.runs import RunLineageStore, _encoded
from mcl_processor.runs.model import BACKWARD, FORWARD, Access, Window
from tests.support.backends import unique_name
from tests.support.builders import mcp, proposal
from tests.support.field_lineage_examples import FILE, STORE, pipeline_operations, read, transform, write
from tests.support.indexed import Indexed
from tests.support.lineage_fixtures import cdap, example, program, run

PURCHASES, HISTORY = cdap("purchases"), cdap("history")


FLOW = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseFlow)"


BUILDER = "urn:li:dataJob:(urn:li:dataFlow:(cdap,PurchaseHistory,default),PurchaseHistoryBuilder)"


EVERYTHING = Window(0, 2**62)


class Harness(Indexed):
    def __init__(self, data_dir: Path, stores):
        super().__init__(data_dir)
        self.models.runs = stores(self.models)
        self.models.runs.clear()

    @property
    def runs(self) -> RunLineageStore:
        return self.models.runs

    def send(self, items) -> None:
        self.write(*(parse_proposal(item) for item in items))


def keys(accesses) -> set[tuple[str, str, str]]:
    return {(a.dataset, a.run.rpartition(":")[2], a.access) for a in accesses}


class RunLineageContract:
    @pytest.fixture
    def stores(self):
        raise NotImplementedError

    @pytest.fixture
    def harness(self, tmp_path: Path, stores) -> Iterator[Harness]:
        harness = Harness(tmp_path / "data", stores)
        yield harness
        harness.close()

    def test_purchase_history_accesses_by_dataset_and_program_in_windows(self, harness):
        harness.send(example("10-purchase-history.json"))
        early = Window(1441310434000, 1441313600000)
        assert keys(harness.runs.accesses([PURCHASES], "dataset", early)) == {
            (PURCHASES, "283-afsd032-adsf90", "write")}
        assert keys(harness.runs.accesses([BUILDER], "program", EVERYTHING)) == {
            (d, r, a) for r in ("283-99sd032-adsf90", "283-88wedfk-09wrff")
            for d, a in ((PURCHASES, "read"), (HISTORY, "write"), (cdap("frequentCustomers"), "write"))}
        assert keys(harness.runs.accesses([HISTORY], "dataset", Window(1441318000000, 1441319000000))) == {
            (HISTORY, "283-zsed032-adsf90", "read")}
        run = harness.runs.runs(["urn:li:dataProcessInstance:283-0rwedfk-09wrff"])[
            "urn:li:dataProcessInstance:283-0rwedfk-09wrff"]
        assert (run.program, run.start_ms, run.end_ms, run.status) == (FLOW, 1441314434000, 1441320599000, "SUCCESS")

    def test_a_running_run_is_in_every_later_window_until_its_completion_arrives(self, harness):
        harness.send(run("r1", program("P"), 100, None, reads=(PURCHASES,)))
        assert keys(harness.runs.accesses([PURCHASES], "dataset", Window(5_000_000, 6_000_000))) == {
            (PURCHASES, "r1", "read")}
        assert harness.runs.runs(["urn:li:dataProcessInstance:r1"])["urn:li:dataProcessInstance:r1"].status == \
            "RUNNING"
        harness.send([mcp("urn:li:dataProcessInstance:r1", "dataProcessInstanceRunEvent",
                          {"timestampMillis": 200_000, "status": "COMPLETE"})])
        assert harness.runs.accesses([PURCHASES], "dataset", Window(5_000_000, 6_000_000)) == []
        assert keys(harness.runs.accesses([program("P")], "program", Window(150_000, 160_000))) == {
            (PURCHASES, "r1", "read")}

    def test_a_new_version_replaces_the_rows_of_the_old_and_replays_change_nothing(self, harness):
        urn = "urn:li:dataProcessInstance:r1"
        harness.send(run("r1", program("P"), 100, 200, reads=(PURCHASES,), writes=(HISTORY,)))
        harness.send([mcp(urn, "dataProcessInstanceInput", {"inputs": [cdap("other")]}),
                      mcp(urn, "dataProcessInstanceProperties",
                          {"name": "r1", "created": {"time": 150_000, "actor": "urn:li:corpuser:x"}})])
        assert harness.runs.accesses([PURCHASES], "dataset", EVERYTHING) == []
        assert {(a.dataset, a.start_ms) for a in harness.runs.accesses([program("P")], "program", EVERYTHING)} == {
            (cdap("other"), 150_000), (HISTORY, 150_000)}
        before = harness.runs.accesses([program("P")], "program", EVERYTHING)
        consumer = harness.gms.log.consumer(unique_name("replay"), TOPICS)
        while records := consumer.poll(1000, 0):  # every MCL again, oldest first
            harness.processor.process(records)
        assert sorted(harness.runs.accesses([program("P")], "program", EVERYTHING), key=repr) == sorted(
            before, key=repr)

    def test_field_operations_are_stored_once_and_referenced_per_run_newest_first(self, harness):
        operations = pipeline_operations()
        harness.send(run("r1", program("Pipe"), 100, 150, operations=operations)
                     + run("r2", program("Pipe"), 300, 350, operations=list(reversed(operations))))
        refs = harness.runs.field_refs(STORE, BACKWARD, EVERYTHING)
        assert [r.run for r in refs] == ["urn:li:dataProcessInstance:r2", "urn:li:dataProcessInstance:r1"]
        assert refs[0].checksum == refs[1].checksum and refs[0].program == program("Pipe")
        assert [r.run for r in harness.runs.field_refs(FILE, FORWARD, Window(200_000, 400_000))] == [
            "urn:li:dataProcessInstance:r2"]
        stored = harness.runs.operations([refs[0].checksum])[refs[0].checksum]
        assert {op.name for op in stored} == {op["name"] for op in operations}
        assert harness.runs.field_refs(FILE, BACKWARD, EVERYTHING) == []

    def test_operations_recorded_per_destination_are_referenced_per_destination(self, harness):
        other = cdap("Other")
        operations = [read("r", FILE, "a", "b"), transform("t", [("r", "a")], "c"), transform("drop", [("r", "b")]),
                      write("w1", STORE, [("r", "a")]), write("w2", other, [("t", "c")])]
        destinations = [{"destination": STORE, "operations": ["r", "w1"]},
                        {"destination": other, "operations": ["r", "t", "drop", "w2"]}]
        value = {"operations": operations, "destinations": destinations}
        harness.send(run("r1", program("Pipe"), 100, 150)
                     + [mcp("urn:li:dataProcessInstance:r1", "fieldOperations", value)])
        [to_store], [to_other] = (harness.runs.field_refs(d, BACKWARD, EVERYTHING) for d in (STORE, other))
        stored = harness.runs.operations([to_store.checksum, to_other.checksum])
        assert [op.name for op in stored[to_store.checksum]] == ["r", "w1"]
        assert [op.name for op in stored[to_other.checksum]] == ["r", "t", "drop", "w2"]
        assert sorted(r.checksum for r in harness.runs.field_refs(FILE, FORWARD, EVERYTHING)) == sorted(
            [to_store.checksum, to_other.checksum])

    def test_a_deleted_run_leaves_nothing(self, harness):
        harness.send(run("r1", program("P"), 100, 200, reads=(PURCHASES,), operations=pipeline_operations()))
        harness.write(proposal("urn:li:dataProcessInstance:r1", "dataProcessInstanceKey", change="DELETE"))
        assert harness.runs.accesses([PURCHASES], "dataset", EVERYTHING) == []
        assert harness.runs.field_refs(STORE, BACKWARD, EVERYTHING) == []
        assert harness.runs.runs(["urn:li:dataProcessInstance:r1"]) == {}

    def test_rows_of_a_pass_cut_short_are_replaced_by_the_next(self, harness):
        """A pass that listed and wrote index rows of a version and died before finishing (no
        transaction on Cassandra) leaves rows the next pass over the run removes."""
        harness.send(run("r1", program("P"), 100, 200, reads=(PURCHASES,)))
        ghost = Access(cdap("ghost"), "urn:li:dataProcessInstance:r1", program("P"), "read", "", 100_000, 200_000)
        harness.runs._list([(ghost.run, _encoded(ghost))])
        harness.runs._write_index([ghost], [], [], [])
        assert keys(harness.runs.accesses([cdap("ghost")], "dataset", EVERYTHING)) == {
            (cdap("ghost"), "r1", "read")}
        harness.send([mcp(ghost.run, "dataProcessInstanceInput", {"inputs": [HISTORY]})])
        assert harness.runs.accesses([cdap("ghost")], "dataset", EVERYTHING) == []
        assert keys(harness.runs.accesses([program("P")], "program", EVERYTHING)) == {(HISTORY, "r1", "read")}

    def test_the_check_finds_facts_that_differ_from_the_store(self, harness):
        harness.send(run("r1", program("P"), 100, 200, reads=(PURCHASES,), writes=(HISTORY,)))
        urn = "urn:li:dataProcessInstance:r1"

        def latest() -> list[AspectChange]:
            return [AspectChange(row.urn, "dataProcessInstance", row.aspect, row.version, value_json=row.value_json)
                    for row in harness.gms.store.entity(urn)]

        assert harness.runs.compare([urn], latest()) == []
        harness.runs._write_facts([(urn, "dataProcessInstanceInput", 7, '{"read": []}')])
        assert [(d.kind, d.aspect) for d in harness.runs.compare([urn], latest())] == [
            ("stale", "dataProcessInstanceInput")]
