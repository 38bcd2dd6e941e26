"""Kafka stopped and restarted mid-run, on a broker of the test's own (deploy/servers.sh in a
private run dir, its own ports), so the broker every other test shares is never touched.

Why a stopped broker and not a TCP proxy (as tests/faults/test_outages.py does for Cassandra and
OpenSearch): a Kafka client asks the bootstrap address for the cluster's metadata and then
connects to the address each broker advertises (here 127.0.0.1:<its port>), not to the
bootstrap address; through a proxy only the first connection would pass it, so cutting the
proxy would not cut Kafka. A private broker costs some seconds to start and ~0.3 GB; one
serves the whole module.

While Kafka is down: writes are refused with 503 (nothing done) once GMS sees the log not
answering; a write racing the stop may be applied and answer 503 later, its MCL kept in the
outbox; /health/ready says the event log is down; reads from Cassandra go on; the consumers
wait. After the restart, writes, the MCP consumer and the MCL processor resume (everything is
indexed), and nothing is lost or doubled (versions contiguous, one MCL each).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from confluent_kafka.admin import AdminClient

from ingest.backends import Endpoints
from tests.support.builders import dataset_urn
from tests.support.outages import Gms, mcls_of, start_ready, step, versions
from tests.support.private_kafka import KEPT_LOGS, PrivateKafka
from tests.support.stack import Stack
from tests.support.waiting import await_

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


def test_a_broker_killed_with_sigkill_starts_again(private_kafka: PrivateKafka):
    """A killed node stays registered with the controller until its broker session runs out; the
    restarted broker must wait for that rather than give up (it once exited after 60 s of
    DUPLICATE_BROKER_REGISTRATION answers, just before the 60 s session expired)."""
    pid = int((private_kafka.run_dir / "kafka" / "kafka.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    await_(lambda: not private_kafka.running(), f"the broker (pid {pid}) gone after SIGKILL")

    private_kafka.start()
    assert private_kafka.running() and brokers(private_kafka.bootstrap) == 1


def test_a_broker_that_dies_at_start_is_reported_with_its_reason_and_its_logs_are_kept(tmp_path: Path):
    """servers.sh says why from the broker's own log (not its configuration, which it dumps
    first), with the exit status; the test's helper keeps the logs outside the run dir."""
    broker = PrivateKafka(tmp_path / "run")
    storage = tmp_path / "run" / "kafka" / "data"
    storage.mkdir(parents=True)
    (storage / "meta.properties").write_text(  # another node's storage: the broker refuses it and exits
        "version=1\nnode.id=7\ncluster.id=M0Xk7yUfQbm8ZqG1s3a9Pw\ndirectory.id=Zb4pL2nqRSuQv1pYw0sVhA\n")
    done = broker.servers("start", check=False)
    assert done.returncode == 1
    said = done.stderr.splitlines()
    assert re.fullmatch(r"\S+ ERROR: kafka exited during start-up \(after \d+s\): exited with status 1", said[0]), said
    assert "Stored node id 7 doesn't match previous node id 1" in done.stderr
    assert not [line for line in said if re.search(r"^\s+[\w.-]+ = ", line)], said  # no configuration
    assert f"  full log: {tmp_path / 'run' / 'kafka' / 'logs' / 'kafka.log'}" in said
    assert len(said) <= 10, said

    with pytest.raises(pytest.fail.Exception, match=r"servers.sh start kafka failed \(its logs: (\S+)\)") as failed:
        broker.start()
    kept = Path(re.search(r"its logs: (\S+)\)", str(failed.value))[1])
    assert kept.is_relative_to(KEPT_LOGS) and "Stored node id 7" in (kept / "kafka.log").read_text()
    shutil.rmtree(kept)


# -- the broker stopped mid-run ------------------------------------------------------------


class Writer(threading.Thread):
    """A client writing versions 1, 2, ... of one aspect without pause, as a careful client
    does: If-Version-Match on each; after a 503 or no answer it sends the write again, and a 412
    then means the write was applied after all (its answer lost): it goes on after the version
    stored. `failure`: what went wrong otherwise."""

    def __init__(self, gms: Gms, urn: str):
        super().__init__(daemon=True, name="writer")
        self.gms, self.urn = gms, urn
        self.accepted = 0  # the last version answered 200
        self.answers: Counter[int | str] = Counter()
        self.failure: str | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        version = 1
        while not self.stop.is_set():
            try:
                answer = self.gms.propose(step(self.urn, version, f"kafkaoutage r{version}"))
            except requests.Timeout:
                self.answers["no answer"] += 1
                continue
            self.answers[answer.status_code] += 1
            if answer.status_code == 200:
                self.accepted = version
                version += 1
            elif answer.status_code == 412:
                version = int(answer.json()["results"][0]["actual"]) + 1
            elif answer.status_code == 503:
                self.stop.wait(0.2)  # as Retry-After asks, shorter
            else:
                self.failure = f"{answer.status_code} {answer.text}"
                return


def test_kafka_stopped_and_restarted_gives_503_and_unready_then_everything_resumes_without_loss(
        private_kafka: PrivateKafka, endpoints: Endpoints, cassandra_endpoints: Endpoints,  # noqa: F811
        opensearch_url: str, tmp_path: Path):
    stack = Stack(tmp_path, replace(endpoints, kafka_bootstrap=private_kafka.bootstrap))
    writer = None
    try:
        gms, _, _ = start_ready(stack)
        before, during, racer = (dataset_urn(f"kafka_outage.{name}") for name in ("before", "during", "racer"))
        assert gms.propose(step(before, 1, "kafkaoutage b1")).status_code == 200
        writer = Writer(gms, racer)
        writer.start()
        stack.await_(lambda: writer.accepted >= 3, "the writer under way")

        private_kafka.stop()
        stack.note("Kafka stopped")
        ready = stack.await_(lambda: (r := gms.ready()).status_code == 503 and [r], "readiness 503")[0].json()
        assert ready["status"] == "unavailable" and not ready["backends"]["eventLog"]["ok"]
        assert ready["backends"]["aspectStore"]["ok"] and ready["backends"]["readModels"]["ok"]
        refused = stack.await_(lambda: (r := gms.propose(step(during, 1, "kafkaoutage d1"))).status_code == 503
                               and [r], "a write answered 503")[0]
        assert refused.json()["error"] == "backend_unavailable" and refused.headers["Retry-After"]
        queued = gms.propose(step(during, 1, "kafkaoutage d1"), asynchronous=True)
        assert queued.status_code == 503 and queued.json()["error"] == "backend_unavailable"
        assert stack.aspects.history(during, "datasetProperties") == []  # nothing of them was done
        assert gms.get(f"/v1/entities/{quote(before, safe='')}").status_code == 200  # reads go on
        refused_so_far = writer.answers[503]
        stack.await_(lambda: writer.answers[503] > refused_so_far + 3, "the writer refused again and again")
        accepted_in_outage = writer.accepted

        private_kafka.start()
        stack.note("Kafka restarted")
        last: list[str] = []
        try:
            stack.await_(lambda: (r := gms.ready()).status_code == 200 or last.append(r.text), "readiness back")
        except AssertionError:
            raise AssertionError(f"readiness: {last[-1]}") from None
        stack.note(f"readiness while coming back: {last[-3:]}")
        stack.await_(lambda: writer.accepted > accepted_in_outage + 3, "the writer accepted again")
        writer.stop.set()
        writer.join(90)
        assert writer.failure is None and not writer.is_alive()
        assert gms.propose(step(during, 1, "kafkaoutage d1")).status_code == 200
        assert gms.propose(step(during, 2, "kafkaoutage d2"), asynchronous=True).status_code == 202
        stack.await_mcps_applied()
        stack.await_(gms.indexed, "every MCL indexed after the restart")
        stack.note(f"writer answers: {dict(writer.answers)}")
        racer_versions = versions(stack, racer)
        assert [v for v, _ in racer_versions] == list(range(1, len(racer_versions) + 1))  # no gap, no duplicate
        assert racer_versions == [(v, f"kafkaoutage r{v}") for v in range(1, len(racer_versions) + 1)]
        assert len(racer_versions) >= writer.accepted  # every accepted write applied (some answered 503 too)
        assert versions(stack, before) == [(1, "kafkaoutage b1")]
        assert versions(stack, during) == [(1, "kafkaoutage d1"), (2, "kafkaoutage d2")]
        expected = [(urn, "datasetKey", 1) for urn in (before, during, racer)] + [(before, "datasetProperties", 1)] \
            + [(during, "datasetProperties", v) for v in (1, 2)] \
            + [(racer, "datasetProperties", v) for v, _ in racer_versions]
        assert mcls_of(stack, {before, during, racer}) == sorted(expected)  # each once, none lost
    finally:
        if writer is not None:
            writer.stop.set()
        private_kafka.start()  # (if a failure left it stopped) to drop the test's topics
        stack.close()
