"""Where the distributed backends are: Kafka, Cassandra and OpenSearch endpoints.

Each comes from an environment variable, else the address `deploy/servers.sh` binds:

| backend | variable | default |
|---|---|---|
| Kafka | `LODESTAR_KAFKA_BOOTSTRAP` | `127.0.0.1:9092` |
| Cassandra | `LODESTAR_CASSANDRA_HOSTS` (comma-separated, `host[:port]`) | `127.0.0.1:9042` |
| OpenSearch | `LODESTAR_OPENSEARCH_URL` | `http://127.0.0.1:9200` |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Endpoints:
    kafka_bootstrap: str = "127.0.0.1:9092"
    cassandra_hosts: tuple[str, ...] = ("127.0.0.1:9042",)
    opensearch_url: str = "http://127.0.0.1:9200"

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
