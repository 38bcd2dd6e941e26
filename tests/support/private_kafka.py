"""A Kafka broker of a test's own, run by `deploy/servers.sh` in a private run dir on free ports,
so that a test can stop and restart it without touching the broker every other test shares."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import free_port

SERVERS = Path(__file__).resolve().parents[2] / "deploy" / "servers.sh"
# A deadline, not a delay: the broker starts in ~30 s on a quiet machine; servers.sh's default
# 120 s can run out beside CPU burners and a loaded suite, which is a slow machine, not a finding.
START_DEADLINE_S = 400


class PrivateKafka:
    """One broker (KRaft, broker and controller) in `run_dir`; ports picked free at creation."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.port, self.controller_port = free_port(), free_port()
        self.env = {**os.environ, "LODESTAR_SERVERS_RUN": str(run_dir), "LODESTAR_KAFKA_PORT": str(self.port),
                    "LODESTAR_KAFKA_CONTROLLER_PORT": str(self.controller_port), "LODESTAR_KAFKA_HEAP": "256m",
                    "LODESTAR_KAFKA_START_TIMEOUT": str(START_DEADLINE_S)}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def servers(self, command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`deploy/servers.sh COMMAND kafka` on this run dir and ports."""
        done = subprocess.run([str(SERVERS), command, "kafka"], env=self.env, capture_output=True, text=True,
                              timeout=START_DEADLINE_S + 120)
        assert not check or done.returncode == 0, f"servers.sh {command} kafka: {done.stdout}{done.stderr}"
        return done

    def start(self) -> None:
        self.servers("start")

    def stop(self) -> None:
        self.servers("stop")

    def running(self) -> bool:
        """What `status` says (exit 0: running and healthy, 3: not)."""
        done = self.servers("status", check=False)
        assert done.returncode in (0, 3), done.stderr
        return done.returncode == 0


@pytest.fixture(scope="module")
def private_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateKafka]:
    """A private broker for the whole test module (it takes seconds to start)."""
    broker = PrivateKafka(tmp_path_factory.mktemp("kafka-run"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
