"""The same pipeline with a Python stage, run by the `lodestar` script of a virtualenv that is
not activated, in `local[2]` and on the Spark standalone cluster of deploy/cluster.sh (its
executors in the workers' processes, their Python workers the virtualenv's interpreter),
records the same run operations and field lineage, and writes the same rows; so does a
`lodestar_run` program with a Python UDF and the listener attached; a worker killed during a
run leaves the run complete (Spark runs the lost tasks again on the other worker)."""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster, cluster  # noqa: F401 (fixture)
from tests.support.processes import TOKEN, ServeProcess
from tests.support.python_stage_pipeline import (
    finished,
    recorded_lineage,
    run_program_unactivated,
    run_unactivated,
    start_unactivated,
)
from tests.support.waiting import await_

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


@pytest.mark.timeout(1200)
def test_a_python_stage_records_the_same_lineage_in_local_mode_and_on_the_cluster(tmp_path,
                                                                                   cluster: Cluster) -> None:  # noqa: F811
    with ServeProcess(tmp_path / "lodestar") as lodestar:
        client = lodestar.client()
        local = run_unactivated(tmp_path, "OnLocal", lodestar.url, TOKEN, "--master", "local[2]")
        remote = run_unactivated(tmp_path, "OnCluster", lodestar.url, TOKEN, "--master", cluster.spark_master)
        on_cluster = recorded_lineage(client, tmp_path, "OnCluster", remote.run_urn)
        assert on_cluster == recorded_lineage(client, tmp_path, "OnLocal", local.run_urn)
    assert on_cluster["rows"] == [("ANN", 1), ("BOB", 2), ("CY", 3)]
    assert on_cluster["incoming"] == {"name": {"IN": ["name"]}, "n": {"IN": ["n"]}}
    apps = cluster.spark_ui("spark-master")["completedapps"]
    assert any(app["name"] == "OnCluster" for app in apps), apps  # its executors ran on the workers


@pytest.mark.timeout(1200)
def test_a_program_records_the_same_lineage_in_local_mode_and_on_the_cluster(tmp_path,
                                                                            cluster: Cluster) -> None:  # noqa: F811
    with ServeProcess(tmp_path / "lodestar") as lodestar:
        client = lodestar.client()
        local = run_program_unactivated(tmp_path, "ProgramLocal", lodestar.url, TOKEN, "local[2]")
        remote = run_program_unactivated(tmp_path, "ProgramOnCluster", lodestar.url, TOKEN, cluster.spark_master)
        on_cluster = recorded_lineage(client, tmp_path, "ProgramOnCluster", remote.run_urn)
        assert on_cluster == recorded_lineage(client, tmp_path, "ProgramLocal", local.run_urn)
    assert on_cluster["rows"] == [("ANN", 1), ("BOB", 2), ("CY", 3)]
    assert on_cluster["incoming"] == {"name": {"IN": ["name"]}, "n": {"IN": ["n"]}}
    assert [op[0] for op in on_cluster["operations"]] == ["In.read", "Out.write", "Shout.upper"]
    apps = cluster.spark_ui("spark-master")["completedapps"]
    assert any(app["name"] == "ProgramOnCluster" for app in apps), apps  # its executors ran on the workers


@pytest.mark.timeout(1200)
def test_a_spark_worker_killed_during_a_run_leaves_the_run_complete(tmp_path, cluster: Cluster) -> None:  # noqa: F811
    with ServeProcess(tmp_path / "lodestar") as lodestar:
        running = start_unactivated(tmp_path, "Survivor", lodestar.url, TOKEN, "--master", cluster.spark_master,
                                    files=2, rows=10, pause=1.0)  # a task on each worker, 5 s of Python each
        try:
            await_(lambda: any(e.get("appid") for e in cluster.spark_ui("spark-worker1").get("executors", [])),
                   "an executor of the run on spark-worker1", timeout=300)
            cluster.kill("spark-worker1")
            ran = finished(running)
        finally:
            running.kill()
            cluster.start("spark-worker1")
        lineage = recorded_lineage(lodestar.client(), tmp_path, "Survivor", ran.run_urn)
    assert lineage["rows"] == sorted((name.upper(), i + 1) for i, name in enumerate(
        ["ann", "bob", "cy", "dee", "eve", "fay", "gil", "hal", "ida", "jo"]))
    assert lineage["incoming"] == {"name": {"IN": ["name"]}, "n": {"IN": ["n"]}}
    assert [op[0] for op in lineage["operations"]] == ["In.read", "Out.write", "Shout.upper"]
