"""The clusters of `deploy/cluster.sh` (3 Kafka brokers, 3 Cassandra nodes, 3 OpenSearch nodes of
which 2 hold data, a Spark master with 2 workers) for the tests that kill their nodes. `bin/test` starts them
(unless LODESTAR_CLUSTER=external); a test that needs them fails, saying how to start them, when
they are not all up (never a skip)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest
from cassandra import DriverException, RequestExecutionException
from cassandra.pool import Host
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from ingest import topics
from ingest.backends import Endpoints
from tests.support.fault_injection import Fault
from tests.support.stack import Stack

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "cluster.sh"
RESTART = 480  # seconds a node started again may take until it serves
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

    def stop(self, node: str) -> None:
        """SIGTERM one node, as an operator stops it (a broker hands its leaderships over, a
        Cassandra node drains); it is gone when this returns."""
        _script("stop", node, timeout=180)

    def start(self, node: str) -> None:
        """Start a node again; returns once it serves (a node restarted beside the tests' load
        may take minutes to recover its logs: it has up to RESTART seconds)."""
        _script("start", node, timeout=RESTART + 60, env={f"LODESTAR_{engine}_START_TIMEOUT": str(RESTART)
                                                           for engine in ("KAFKA", "CASSANDRA", "OPENSEARCH")})

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

    def opensearch(self, path: str, method: str = "GET", node: str | None = None) -> Any:
        """The JSON answer of an OpenSearch node (the first of the endpoints, or `node`) to a request."""
        url = f"http://{self.hosts[node]}:9200" if node else self.endpoints.opensearch_nodes[0]
        with urlopen(Request(f"{url}{path}", method=method), timeout=120) as answer:  # noqa: S310 (our node)
            body = answer.read()
        return json.loads(body) if body else None  # (some answer 200 with no body)

    def opensearch_manager(self, node: str | None = None) -> str:
        """The OpenSearch node elected cluster manager (as the first of the endpoints, or `node`, knows)."""
        return str(self.opensearch("/_cat/cluster_manager?format=json", node=node)[0]["node"])


def _script(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
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


@contextmanager
def exclusive() -> Iterator[None]:
    """The clusters for the caller alone among those that ask (the tests on them, on any
    pytest-xdist worker, and the benchmarks on them: bench/cluster_cost.py, bench/reliability.py
    --cluster): one at a time, so the nodes one stops are never another's fault, nor its load
    another's figure."""
    with (Path(tempfile.gettempdir()) / f"lodestar-cluster-tests-{os.getuid()}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """The clusters, for this test alone (`exclusive`)."""
    with exclusive():
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


def opensearch_nodes(cluster: Cluster, stack: Stack) -> Fault:
    """The elected OpenSearch cluster manager (the other two elect another), then a data node that
    is not the manager (its primaries' replicas on the other data node are promoted), ..."""
    def fault(k: int) -> tuple[str, Callable[[], None]]:
        manager = cluster.opensearch_manager()
        if k % 2 == 0:
            node, what = manager, f"SIGKILL {manager}, the elected manager"
        else:
            node = "opensearch2" if manager == "opensearch1" else "opensearch1"
            what = f"SIGKILL {node}, a data node (manager: {manager})"
        cluster.kill(node)
        return what, lambda: cluster.start(node)
    return fault


FAULTS: dict[str, Callable[[Cluster, Stack], Fault]] = {
    "Kafka brokers": kafka_leaders, "a Cassandra node": cassandra_nodes, "OpenSearch nodes": opensearch_nodes}


# A rolling restart (tests.support.rolling_restart): each node stopped as an operator stops it,
# once its engine is healthy, started again, and awaited until it has rejoined, not merely until
# it serves, before the next.

NODES = ("kafka1", "kafka2", "kafka3", "cassandra1", "cassandra2", "cassandra3", "opensearch1", "opensearch2",
         "opensearch3")
KAFKA_INTERNAL = ("__consumer_offsets", "__transaction_state")
REJOIN = 300.0  # seconds an engine may take to be healthy again once the node serves (or before it stops)


def rolling_restart(cluster: Cluster, stack: Stack, nodes: Sequence[str]) -> Fault:
    """The k-th call awaits nodes[k]'s engine `healthy`, then stops the node (`Cluster.stop`)
    and returns how to bring it back: started again, then awaited until it has `rejoined`."""
    def fault(k: int) -> tuple[str, Callable[[], None]]:
        node = nodes[k]
        engine = node.rstrip("0123456789")
        stack.await_(lambda: healthy(cluster, stack, engine), f"{engine} healthy before {node} stops", timeout=REJOIN)
        back = rejoined(cluster, stack, node)
        what = f"{node} stopped"
        if engine == "opensearch":
            what += f" (the manager was {cluster.opensearch_manager()})"
        cluster.stop(node)
        stack.note(f"{node} stopped")

        def recover() -> None:
            cluster.start(node)
            stack.note(f"{node} serves again")
            stack.await_(back, f"{node} rejoined", timeout=REJOIN)
        return what, recover
    return fault


def healthy(cluster: Cluster, stack: Stack, engine: str) -> bool:
    """Whether all of an engine's nodes are in and in sync, as they say themselves:

    - Kafka: 3 brokers registered, every partition of the stack's topics and of Kafka's own with
      all its replicas in sync;
    - Cassandra: each node answers, has all 3 NORMAL and serving CQL in its gossip and holds no
      hints for another; they have the same schema (a node back pulls the changes it missed);
      the stack's driver has them all up;
    - OpenSearch: all 3 nodes in the cluster, every shard of the stack's indices assigned (green)."""
    if engine == "kafka":
        return _kafka_in_sync(stack)
    if engine == "opensearch":
        return _opensearch_green(cluster, stack)
    return _cassandra_in_sync(stack)


def _kafka_in_sync(stack: Stack) -> bool:
    try:
        metadata = stack.admin.list_topics(timeout=10)
    except KafkaException:
        return False
    partitions = [partition for name, topic in metadata.topics.items() if name.startswith(stack.prefix)
                  or name in KAFKA_INTERNAL for partition in topic.partitions.values()]
    return len(metadata.brokers) == 3 and bool(partitions) and all(sorted(p.isrs) == sorted(p.replicas)
                                                                   for p in partitions)


def _opensearch_green(cluster: Cluster, stack: Stack) -> bool:
    try:
        health = cluster.opensearch(f"/_cluster/health/{stack.run}*?wait_for_status=green&wait_for_nodes=3"
                                    "&timeout=20s")
    except OSError:  # 408 when not so within the timeout (an HTTPError); the node asked restarting
        return False
    return health["status"] == "green" and not health["timed_out"]


def _cassandra_in_sync(stack: Stack) -> bool:
    hosts = stack.session.cluster.metadata.all_hosts()
    schemas = set()
    for host in hosts:
        gossip = _cassandra(stack, host, "SELECT address, status_with_port, rpc_ready FROM system_views.gossip_info")
        hints = _cassandra(stack, host, "SELECT files FROM system_views.pending_hints")
        schema = _cassandra(stack, host, "SELECT schema_version FROM system.local")
        if not gossip or hints is None or not schema or any(row.files for row in hints):
            return False
        if len(gossip) != 3 or not all((row.status_with_port or "").startswith("NORMAL") and row.rpc_ready == "true"
                                       for row in gossip):
            return False
        schemas.add(schema[0].schema_version)
    return len(hosts) == 3 and all(host.is_up for host in hosts) and len(schemas) == 1


def rejoined(cluster: Cluster, stack: Stack, node: str) -> Callable[[], bool]:
    """Whether the node (about to stop) is back: its engine `healthy` again, and, a Cassandra
    node, with a new generation in every other node's gossip (not the one it had before)."""
    engine = node.rstrip("0123456789")
    if engine != "cassandra":
        return lambda: healthy(cluster, stack, engine)
    address = cluster.hosts[node]
    peers = [host for host in stack.session.cluster.metadata.all_hosts() if host.address != address]
    before = stack.await_(lambda: _generation(stack, peers[0], address), f"{node}'s generation in gossip")
    return lambda: all(_generation(stack, peer, address) > before for peer in peers) \
        and healthy(cluster, stack, engine)


def _cassandra(stack: Stack, host: Host, query: str) -> list[Any] | None:
    """The rows of a query of a node's own (virtual) tables, None if it does not answer."""
    try:
        return list(stack.session.execute(query, host=host, timeout=10))
    except (DriverException, RequestExecutionException):
        return None


def _generation(stack: Stack, peer: Host, address: str) -> int:
    """The generation of the node at `address` in `peer`'s gossip (0: unknown)."""
    rows = _cassandra(stack, peer, "SELECT address, generation FROM system_views.gossip_info") or []
    return next((row.generation for row in rows if row.address == address), 0)


@pytest.fixture
def cluster_stack(tmp_path: Path, cluster: Cluster) -> Iterator[Stack]:
    """A Stack (names of its own, two `gms` and two `mcl-processor` later) on the clusters, its
    topics, keyspace and indices with three replicas (two for the indices)."""
    built = Stack(tmp_path, cluster.endpoints, replication=3)
    try:
        yield built
    finally:
        built.close()

