"""A Kafka broker of the test's own (deploy/servers.sh, private run dir): started, stopped and
restarted apart from the shared servers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.private_kafka import PrivateKafka, private_kafka  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow


def brokers(bootstrap: str) -> int:
    """How many brokers the cluster at bootstrap lists (raises when it does not answer)."""
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_servers_sh_acts_only_on_the_servers_of_its_run_dir(private_kafka: PrivateKafka, kafka_bootstrap: str,  # noqa: F811
                                                            tmp_path: Path):
    other = PrivateKafka(tmp_path / "other-run")
    assert private_kafka.running() and brokers(private_kafka.bootstrap) == 1
    # Another run dir sees neither the private broker nor the shared one as its own ...
    assert not other.running()
    # ... so stopping there stops nothing.
    assert "kafka: not running" in other.servers("stop").stdout
    assert private_kafka.running() and brokers(kafka_bootstrap) == 1

    private_kafka.stop()
    assert not private_kafka.running() and not listening(private_kafka.port)
    assert brokers(kafka_bootstrap) == 1  # the shared broker is untouched
    private_kafka.start()
    assert private_kafka.running() and brokers(private_kafka.bootstrap) == 1
