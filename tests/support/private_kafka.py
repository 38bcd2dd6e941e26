"""A Kafka broker of a test's own, run by `deploy/servers.sh` in a private run dir on free ports,
so that a test can stop and restart it without touching the broker every other test shares.

Its run dir is a pytest tmp_path, which pytest removes a few runs later; so when servers.sh fails
on it, or a test using it fails, its logs are copied to test-artifacts/private-servers/ and the
failure names the copy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "deploy" / "servers.sh"
KEPT_LOGS = ROOT / "test-artifacts" / "private-servers"
# A deadline, not a delay: the broker starts in ~30 s on a quiet machine; servers.sh's default
# 180 s can run out beside CPU burners and a loaded suite, which is a slow machine, not a finding.
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
        if check and done.returncode != 0:
            pytest.fail(f"servers.sh {command} kafka failed (its logs: {self.keep_logs(command)}):\n"
                        f"{done.stdout}{done.stderr}", pytrace=False)
        return done

    def keep_logs(self, why: str) -> Path:
        """A copy of the broker's logs in test-artifacts/private-servers/ (its path), which outlives
        the run dir; `why` (e.g. the failing test's name) names it."""
        name = re.sub(r"[^\w.-]+", "_", why)
        kept = KEPT_LOGS / f"kafka-{time.strftime('%Y%m%dT%H%M%S')}-{self.port}-{name}"
        logs = self.run_dir / "kafka" / "logs"
        if logs.is_dir():
            shutil.copytree(logs, kept, dirs_exist_ok=True)
        else:
            kept.mkdir(parents=True, exist_ok=True)
            (kept / "NO-LOGS").write_text(f"{logs} did not exist\n")
        return kept

    def start(self) -> None:
        self.servers("start")

    def stop(self) -> None:
        self.servers("stop")

    def running(self) -> bool:
        """What `status` says (exit 0: running and healthy, 3: not)."""
        done = self.servers("status", check=False)
        assert done.returncode in (0, 3), done.stderr
        return done.returncode == 0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test that used the private broker: its logs are kept, and the report says where."""
    report = yield
    broker = getattr(item, "funcargs", {}).get("private_kafka")
    if report.failed and isinstance(broker, PrivateKafka):
        report.sections.append(("private Kafka broker", f"its logs: {broker.keep_logs(item.name)}"))
    return report


@pytest.fixture(scope="module")
def private_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateKafka]:
    """A private broker for the whole test module (it takes seconds to start)."""
    broker = PrivateKafka(tmp_path_factory.mktemp("kafka-run"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
