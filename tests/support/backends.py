"""The real servers for contract and integration tests.

`bin/test` starts Kafka, Cassandra and OpenSearch from `deploy/` before pytest runs (or uses
the endpoints given by the `LODESTAR_*` variables of `ingest.backends`). A test that needs a
server takes one of the fixtures below; if the server does not answer, the test fails with a
message saying how to start it (never a skip: a missing server is a broken setup).

Every test gets names of its own (topic prefix, keyspace, index prefix), so tests and test
runs sharing one set of servers never see each other's data.
"""

from __future__ import annotations

import socket
import time
import uuid
from urllib.parse import urlparse

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from ingest.backends import Endpoints

START_HINT = "start the servers with `deploy/servers.sh start` (bin/test does it) or set LODESTAR_* endpoints"


# A group member's session: long enough that a starved machine does not lose it (a member went
# unheard for 6.2 s beside CPU burners, and the group took its partitions before it committed; Kafka's
# own default is 45 s); it is also how long a killed `lodestar tail`'s partitions wait for the next one.
SESSION_TIMEOUT_MS = 30_000


def unique_name(prefix: str) -> str:
    """A fresh lowercase name usable as a Kafka topic prefix, Cassandra keyspace or index prefix."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def _require(host: str, port: int, what: str) -> None:
    try:
        with socket.create_connection((host, port), timeout=2):
            return
    except OSError as err:
        pytest.fail(f"{what} at {host}:{port} does not answer ({err}): {START_HINT}", pytrace=False)


@pytest.fixture(scope="session")
def endpoints() -> Endpoints:
    return Endpoints.from_env()


@pytest.fixture(scope="session")
def kafka_bootstrap(endpoints: Endpoints) -> str:
    host, _, port = endpoints.kafka_bootstrap.split(",")[0].rpartition(":")
    _require(host, int(port), "Kafka")
    _await_group_coordinator(endpoints.kafka_bootstrap)
    return endpoints.kafka_bootstrap


def _await_group_coordinator(bootstrap: str, timeout: float = 120.0) -> None:
    """A broker that just started answers before its group coordinator has loaded the offsets
    topic; consumer groups formed meanwhile stall. Wait until it describes a group."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.describe_consumer_groups(["lodestar-test-readiness"], request_timeout=10)[
                "lodestar-test-readiness"].result()
            return
        except KafkaException as err:
            if time.monotonic() > deadline:
                pytest.fail(f"Kafka's group coordinator is not ready after {timeout:g}s: {err}", pytrace=False)
            time.sleep(0.2)  # the broker says no at once while it loads: ask again shortly


@pytest.fixture(scope="session")
def cassandra_endpoints(endpoints: Endpoints) -> Endpoints:
    hosts, port = endpoints.cassandra_contact_points()
    _require(hosts[0], port, "Cassandra")
    return endpoints


@pytest.fixture(scope="session")
def opensearch_url(endpoints: Endpoints) -> str:
    url = urlparse(endpoints.opensearch_url)
    _require(url.hostname or "127.0.0.1", url.port or 9200, "OpenSearch")
    return endpoints.opensearch_url


def drop_kafka_names(bootstrap: str, prefix: str, wait: float = 120.0) -> None:
    """Delete a test's topics and consumer groups (everything named with its prefix). A member
    that was killed, or closed while still joining, stays in its group until its session times
    out, and a group with members cannot be deleted: that is waited for, up to `wait` seconds
    (a rebalance the dead member was part of can take a second session timeout to settle)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [name for name in admin.list_topics(timeout=wait).topics if name.startswith(prefix)]
    for future in (admin.delete_topics(names, operation_timeout=wait).values() if names else ()):
        future.result()
    deadline = time.monotonic() + wait
    while groups := [g.group_id for g in admin.list_consumer_groups(request_timeout=wait).result().valid
                     if g.group_id.startswith(prefix)]:
        try:
            for future in admin.delete_consumer_groups(groups, request_timeout=wait).values():
                future.result()
        except KafkaException as err:
            if err.args[0].code() != KafkaError.NON_EMPTY_GROUP:
                raise
            if time.monotonic() > deadline:
                raise AssertionError(f"consumer groups still have members after {wait:g}s: "
                                     f"{_members(admin, groups)}") from err
            time.sleep(0.5)  # until the session of its last member times out: nothing to await


def _members(admin: AdminClient, groups: list[str]) -> dict[str, list[str]]:
    """Each group's state and members (client id and host), to say who stayed behind."""
    described = {}
    for group, future in admin.describe_consumer_groups(groups).items():
        description = future.result()
        described[group] = [str(description.state)] + [f"{m.client_id}@{m.host}" for m in description.members]
    return described
