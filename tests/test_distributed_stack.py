"""End to end on the distributed stack: real `lodestar` processes on Kafka, Cassandra and OpenSearch.

A producer that is not GMS appends MCPs to the MCP topic (encoded as `Gms.enqueue` encodes
them); two `lodestar gms` processes apply them as one consumer group, two `lodestar
mcl-processor` processes index the MCLs as another. Then the aspect store, the MCL and FailedMCP
topics and the read models are compared with what the workload must produce, and search and
lineage are asked over HTTP.

Exactly once, made exact. MCPs are applied at least once: a GMS that dies after applying a batch
but before committing its offsets leaves the batch to the member that takes its partitions over.
Applying an UPSERT of the stored value again is a noop, but an older UPSERT replayed after a
newer one would add a version. So every proposal of an aspect carries `If-Version-Match` with
the version its predecessor made (the first: -1, "does not exist"): a replayed proposal fails its
condition (412, to the FailedMCP topic) and changes nothing, so version k of an aspect holds
exactly its k-th proposal's value, and a lost proposal leaves a gap or a wrong value. -1 also
matches a deleted aspect, so aspects that end in a DELETE get their first version in a seed
round the MCP group has committed before any fault; aspects first written later are never deleted.

Faults. A GMS and an MCL processor die mid-run; the survivors take their partitions over after
the session timeout (6 s here). Versions the dead GMS stored but whose MCLs it had not published
wait in its outbox: the other GMS takes it over once the dead one's lease on its producer id has
expired (tests/test_outbox_takeover.py), and the dead one is restarted on its data directory,
which waits for that lease and publishes whatever is left. An outbox entry whose write was
still in flight at the SIGKILL is fenced (see gms.store.cassandra), so nothing waits for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlencode

import jsonpatch
import pytest
from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from gms.service import ACTOR_HEADER, MCP_GROUP
from gms.store.cassandra import CassandraAspectStore
from ingest import topics
from ingest.backends import Endpoints, cassandra_session
from ingest.eventlog import LogMessage
from ingest.eventlog.kafka import SEQUENCES, KafkaEventLog
from ingest.proposal import Proposal
from ingest.rest import LodestarError, RestClient
from mcl_processor.distributed import DistributedReadModels
from mcl_processor.processor import GROUP as MCL_GROUP
from mcl_processor.processor import TOPICS as MCL_TOPICS
from schemas.events import MCP, default_codec
from schemas.registry import default_registry
from schemas.urns import Urn
from tests.backends import drop_kafka_names, unique_name
from tests.builders import dataset_urn, proposal
from tests.conftest import free_port
from tests.processes import LODESTAR, TOKEN

pytestmark = pytest.mark.slow

SEEDED, FRESH = 300, 100  # datasets written from the seed round on / first written after it
ACTOR = "urn:li:corpuser:admin"  # MCPs from the topic are checked as their actor, who may write all
SESSION_TIMEOUT_MS = 6000  # the broker's minimum: a killed member's partitions move after it
WAIT = 90.0  # seconds any one awaited condition may take
T = TypeVar("T")


# -- the workload ---------------------------------------------------------------------------


def table(i: int) -> str:
    return dataset_urn(f"e2e.t{i:03d}")


def fresh(i: int) -> str:
    return dataset_urn(f"e2e.n{i:03d}")


def staging(i: int) -> str:
    return dataset_urn(f"e2e.s{i:03d}")


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


def deleted(i: int) -> bool:
    return i % 10 == 3


def workload() -> list[Chain]:
    """Seeded tables t000.. (properties with 3 to 6 versions, a PATCH in some, a DELETE in
    others; lineage to a staging dataset, then to the table before), tags on every third table
    from round 2, and fresh tables n000.. first written in round 2."""
    chains = []
    for i in range(SEEDED):
        urn = table(i)
        chains.append(properties_chain(urn, f"t{i:03d}", 3 + i % 4, 1, patch=i % 7 == 0, delete=deleted(i)))
        if i:
            chains.append(Chain(urn, "upstreamLineage", 1, upserts(
                lineage(staging(i)), lineage(table(i - 1), staging(i)), lineage(table(i - 1)))))
        if i % 3 == 0:
            chains.append(Chain(urn, "globalTags", 2, upserts(tags("e2e_draft"), tags("e2e_gold"))))
    for i in range(FRESH):
        chains.append(properties_chain(fresh(i), f"n{i:03d}", 3, 2, patch=False, delete=False))
    return chains


def rounds(chains: list[Chain]) -> dict[int, list[Proposal]]:
    """The proposals by round; within a round, in chain order."""
    by_round: dict[int, list[Proposal]] = {}
    for chain in chains:
        for number, item in chain.proposals():
            by_round.setdefault(number, []).append(item)
    return dict(sorted(by_round.items()))


# -- processes and servers ------------------------------------------------------------------


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

    def __init__(self, root: Path, endpoints: Endpoints):
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
                    "LODESTAR_OPENSEARCH_URL": endpoints.opensearch_url}
        self.processes: list[Lodestar] = []
        self.started = time.monotonic()
        self.codec = default_codec()
        self.admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
        self.session = cassandra_session(endpoints, request_timeout=60)
        self.log = KafkaEventLog.from_endpoints(endpoints, prefix=self.prefix)
        self.store: CassandraAspectStore | None = None
        self.models: DistributedReadModels | None = None
        try:  # tables, lineage tables and topics made here first, not raced for by the processes
            self.store = CassandraAspectStore(self.session, self.run, unique_name("verifier"))
            self.models = DistributedReadModels.connect(endpoints, default_registry(), keyspace=self.run,
                                                        index_prefix=self.run)
            for topic in (topics.MCP, topics.FAILED_MCP, *MCL_TOPICS, SEQUENCES):
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
        """condition()'s first truthy value within timeout seconds; fails early if a process that
        should be running has exited."""
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            value = condition()
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
        lines = []
        for group, topics_ in ((MCP_GROUP, (topics.MCP,)), (MCL_GROUP, MCL_TOPICS)):
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
        for process in self.processes:
            if process.running:
                assert process.proc is not None
                process.proc.send_signal(signal.SIGUSR1)
        return "\n".join(lines)

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
        """How many MCLs the MCL topic holds of each (urn, aspect, version)."""
        return Counter((mcl["entityUrn"], mcl["aspectName"], int(mcl["systemMetadata"]["version"]))
                       for mcl in self.records(topics.MCL_VERSIONED))

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
def stack(tmp_path: Path, endpoints: Endpoints, kafka_bootstrap: str, cassandra_endpoints: Endpoints,
          opensearch_url: str) -> Iterator[Stack]:
    built = Stack(tmp_path, endpoints)
    try:
        yield built
    finally:
        built.close()


# -- what must hold -------------------------------------------------------------------------


def expected_mcls(chains: list[Chain]) -> Counter[tuple[str, str, int]]:
    """One MCL per version: the chains' and each entity's key aspect (version 1)."""
    keys = {(chain.urn, "datasetKey", 1) for chain in chains}
    return Counter({*keys, *((c.urn, c.aspect, k) for c in chains for k, _ in c.versions())})


def await_indexed(stack: Stack, gms: Lodestar, chains: list[Chain]) -> None:
    """Until every MCL is readable on the topic, then until the MCL group has committed past them
    (waitForIndex)."""
    expected = expected_mcls(chains)
    stack.await_(lambda: set(stack.mcl_counts()) >= set(expected), f"the {len(expected)} MCLs on the MCL topic")
    stack.note(f"the {len(expected)} MCLs on the MCL topic")
    stack.await_(lambda: gms.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
                 ["indexed"], "the MCL processors indexing every MCL (waitForIndex)")
    stack.note("every MCL indexed")


def check_store(stack: Stack, chains: list[Chain]) -> None:
    """Each aspect's versions are 1..n with the chain's values; each entity has one key aspect version."""
    registry = default_registry()
    keys = [(urn, "datasetKey", [(1, registry.key_value(Urn.parse(urn)))]) for urn in sorted({c.urn for c in chains})]
    wanted = [(chain.urn, chain.aspect, chain.versions()) for chain in chains] + keys
    with ThreadPoolExecutor(16) as pool:
        histories = pool.map(lambda item: stack.aspects.history(item[0], item[1]), wanted)
        stored = [[(row.version, row.value if row.exists else None) for row in history] for history in histories]
    wrong = [f"{urn} {aspect}: stored {versions}, expected {expected}"
             for (urn, aspect, expected), versions in zip(wanted, stored, strict=True) if versions != expected]
    assert not wrong, f"{len(wrong)} aspect(s) differ from the workload:\n" + "\n".join(wrong[:10])


def check_mcls(stack: Stack, chains: list[Chain]) -> None:
    """Exactly one MCL per stored version on the MCL topic."""
    counts, expected = stack.mcl_counts(), expected_mcls(chains)
    doubled = sorted(key for key, n in counts.items() if n > 1)
    missing, unexpected = sorted(set(expected) - set(counts)), sorted(set(counts) - set(expected))
    assert not (doubled or missing or unexpected), \
        f"MCLs: doubled {doubled[:5]}, missing {missing[:5]}, unexpected {unexpected[:5]}"


def replays(stack: Stack, chains: list[Chain]) -> int:
    """The FailedMCP topic holds nothing but replays: proposals of the workload whose
    If-Version-Match no longer held because they had been applied. Their count."""
    proposals = {(c.urn, c.aspect, str(k - 1 if k > 1 else -1)) for c in chains for k, _ in c.versions()}
    failed = stack.records(topics.FAILED_MCP)
    others = [f for f in failed if not f["error"].startswith("precondition_failed: ")
              or (f["mcp"]["entityUrn"], f["mcp"]["aspectName"], f["mcp"]["headers"]["If-Version-Match"])
              not in proposals]
    assert not others, f"{len(others)} proposal(s) failed other than as replays, e.g. {others[:3]}"
    return len(failed)


def check_search_and_lineage(gms: Lodestar) -> None:
    """Search and lineage over HTTP answer from the final versions only."""
    client = gms.client()

    def search(query: str) -> tuple[int, set[str]]:
        body = client.call("GET", "/v1/search?" + urlencode({"query": query, "count": 1000}))
        return body["total"], {hit["urn"] for hit in body["results"]}

    finals = {table(i) for i in range(SEEDED) if not deleted(i)} | {fresh(i) for i in range(FRESH)}
    assert search("stage:final") == (len(finals), finals)
    assert search("t004final") == (1, {table(4)})
    assert search("t003final") == (0, set())  # its properties were deleted
    assert search("draft* patched")[0] == 0  # no earlier version is left in the index
    gold = {table(i) for i in range(0, SEEDED, 3)}
    assert search("tags:e2e_gold") == (len(gold), gold)
    assert search("tags:e2e_draft")[0] == 0

    walk = client.call("GET", "/v1/lineage?" + urlencode({"urn": table(200), "direction": "upstream",
                                                          "maxHops": 3}))
    assert {(edge["source"], edge["destination"]) for edge in walk["edges"]} == \
        {(table(i - 1), table(i)) for i in (200, 199, 198)}  # upstream to downstream, no staging left
    assert {node["urn"]: node["hops"] for node in walk["nodes"]} == {table(200 - hops): hops for hops in range(4)}


def start(stack: Stack, crash: bool = False) -> tuple[list[Lodestar], list[Lodestar]]:
    """Two GMS (one MCP group) and two MCL processors (one MCL group), once both groups are
    stable. With `crash`, the first of each dies right after it first applies a batch: the GMS
    once its versions are stored, before their MCLs are published and before the offsets are
    committed; the MCL processor once the read models are written, before the offsets are committed."""
    gms = [stack.gms("gms-a", "after-commit" if crash else None), stack.gms("gms-b")]
    processors = [stack.mcl_processor("mcl-a", "mcl-after-write" if crash else None), stack.mcl_processor("mcl-b")]
    stack.await_healthy(*gms)
    stack.note("both GMS answering")
    stack.await_group(MCP_GROUP, (topics.MCP,), 2)
    stack.note("MCP group stable")
    stack.await_group(MCL_GROUP, MCL_TOPICS, 2)
    stack.note("MCL group stable")
    return gms, processors


def seed(stack: Stack, chains: list[Chain]) -> list[Proposal]:
    """Produce round 1 and await it applied; the other rounds' proposals, in order."""
    by_round = rounds(chains)
    first = by_round.pop(1)
    stack.produce(first)
    stack.await_mcps_applied()
    stack.note(f"seed round applied: {len(first)} MCPs")
    return [p for proposals in by_round.values() for p in proposals]


def produce(stack: Stack, proposals: list[Proposal]) -> None:
    stack.produce(proposals)
    stack.note(f"produced {len(proposals)} MCPs")


def verify(stack: Stack, gms: Lodestar, chains: list[Chain]) -> int:
    """Every check, `lodestar check` (the read models equal the store) running meanwhile; the
    number of replays."""
    checking = subprocess.Popen([*LODESTAR, "check", "--data-dir", str(stack.root / "tool")], env=stack.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        check_store(stack, chains)
        check_mcls(stack, chains)
        replayed = replays(stack, chains)
        check_search_and_lineage(gms)
        report, _ = checking.communicate(timeout=120)
    finally:
        checking.kill()
        checking.wait()
    assert checking.returncode == 0, f"lodestar check:\n{report}"
    stack.note(f"verified; {replayed} replayed proposal(s) failed their If-Version-Match")
    return replayed


def stop_all(stack: Stack) -> None:
    """SIGTERM every running process: each exits 0, promptly."""
    running = [p for p in stack.processes if p.running]
    for process in running:
        process.terminate()
    assert [(p.name, p.exit_status()) for p in running] == [(p.name, 0) for p in running]


def test_two_gms_and_two_mcl_processors_apply_and_index_every_proposal_once(stack: Stack):
    """Both groups share the work; every proposal is applied once and indexed; no replay."""
    chains = workload()
    gms, _ = start(stack)
    produce(stack, seed(stack, chains))
    stack.await_mcps_applied()
    stack.note("every MCP applied")
    await_indexed(stack, gms[0], chains)
    assert verify(stack, gms[1], chains) == 0  # a stable group hands no record to two members
    stop_all(stack)


@pytest.mark.parametrize("death", ["killed", "crashed"])
def test_a_gms_and_an_mcl_processor_dying_mid_run_lose_and_double_nothing(stack: Stack, death: str):
    """killed: SIGKILL once the MCP group has committed half of the first half of the MCPs after
    the seed round, wherever the two processes are then; the second half is produced after.
    crashed: at the crash points of `start`, so there is certainly a batch applied but not
    committed (replayed by the survivor) and, for the GMS, stored versions whose MCLs were not
    published (published by its restart)."""
    chains = workload()
    gms, processors = start(stack, crash=death == "crashed")
    rest = seed(stack, chains)
    victims = [gms[0], processors[0]]
    if death == "killed":
        first, second = rest[:len(rest) // 2], rest[len(rest) // 2:]
        target = stack.mcp_committed() + len(first) // 2
        produce(stack, first)
        stack.await_(lambda: stack.mcp_committed() >= target, "half of the first half applied")
        for victim in victims:
            victim.kill()
        stack.note("killed gms-a and mcl-a")
        produce(stack, second)
    else:
        produce(stack, rest)
        stack.await_(lambda: not any(v.running for v in victims), "the crash points reached")
        assert [v.proc.returncode for v in victims if v.proc] == [137, 137]
        stack.note("gms-a and mcl-a crashed")
    stack.await_mcps_applied()  # by gms-b, once the session timeout hands it gms-a's partitions
    stack.note("every MCP applied")
    restarted = stack.gms("gms-a")  # publishes what its outbox holds (see the module docstring)
    stack.await_healthy(restarted)
    await_indexed(stack, gms[1], chains)
    replayed = verify(stack, restarted, chains)
    if death == "crashed":
        assert replayed > 0
    stop_all(stack)
