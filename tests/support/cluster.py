"""The clusters of `deploy/cluster.sh` (3 Kafka brokers, 3 Cassandra nodes, 2 OpenSearch nodes,
a Spark master with 2 workers) for the tests that kill their nodes. `bin/test` starts them
with `LODESTAR_CLUSTER=deploy`; a test that needs them fails, saying how to start them, when they
are not all up (never a skip)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from ingest.backends import Endpoints
from tests.support.stack import Stack

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "cluster.sh"
HINT = "start the clusters with `deploy/cluster.sh start` (bin/test does it with LODESTAR_CLUSTER=deploy)"


@dataclass(frozen=True)
class Cluster:
    settings: dict[str, str]  # `cluster.sh env`: the LODESTAR_* settings of a Lodestar on it

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

    def kafka_leader(self, topic: str, partition: int = 0) -> str:
        """The node that leads a partition of a topic."""
        admin = AdminClient({"bootstrap.servers": self.endpoints.kafka_bootstrap})
        leader = admin.list_topics(topic, timeout=30).topics[topic].partitions[partition].leader
        return f"kafka{leader}"


def _script(*args: str, timeout: float = 120) -> str:
    done = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"cluster.sh {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    status = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True, timeout=120)
    if status.returncode != 0:
        pytest.fail(f"the clusters are not all up:\n{status.stdout}{status.stderr}{HINT}", pytrace=False)
    settings = dict(line.split("=", 1) for line in _script("env").splitlines() if "=" in line)
    return Cluster(settings)


@pytest.fixture
def cluster_stack(tmp_path: Path, cluster: Cluster) -> Iterator[Stack]:
    """A Stack (names of its own, two `gms` and two `mcl-processor` later) on the clusters, its
    topics, keyspace and indices with three replicas (two for the indices)."""
    built = Stack(tmp_path, cluster.endpoints, replication=3)
    try:
        yield built
    finally:
        built.close()

