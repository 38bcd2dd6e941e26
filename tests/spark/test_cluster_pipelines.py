"""The same pipeline with a Python stage, run by the `lodestar` script of a virtualenv that is
not activated, in `local[2]` and on the Spark standalone cluster of deploy/cluster.sh (its
executors in the workers' processes, their Python workers the virtualenv's interpreter),
records the same run operations and field lineage, and writes the same rows."""

from __future__ import annotations

import json
from urllib.request import urlopen

import pytest

from tests.support.cluster import Cluster, cluster  # noqa: F401 (fixture)
from tests.support.processes import TOKEN, ServeProcess
from tests.support.python_stage_pipeline import recorded_lineage, run_unactivated

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
    master_ui = "http://" + cluster.spark_master.removeprefix("spark://").split(":")[0] + ":18080/json/"
    with urlopen(master_ui, timeout=30) as answer:  # noqa: S310 (the cluster's own master)
        apps = json.load(answer)["completedapps"]
    assert any(app["name"] == "OnCluster" for app in apps), apps  # its executors ran on the workers
