"""The clusters of `deploy/cluster.sh` (3 Kafka brokers, 3 Cassandra nodes, 2 OpenSearch nodes,
a Spark master with 2 workers) for the tests that kill their nodes. `bin/test` starts them
(unless LODESTAR_CLUSTER=external); a test that needs them fails, saying how to start them, when
they are not all up (never a skip)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest
from confluent_kafka.admin import AdminClient

from ingest import topics
from ingest.backends import Endpoints
from tests.support.fault_injection import Fault
from tests.support.stack import Stack

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "cluster.sh"
HINT = "start the clusters with `deploy/cluster.sh start` (bin/test does it unless LODESTAR_CLUSTER=external)"


@dataclass(frozen=True)
class Cluster:
    settings: dict[str, str]  # `cluster.sh env`: the LODESTAR_* settings of a Lodestar on it
    hosts: dict[str, str]  # node -> its address (`cluster.sh nodes`)

    @property
    def endpoints(self) -> Endpoints:
        return Endpoints.from_env(self.settings)

    @property
    def spark_master(self) -> str:
        return self.settings["LODESTAR_SPARK_MASTER"]

    def kill(self, node: str) -> None:
        """SIGKILL one node (it is gone when this returns)."""
        _script("kill", node)

    def start(self, node: str) -> None:
        """Start a node again; returns once it serves."""
        _script("start", node, timeout=600)

    def spark_ui(self, node: str) -> dict[str, Any]:
        """The JSON of a Spark daemon's web UI (the master's on 18080, a worker's on 18081)."""
        port = 18080 if node == "spark-master" else 18081
        with urlopen(f"http://{self.hosts[node]}:{port}/json/", timeout=30) as answer:  # noqa: S310 (our node)
            return json.load(answer)

    def kafka_leader(self, topic: str, partition: int = 0) -> str:
        """The node that leads a partition of a topic."""
        admin = AdminClient({"bootstrap.servers": self.endpoints.kafka_bootstrap})
        leader = admin.list_topics(topic, timeout=30).topics[topic].partitions[partition].leader
        return f"kafka{leader}"


def _script(*args: str, timeout: float = 120) -> str:
    done = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"cluster.sh {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def running_cluster(timeout: float = 300) -> Cluster:
    """The clusters, once every node is up (a node a test killed may still be starting again);
    AssertionError naming the nodes down after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (status := subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True,
                                    timeout=120)).returncode != 0:
        assert time.monotonic() < deadline, f"the clusters are not all up:\n{status.stdout}{status.stderr}{HINT}"
        time.sleep(2)  # polling the nodes' state, with a deadline
    return Cluster(dict(line.split("=", 1) for line in _script("env").splitlines() if "=" in line),
                   {line.split()[0]: line.split()[2] for line in _script("nodes").splitlines()})


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """The clusters, for this test alone: tests on them (on any pytest-xdist worker) run one at a
    time, so the nodes one kills are never another's fault."""
    with (Path(tempfile.gettempdir()) / f"lodestar-cluster-tests-{os.getuid()}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            found = running_cluster()
        except AssertionError as err:
            pytest.fail(str(err), pytrace=False)
        yield found


# The faults on the servers (tests.support.fault_injection.Fault), by engine: the k-th kills one
# node; its recovery starts it again.

def kafka_leaders(cluster: Cluster, stack: Stack) -> Fault:
    """The broker leading the MCL topic's first partition, then the MCP topic's, ..."""
    def fault(k: int) -> tuple[str, Callable[[], None]]:
        topic = topics.MCL_VERSIONED if k % 2 == 0 else topics.MCP
        node = cluster.kafka_leader(stack.log.topic_name(topic))
        cluster.kill(node)
        return f"SIGKILL {node}, leader of {topic}[0]", lambda: cluster.start(node)
    return fault


def cassandra_nodes(cluster: Cluster, stack: Stack) -> Fault:
    """cassandra2, then cassandra3, cassandra1, ..."""
    def fault(k: int) -> tuple[str, Callable[[], None]]:
        node = f"cassandra{(k + 1) % 3 + 1}"
        cluster.kill(node)
        return f"SIGKILL {node}", lambda: cluster.start(node)
    return fault


def opensearch_non_manager(cluster: Cluster, stack: Stack) -> Fault:
    """The OpenSearch node that is not the elected cluster manager (with two nodes, losing the
    manager stops the cluster: docs/operations.md)."""
    def fault(k: int) -> tuple[str, Callable[[], None]]:
        url = cluster.endpoints.opensearch_nodes[0]
        with urlopen(f"{url}/_cat/cluster_manager?format=json", timeout=30) as answer:  # noqa: S310 (our node)
            manager = json.load(answer)[0]["node"]
        node = "opensearch2" if manager == "opensearch1" else "opensearch1"
        cluster.kill(node)
        return f"SIGKILL {node} (manager: {manager})", lambda: cluster.start(node)
    return fault


FAULTS: dict[str, Callable[[Cluster, Stack], Fault]] = {
    "Kafka brokers": kafka_leaders, "a Cassandra node": cassandra_nodes, "an OpenSearch node": opensearch_non_manager}


@pytest.fixture
def cluster_stack(tmp_path: Path, cluster: Cluster) -> Iterator[Stack]:
    """A Stack (names of its own, two `gms` and two `mcl-processor` later) on the clusters, its
    topics, keyspace and indices with three replicas (two for the indices)."""
    built = Stack(tmp_path, cluster.endpoints, replication=3)
    try:
        yield built
    finally:
        built.close()

