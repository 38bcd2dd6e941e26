"""The distributed stack (Kafka, Cassandra, OpenSearch) run as real Lodestar processes, and
the chains of writes that tests drive through it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import jsonpatch
import pytest
from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

from gms.schema_registry import schema_lookup
from gms.service import ACTOR_HEADER, MCP_GROUP
from gms.store.cassandra import CassandraAspectStore
from ingest import topics
from ingest.backends import Endpoints, cassandra_session
from ingest.backends.errors import BackendUnavailable
from ingest.eventlog import LogMessage
from ingest.eventlog.kafka import SEQUENCES, KafkaEventLog
from ingest.proposal import Proposal
from ingest.rest import LodestarError, RestClient
from mcl_processor.distributed import DistributedReadModels
from mcl_processor.processor import GROUP as MCL_GROUP
from mcl_processor.processor import TOPICS as MCL_TOPICS
from schemas import mcl_wire
from schemas.events import MCP, default_codec
from schemas.mcl_wire import MclReader
from schemas.registry import default_registry
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import proposal
from tests.support.processes import LODESTAR, TOKEN
from tests.support.server import LOOPBACK_WEBHOOKS_ENV, free_port

ACTOR = "urn:li:corpuser:admin"  # MCPs from the topic are checked as their actor, who may write all


SESSION_TIMEOUT_MS = 6000  # the broker's minimum: a killed member's partitions move after it


WAIT = 90.0  # seconds any one awaited condition may take


T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    change: str  # UPSERT, PATCH or DELETE
    payload: Any  # the value (UPSERT), the JSON Patch (PATCH), None (DELETE)
    result: Any  # the aspect's value after the step (None: deleted)


@dataclass(frozen=True)
class Chain:
    """The proposals of one aspect, in order: step k makes version k, the first in `first_round`."""

    urn: str
    aspect: str
    first_round: int
    steps: tuple[Step, ...]

    def proposals(self) -> Iterator[tuple[int, Proposal]]:
        for k, step in enumerate(self.steps, start=1):
            headers = {"If-Version-Match": str(k - 1 if k > 1 else -1)}
            yield self.first_round + k - 1, proposal(self.urn, self.aspect, step.payload, step.change, headers)

    def versions(self) -> list[tuple[int, Any]]:
        return [(k, step.result) for k, step in enumerate(self.steps, start=1)]


def upserts(*values: Any) -> tuple[Step, ...]:
    return tuple(Step("UPSERT", value, value) for value in values)


def properties_chain(urn: str, name: str, versions: int, first_round: int, patch: bool, delete: bool) -> Chain:
    """Drafts, then a final value (`<name>final` in its description, `stage: final`); the second
    step a PATCH if `patch`, a DELETE after the final value if `delete`."""
    values = [{"name": name, "description": f"draft{k} of {name}", "customProperties": {"rev": str(k)}}
              for k in range(1, versions)]
    values.append({"name": name, "description": f"{name}final is its final description",
                   "customProperties": {"rev": str(versions), "stage": "final"}})
    steps = list(upserts(*values))
    if patch:
        ops = [{"op": "replace", "path": "/description", "value": f"patched {name}"},
               {"op": "add", "path": "/customProperties/patched", "value": "yes"}]
        steps[1] = Step("PATCH", ops, jsonpatch.apply_patch(values[0], ops))
    if delete:
        steps.append(Step("DELETE", None, None))
    return Chain(urn, "datasetProperties", first_round, tuple(steps))


def lineage(*upstreams: str) -> dict[str, Any]:
    return {"upstreams": [{"dataset": u, "type": "TRANSFORMED"} for u in upstreams]}


def tags(*names: str) -> dict[str, Any]:
    return {"tags": [{"tag": f"urn:li:tag:{name}"} for name in names]}


def replication_env(replication: int) -> dict[str, str]:
    """The settings of a Lodestar whose topics and keyspace have `replication` replicas (writes
    waiting for all in-sync ones, at least one less), its indices one less (at most 1)."""
    return {"LODESTAR_KAFKA_REPLICATION_FACTOR": str(replication),
            "LODESTAR_KAFKA_MIN_INSYNC_REPLICAS": str(max(replication - 1, 1)),
            "LODESTAR_CASSANDRA_REPLICATION_FACTOR": str(replication),
            "LODESTAR_OPENSEARCH_REPLICAS": str(min(replication - 1, 1))}


class Lodestar:
    """One `lodestar` process; its output goes to a file (appended to across restarts).
    `crash_at`: a crash point (ingest.faults) where it is meant to die."""

    def __init__(self, name: str, command: str, data_dir: Path, env: dict[str, str], output: Path,
                 crash_at: str | None = None):
        self.name, self.command, self.data_dir, self.output = name, command, data_dir, output
        self.env = {**env, "LODESTAR_CRASH_AT": crash_at} if crash_at else env
        self.port = free_port() if command == "gms" else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.ended = crash_at is not None  # killed, stopped or crashing on purpose
        self._file: IO[bytes] | None = None

    def start(self) -> Lodestar:
        serving = ["--port", str(self.port), "--admin-token", TOKEN] if self.port else []
        self._file = self.output.open("ab")
        self.proc = subprocess.Popen([*LODESTAR, self.command, "--data-dir", str(self.data_dir), *serving],
                                     env=self.env, stdout=self._file, stderr=subprocess.STDOUT)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def died(self) -> bool:
        """Exited without being killed or stopped."""
        return self.proc is not None and not self.ended and self.proc.poll() is not None

    def client(self) -> RestClient:
        return RestClient(f"http://127.0.0.1:{self.port}", TOKEN)

    def healthy(self) -> bool:
        try:
            return self.client().request("GET", "/health")[0] == 200
        except LodestarError:
            return False

    def kill(self) -> None:
        """SIGKILL: no cleanup, no leaving the consumer group, no flushing."""
        assert self.proc is not None
        self.ended = True
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(10) == -signal.SIGKILL
        self._close_output()

    def terminate(self) -> None:
        """SIGTERM (see exit_status)."""
        self.ended = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def exit_status(self, timeout: float = 30) -> int | None:
        """The exit status, or None (then killed) when it has not exited within timeout."""
        if self.proc is None:
            return None
        try:
            code: int | None = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self._close_output()
        return code

    def _close_output(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Stack:
    """Names of its own on the shared servers (topic prefix, keyspace, index prefix), the
    `lodestar` processes on them, and direct access to the log, the store and the read models."""

    def __init__(self, root: Path, endpoints: Endpoints, wire_format: str = mcl_wire.LODESTAR,
                 replication: int = 1):
        """`replication`: of the topics, the keyspace and (less one) the indices: 3 on a cluster."""
        self.root = root
        self.run = unique_name("e2e")
        self.prefix = f"{self.run}."
        self.endpoints = endpoints
        self.env = {**os.environ, "LODESTAR_EVENT_LOG": "kafka", "LODESTAR_ASPECT_STORE": "cassandra",
                    "LODESTAR_READ_MODELS": "distributed", "LODESTAR_KAFKA_PREFIX": self.prefix,
                    "LODESTAR_CASSANDRA_KEYSPACE": self.run, "LODESTAR_OPENSEARCH_PREFIX": self.run,
                    "LODESTAR_KAFKA_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
                    "LODESTAR_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
                    "LODESTAR_CASSANDRA_HOSTS": ",".join(endpoints.cassandra_hosts),
                    "LODESTAR_OPENSEARCH_URL": endpoints.opensearch_url,
                    "LODESTAR_KAFKA_WIRE_FORMAT": wire_format, **LOOPBACK_WEBHOOKS_ENV,
                    **replication_env(replication)}
        self.processes: list[Lodestar] = []
        self.started = time.monotonic()
        self.codec = default_codec()
        self.admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
        self.session = cassandra_session(endpoints, request_timeout=60)
        self.log = KafkaEventLog.from_endpoints(endpoints, prefix=self.prefix, replication=replication,
                                                min_insync_replicas=max(replication - 1, 1))
        self.store: CassandraAspectStore | None = None
        self.models: DistributedReadModels | None = None
        try:  # tables, lineage tables and topics made here first, not raced for by the processes
            self.store = CassandraAspectStore(self.session, self.run, unique_name("verifier"),
                                              replication_factor=replication)
            self.models = DistributedReadModels.connect(endpoints, default_registry(), keyspace=self.run,
                                                        index_prefix=self.run, replication_factor=replication,
                                                        replicas=min(replication - 1, 1))
            for topic in (*topics.PROPOSAL_TOPICS, topics.FAILED_MCP, *MCL_TOPICS, SEQUENCES):
                self.log.partitions(topic)
        except BaseException:
            self.close()
            raise

    @property
    def aspects(self) -> CassandraAspectStore:
        """The aspect store, read directly."""
        assert self.store is not None
        return self.store

    # processes

    def gms(self, name: str, crash_at: str | None = None) -> Lodestar:
        """`lodestar gms` (GMS and the MCP consumer) on a data directory of its own; restarted on
        the same one (same instance id, so same producer id) when the name is used again."""
        return self._start(name, "gms", crash_at)

    def mcl_processor(self, name: str, crash_at: str | None = None) -> Lodestar:
        return self._start(name, "mcl-processor", crash_at)

    def _start(self, name: str, command: str, crash_at: str | None) -> Lodestar:
        process = Lodestar(name, command, self.root / name, self.env, self.root / f"{name}.out", crash_at).start()
        self.processes.append(process)
        self.note(f"started {name}" + (f" (to crash at {crash_at})" if crash_at else ""))
        return process

    def note(self, what: str) -> None:
        """A line of the test's timeline (printed; shown when the test fails)."""
        print(f"[{time.monotonic() - self.started:6.1f}s] {what}", flush=True)

    def outputs(self, lines: int = 60, only: Path | None = None) -> str:
        """The last lines of every process's output (or of one)."""
        parts = []
        for path in [only] if only else sorted({p.output for p in self.processes}):
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            parts.append(f"----- {path.stem} (last {lines} of {len(text)} lines) -----")
            parts.extend(text[-lines:])
        return "\n".join(parts)

    def await_(self, condition: Callable[[], T], what: str, timeout: float = WAIT) -> T:
        """condition()'s first truthy value within timeout seconds (a server not answering it is a
        no); fails early if a process that should be running has exited."""
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            try:
                value = condition()
            except BackendUnavailable:  # e.g. a Kafka broker or Cassandra node down: ask again
                value = None
            if value:
                return value
            dead = [p for p in self.processes if p.died]
            assert not dead, f"waiting for {what}: {dead[0].name} exited {dead[0].proc.returncode}:\n" \
                + self.outputs(40, dead[0].output)
            assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s\n{self.diagnosis()}"
            time.sleep(pause)  # polling a condition, with a deadline
            pause = min(pause * 2, 0.25)

    def diagnosis(self) -> str:
        """Where things stand, for a failed wait: each consumer group's members, partitions and
        lag; each running process's thread stacks (SIGUSR1) follow in the outputs printed at close."""
        try:
            lines = self._groups()
        except (BackendUnavailable, KafkaException) as err:  # Kafka itself is what does not answer
            lines = [f"consumer groups: {err}"]
        for process in self.processes:
            if process.running:
                assert process.proc is not None
                process.proc.send_signal(signal.SIGUSR1)
        return "\n".join(lines)

    def _groups(self) -> list[str]:
        lines = []
        for group, topics_ in ((MCP_GROUP, topics.PROPOSAL_TOPICS), (MCL_GROUP, MCL_TOPICS)):
            name = self.log.group_name(group)
            description = self.admin.describe_consumer_groups([name], request_timeout=10)[name].result()
            lines.append(f"group {group}: {description.state}")
            lines += [f"  member {member.client_id}@{member.host}: "
                      + " ".join(sorted(f"{tp.topic.removeprefix(self.prefix)}[{tp.partition}]"
                                        for tp in member.assignment.topic_partitions))
                      for member in description.members]
            lines += [f"  {topic}[{p}]: committed {self.log.committed(group, topic, p)}"
                      f" of {self.log.end_offset(topic, p)}"
                      for topic in topics_ for p in range(self.log.partitions(topic))]
        return lines

    def await_healthy(self, *processes: Lodestar) -> None:
        for process in processes:
            self.await_(process.healthy, f"{process.name} answering /health")

    # Kafka

    def members(self, group: str) -> list[set[tuple[str, int]]] | None:
        """Each member's partitions in a stable consumer group (None while it rebalances)."""
        name = self.log.group_name(group)
        description = self.admin.describe_consumer_groups([name], request_timeout=10)[name].result()
        if description.state != ConsumerGroupState.STABLE:
            return None
        return [{(tp.topic, tp.partition) for tp in member.assignment.topic_partitions}
                for member in description.members]

    def await_group(self, group: str, topics_: tuple[str, ...], processes: int) -> None:
        """Until `group` is stable with a member per process and topic, each holding partitions of
        its topic, all of them held."""
        partitions = {(self.log.topic_name(t), p) for t in topics_ for p in range(self.log.partitions(t))}

        def settled() -> bool:
            members = self.members(group)
            return members is not None and len(members) == processes * len(topics_) and all(members) \
                and set().union(*members) == partitions
        self.await_(settled, f"group {group} stable with {processes} processes as members")

    def produce(self, proposals: list[Proposal]) -> None:
        """Append to the MCP topic as Gms.enqueue does (key: the URN)."""
        self.log.append(topics.MCP, [
            LogMessage(p.entity_urn, self.codec.encode(MCP, {**p.to_record(), "headers": {
                **(p.headers or {}), ACTOR_HEADER: ACTOR}})) for p in proposals])

    def mcp_committed(self) -> int:
        """Records of the MCP topic the GMS group has committed."""
        return sum(self.log.committed(MCP_GROUP, topics.MCP, p) for p in range(self.log.partitions(topics.MCP)))

    def await_mcps_applied(self, timeout: float = WAIT) -> None:
        ends = [self.log.end_offset(topics.MCP, p) for p in range(self.log.partitions(topics.MCP))]
        self.await_(lambda: all(self.log.committed(MCP_GROUP, topics.MCP, p) >= end for p, end in enumerate(ends)),
                    f"the MCP group committing the {sum(ends)} MCPs", timeout)

    def records(self, topic: str) -> list[dict[str, Any]]:
        """Every committed record of a topic, decoded."""
        return [self.codec.decode(record.value)[1] for p in range(self.log.partitions(topic))
                for record in self.log.read(topic, p, 0, 1_000_000)]

    def mcl_counts(self) -> Counter[tuple[str, str, int]]:
        """How many MCLs the MCL topic holds of each (urn, aspect, version), in either wire format."""
        reader = MclReader(self.codec, schema_lookup(self.aspects))
        return Counter((mcl["entityUrn"], mcl["aspectName"], int(mcl["systemMetadata"]["version"]))
                       for mcl in (reader.decode(record.value) for p in range(self.log.partitions(topics.MCL_VERSIONED))
                                   for record in self.log.read(topics.MCL_VERSIONED, p, 0, 1_000_000)))

    def close(self) -> None:
        """Stop the processes, print their output (shown when the test failed), delete every
        topic, group, keyspace and index the stack made."""
        try:
            for process in self.processes:
                process.terminate()
            for process in self.processes:
                process.exit_status(10)
            print(self.outputs(150))
        finally:
            try:
                if self.store is not None:
                    self.store.close()  # its lease's renewal thread, which would outlive the session
                if self.models is not None:
                    self.models.search.drop()
                    self.models.timeseries.drop()
                    self.models.close()
                self.session.execute(f'DROP KEYSPACE IF EXISTS "{self.run}"', timeout=120)
            finally:
                self.session.cluster.shutdown()
                self.log.close()
                drop_kafka_names(self.endpoints.kafka_bootstrap, self.prefix)


@pytest.fixture
def wire_format() -> str:
    """The MCLs' wire format of the `stack` (a test parametrizes it to run on both)."""
    return mcl_wire.LODESTAR


@pytest.fixture
def stack(tmp_path: Path, endpoints: Endpoints, kafka_bootstrap: str, cassandra_endpoints: Endpoints,
          opensearch_url: str, wire_format: str) -> Iterator[Stack]:
    built = Stack(tmp_path, endpoints, wire_format)
    try:
        yield built
    finally:
        built.close()
