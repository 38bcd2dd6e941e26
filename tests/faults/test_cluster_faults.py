"""Nodes of the clusters (deploy/cluster.sh: 3 Kafka brokers, 3 Cassandra nodes, 3 OpenSearch
nodes, 2 with data) SIGKILLed while two `lodestar gms` and two `lodestar mcl-processor` apply a workload from
the MCP topic and a client writes over REST, then started again, or stopped and started one
after the other (a rolling restart, tests/support/rolling_restart.py): every acknowledged write is
applied once, each version has one MCL, the read models converge to the store, `lodestar check`
finds nothing, and the REST client got no answer but applied, 429 or 503
(tests/support/fault_injection.py `run_distributed`; bench/reliability.py --cluster runs the long
version). Topics have 3 replicas and min.insync.replicas 2, the keyspace 3 replicas (QUORUM
and SERIAL go on with 2), the indices 1 replica."""

from __future__ import annotations

import pytest

from ingest import topics
from tests.support.cluster import (  # noqa: F401 (fixtures)
    Cluster,
    cassandra_nodes,
    cluster,
    cluster_stack,
    kafka_leaders,
    opensearch_nodes,
    rolling_restart,
)
from tests.support.fault_injection import RunReport, run_distributed
from tests.support.rolling_restart import run_rolling
from tests.support.stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.fault_injection, pytest.mark.cluster]

ENTITIES = 60  # about 550 MCPs from the MCP topic
REST = 20  # about 180 more over REST


def holds(report: RunReport, fault: str, versions: int = 450) -> None:
    print(report.summary(fault))
    assert report.verdict.ok, "\n".join(report.verdict.examples[:10])
    assert report.verdict.versions > versions


def test_kafka_brokers_killed_the_mcl_leader_then_another(cluster: Cluster, cluster_stack: Stack) -> None:  # noqa: F811
    fault = kafka_leaders(cluster, cluster_stack)
    holds(run_distributed(cluster_stack, ENTITIES, kills=2, fault=fault, rest_entities=REST), "Kafka brokers")


def test_a_cassandra_node_killed_during_writes(cluster: Cluster, cluster_stack: Stack) -> None:  # noqa: F811
    """QUORUM writes and lightweight transactions go on with 2 of 3 replicas; the node back gets
    what it missed from the others' hints (and QUORUM reads repair what differs)."""
    fault = cassandra_nodes(cluster, cluster_stack)
    holds(run_distributed(cluster_stack, ENTITIES, kills=1, fault=fault, rest_entities=REST), "a Cassandra node")


def test_opensearch_nodes_killed_the_elected_manager_then_a_data_node(cluster: Cluster,  # noqa: F811
                                                                       cluster_stack: Stack) -> None:  # noqa: F811
    """The other two nodes elect a manager; a data node's primaries' replicas on the other are
    promoted; each node back recovers its shards."""
    fault = opensearch_nodes(cluster, cluster_stack)
    holds(run_distributed(cluster_stack, ENTITIES, kills=2, fault=fault, rest_entities=REST), "OpenSearch nodes")


def test_a_gms_and_an_mcl_processor_killed_on_the_cluster(cluster_stack: Stack) -> None:  # noqa: F811
    """The other process of each role takes the partitions over (and the dead GMS's outbox lease
    when it comes back); seed 1 kills gms-a, then mcl-b."""
    holds(run_distributed(cluster_stack, ENTITIES, kills=2, seed=1, rest_entities=REST), "a gms and an mcl-processor")


# 10-13 minutes in full runs (588 s and 788 s, 2026-12-07), 14 beside other work (load 16-28: a node took
# up to 4 to start): a deadline with room, the test's own waits say what was late
@pytest.mark.timeout(1800)
def test_a_rolling_restart_of_a_node_of_each_engine_under_load(cluster: Cluster, cluster_stack: Stack) -> None:  # noqa: F811
    """The broker leading the MCL topic's partition, a Cassandra node, the elected OpenSearch
    manager, each stopped while a client writes over REST and MCPs
    are appended to the topic, started again and awaited until it has rejoined before the next
    (tests/support/rolling_restart.py); bench/reliability.py --cluster restarts every node."""
    nodes = [cluster.kafka_leader(cluster_stack.log.topic_name(topics.MCL_VERSIONED)), "cassandra2",
             cluster.opensearch_manager()]
    for restarted in run_rolling(cluster_stack, rolling_restart(cluster, cluster_stack, nodes), len(nodes), 12):
        print(restarted.summary())
        holds(restarted.report, restarted.what, versions=100)
