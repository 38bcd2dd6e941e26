"""Conditional writes hold under concurrency: of N racing writers, exactly one wins."""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gms.service import Gms
from tests.support.builders import dataset_urn, mcp, proposal
from tests.support.waiting import await_

URN = dataset_urn("race.target")
WRITERS = 8


def _race_in_process(data_dir: str, writer: int, barrier, results) -> None:
    gms = Gms.embedded(Path(data_dir))
    barrier.wait()
    (result,) = gms.apply([proposal(URN, "datasetProperties", {"description": f"writer {writer}"},
                                    headers={"If-Version-Match": "1"})], f"urn:li:corpuser:w{writer}")
    results.put((writer, result.status, result.failure.code if result.failure else None))
    gms.close()


def test_processes_racing_with_the_same_expected_version_produce_one_winner(tmp_path):
    setup = Gms.embedded(tmp_path)
    setup.apply([proposal(URN, "datasetProperties", {"description": "initial"})], "urn:li:corpuser:setup")
    setup.close()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_race_in_process, args=(str(tmp_path), i, barrier, results)) for i in range(WRITERS)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    winners = [o for o in outcomes if o[1] == "applied"]
    assert len(winners) == 1
    assert all(o[2] == "precondition_failed" for o in outcomes if o[1] != "applied")
    check = Gms.embedded(tmp_path)
    history = check.store.history(URN, "datasetProperties")
    assert [h.version for h in history] == [1, 2]
    assert history[1].value["description"] == f"writer {winners[0][0]}"
    check.close()


def test_http_clients_racing_with_the_same_expected_version_produce_one_winner(server):
    server.client().propose([mcp(URN, "datasetProperties", {"description": "initial"})])

    def write(i: int) -> dict:
        client = server.client()
        try:
            status, body = client.request("POST", "/v1/proposals", {"proposals": [
                mcp(URN, "datasetProperties", {"description": f"writer {i}"}, headers={"If-Version-Match": "1"})]})
            return {"http": status, **body["results"][0]}
        finally:
            client.close()

    with ThreadPoolExecutor(WRITERS) as pool:
        outcomes = list(pool.map(write, range(WRITERS)))
    assert sorted(o["http"] for o in outcomes) == [200] + [412] * (WRITERS - 1)
    assert sorted(o["status"] for o in outcomes) == ["applied"] + ["failed"] * (WRITERS - 1)
    assert [h.version for h in server.gms.store.history(URN, "datasetProperties")] == [1, 2]


def test_several_server_processes_on_one_data_directory_keep_versions_contiguous(tmp_path):
    from tests.support.processes import ServeProcess

    urns = [dataset_urn(f"workers.t{i}") for i in range(4)]
    with ServeProcess(tmp_path, None, "--workers", "2") as serve:
        def write(i: int) -> list[str]:
            client = serve.client()
            statuses = []
            for round_ in range(10):
                results = client.propose([mcp(urn, "datasetProperties", {"description": f"w{i} r{round_}"})
                                          for urn in urns])
                statuses += [r["status"] for r in results]
            client.close()
            return statuses

        with ThreadPoolExecutor(4) as pool:
            outcomes = [s for statuses in pool.map(write, range(4)) for s in statuses]
        assert outcomes.count("failed") == 0
        applied = outcomes.count("applied")
        check = Gms.embedded(tmp_path)
        versions = [[h.version for h in check.store.history(urn, "datasetProperties")] for urn in urns]
        check.close()
    assert sum(len(v) for v in versions) == applied
    assert all(v == list(range(1, len(v) + 1)) for v in versions)


def test_with_several_workers_each_worker_sees_writes_indexed_by_the_background_process(tmp_path):
    from tests.support.processes import ServeProcess

    with ServeProcess(tmp_path, None, "--workers", "2") as serve:
        client = serve.client()
        for i in range(4):  # connections go round-robin to the workers: each answers some of these
            name = f"workerseen{i}"
            body = client.call("POST", "/v1/proposals", {"waitForIndex": True, "proposals": [
                mcp(dataset_urn(f"w.{name}"), "datasetProperties", {"name": name})]})
            assert body["indexed"] is True
            for _ in range(2):
                fresh = serve.client()
                assert [hit["urn"] for hit in fresh.call("GET", f"/v1/search?query={name}")["results"]] \
                    == [dataset_urn(f"w.{name}")]
                fresh.close()
        client.close()


def _nicenesses(pid: int) -> list[int]:
    """The niceness of each thread of a process."""
    return sorted(int(Path(task, "stat").read_text().rpartition(")")[2].split()[16])
                  for task in Path(f"/proc/{pid}/task").iterdir())


def _pids(serve) -> dict[str, int]:
    """The pid of each process of serve (w0, w1, ..., background), as its memory gauges name it."""
    status, text = serve.client().request("GET", "/metrics")
    assert status == 200
    return {sample.labels["process"]: int(sample.labels["pid"])
            for family in text_string_to_metric_families(text) if family.name == "lodestar_process_resident_bytes"
            for sample in family.samples}


def _every_pid(serve) -> dict[str, int]:
    """_pids once every process has sampled its memory, which each does as it starts."""
    return await_(lambda: pids if len(pids := _pids(serve)) == 3 else None, "every process in /metrics", 30)


def test_with_several_workers_indexing_runs_below_the_cpu_priority_of_the_workers(tmp_path):
    """Every thread of the background process, the MCL processor's,
    runs BACKGROUND_NICENESS below the workers; every thread of the workers that handled a write
    runs at their own priority while indexing keeps up: writes go first (the thread that yields
    to indexing is tested with the guards)."""
    from lodestar.server import BACKGROUND_NICENESS
    from tests.support.processes import ServeProcess

    with ServeProcess(tmp_path, None, "--workers", "2") as serve:
        for i in range(2):  # connections go round-robin: one write to each worker
            client = serve.client()
            client.propose([mcp(dataset_urn(f"nice.t{i}"), "datasetProperties", {"description": "x"})])
            client.close()
        pids = _every_pid(serve)
        assert set(_nicenesses(pids["background"])) == {BACKGROUND_NICENESS}
        assert set(_nicenesses(pids["w0"])) == set(_nicenesses(pids["w1"])) == {0}


@pytest.mark.parametrize("process", ["background", "w1"])
def test_with_several_workers_serve_stops_when_one_of_its_processes_dies(tmp_path, process):
    """Serving on without the MCL processor would leave every write unindexed, and without a
    worker would leave a share of the connections unanswered: serve names the process, stops
    the others and exits with a failure, for its supervisor to restart it whole."""
    from tests.support.processes import ServeProcess

    with ServeProcess(tmp_path, None, "--workers", "2") as serve:
        pids = _every_pid(serve)
        os.kill(pids[process], signal.SIGKILL)
        assert serve.wait(90) == 1  # the others stop within STOP_TIMEOUT (25 s), the niced background too
        output = serve.output()
    assert f"lodestar: error: the {process} process exited (status -9); stopping the other processes" in output
    for pid in pids.values():  # every other process was stopped and reaped
        assert not Path(f"/proc/{pid}").exists()


def test_writes_go_first_embedded_and_indexing_on_the_distributed_stack():
    """(background, workers, yielding writer thread) niceness: see serve_workers."""
    from lodestar.server import BACKGROUND_NICENESS, _priorities

    assert _priorities(True, embedded=True) == (BACKGROUND_NICENESS, 0, 2 * BACKGROUND_NICENESS)  # on Linux
    assert _priorities(True, embedded=False) == (0, BACKGROUND_NICENESS, 0)
    assert _priorities(False, embedded=True) == _priorities(False, embedded=False) == (0, 0, 0)
