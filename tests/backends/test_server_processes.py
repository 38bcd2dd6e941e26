"""The servers' processes as the benchmarks see them (bench.real_stack.Servers, whose CPU seconds
bench.real_stack and bench.cluster_cost print per 1,000 MCPs): every node of every engine, found
by the address it listens on, so that the clusters' figures count all their JVMs and the
single-node servers' none of the clusters' (both listen on the same ports, on other addresses)."""

from __future__ import annotations

import pytest

from bench.real_stack import Servers
from ingest.backends import Endpoints
from tests.support.cluster import Cluster, cluster  # noqa: F401 (fixture)


@pytest.mark.cluster
def test_every_node_of_the_clusters_and_of_the_single_servers_is_found_by_its_address(
        cluster: Cluster, endpoints: Endpoints, cassandra_endpoints: Endpoints, opensearch_url: str,  # noqa: F811
        kafka_bootstrap: str) -> None:
    on_cluster, single = Servers(cluster.endpoints), Servers(endpoints)
    assert sorted(on_cluster.nodes) == sorted(
        [f"kafka@{cluster.hosts[f'kafka{n}']}:9092" for n in (1, 2, 3)]
        + [f"cassandra@{cluster.hosts[f'cassandra{n}']}:9042" for n in (1, 2, 3)]
        + [f"opensearch@{cluster.hosts[f'opensearch{n}']}:9200" for n in (1, 2, 3)])
    assert sorted(node.split("@")[0] for node in single.nodes) == ["cassandra", "kafka", "opensearch"]
    assert len({process.pid for process in [*on_cluster.nodes.values(), *single.nodes.values()]}) == 12
    assert all(process.name() == "java" for process in on_cluster.nodes.values())
    per_engine, per_node = on_cluster.cpu(), on_cluster.node_cpu()
    assert set(per_engine) == {"kafka", "cassandra", "opensearch"}
    assert per_engine["kafka"] >= sum(seconds for node, seconds in per_node.items() if node.startswith("kafka@")) > 0
