"""Where the distributed backends are: Kafka, Cassandra and OpenSearch endpoints.

Each comes from an environment variable, else the address `deploy/servers.sh` binds:

| backend | variable | default |
|---|---|---|
| Kafka | `LODESTAR_KAFKA_BOOTSTRAP` | `127.0.0.1:9092` |
| Cassandra | `LODESTAR_CASSANDRA_HOSTS` (comma-separated, `host[:port]`) | `127.0.0.1:9042` |
| OpenSearch | `LODESTAR_OPENSEARCH_URL` (comma-separated: the nodes of a cluster) | `http://127.0.0.1:9200` |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ingest.backends.errors import BackendUnavailable

if TYPE_CHECKING:
    from cassandra.cluster import Session


@dataclass(frozen=True, slots=True)
class Endpoints:
    kafka_bootstrap: str = "127.0.0.1:9092"
    cassandra_hosts: tuple[str, ...] = ("127.0.0.1:9042",)
    opensearch_url: str = "http://127.0.0.1:9200"

    @property
    def opensearch_nodes(self) -> list[str]:
        """The OpenSearch URLs of `opensearch_url` (a client fails over between them)."""
        return [url.strip() for url in self.opensearch_url.split(",") if url.strip()]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, base: Endpoints | None = None) -> Endpoints:
        """The endpoints the environment names; the others from `base` (default: the defaults)."""
        env = os.environ if env is None else env
        base = base or cls()
        hosts = env.get("LODESTAR_CASSANDRA_HOSTS")
        return cls(
            kafka_bootstrap=env.get("LODESTAR_KAFKA_BOOTSTRAP") or base.kafka_bootstrap,
            cassandra_hosts=tuple(h.strip() for h in hosts.split(",") if h.strip()) if hosts
            else base.cassandra_hosts,
            opensearch_url=env.get("LODESTAR_OPENSEARCH_URL") or base.opensearch_url,
        )

    def cassandra_contact_points(self) -> tuple[list[str], int]:
        """Hosts and the (shared) native port, as cassandra-driver's Cluster takes them."""
        hosts, port = [], 9042
        for host in self.cassandra_hosts:
            name, _, number = host.partition(":")
            hosts.append(name)
            port = int(number) if number else port
        return hosts, port


SCHEMA_TIMEOUT = 120.0  # seconds a schema change (CREATE ... IF NOT EXISTS) may take on a busy node
MIN_LEASE_TTL = 2  # seconds a producer's lease lives at least (Cassandra counts a TTL in whole seconds)
RECONNECT_AT_MOST = 5.0  # seconds between attempts to reach a Cassandra node that went down, at most


def cassandra_session(endpoints: Endpoints, *, connect_timeout: float = 5.0, request_timeout: float = 10.0,
                      local_dc: str | None = None) -> Session:
    """A session on its own cluster connection (`session.cluster.shutdown()` closes it): token-aware
    routing, QUORUM reads and writes, SERIAL for lightweight transactions, which are never sent twice
    (ingest.backends.cassandra.ConditionalWritesSentOnce), the coordinator's clock
    for plain writes (as LWT ballots use), protocol v4, TCP_NODELAY, a node that went down tried again
    every RECONNECT_AT_MOST seconds at most (so work resumes soon after an outage). Raises BackendUnavailable
    naming the contact points when none answers within connect_timeout.

    Protocol v4, named (so no version is negotiated, and no downgrade is logged): v5 frames every
    message in checksummed segments, which the driver encodes and checks in Python, a tenth of the
    CPU of GMS's request workers; nothing here uses what v5 adds.

    TCP_NODELAY: the driver writes a request of more than about 4 KB in two sends; with Nagle's
    algorithm on, the second waits for the server's delayed ACK (~40 ms on Linux), so every large
    insert or batch (a schemaMetadata version with its MCL) would take 40 ms instead of 2."""
    import socket

    from cassandra import ConsistencyLevel, DriverException
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
    from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

    from ingest.backends.cassandra import ConditionalWritesSentOnce

    hosts, port = endpoints.cassandra_contact_points()
    profile = ExecutionProfile(load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc)),
                               retry_policy=ConditionalWritesSentOnce(),
                               request_timeout=request_timeout, consistency_level=ConsistencyLevel.QUORUM,
                               serial_consistency_level=ConsistencyLevel.SERIAL)
    cluster = Cluster(hosts, port=port, protocol_version=4, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=connect_timeout, control_connection_timeout=connect_timeout,
                      reconnection_policy=ExponentialReconnectionPolicy(0.5, RECONNECT_AT_MOST),
                      sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    try:
        session = cluster.connect()
    except (NoHostAvailable, DriverException, OSError) as err:
        cluster.shutdown()
        raise BackendUnavailable(f"Cassandra at {', '.join(endpoints.cassandra_hosts)} does not answer"
                                 f" (connect timeout {connect_timeout:g}s): {err}") from None
    session.use_client_timestamp = False
    return session
