"""Crash-safety under SIGKILL: a workload of conditional proposals sent while Lodestar is killed at
random moments, and what must hold afterwards. Used by tests/faults/test_fault_injection.py (short runs)
and bench/reliability.py (100,000 MCPs, 20+ kills).

The workload is made of chains (tests.support.stack.Chain): the proposals of one aspect
in order, step k conditioned on version k-1 (`If-Version-Match`; the first on -1), so a step can
make version k and nothing else; some chains PATCH, some end in a DELETE. Each entity also gets
timeseries points (datasetProfile, one per timestamp). Exactly once is then checkable: aspect
version k must hold step k's value, every version must have exactly one MCL, every point must be
in the timeseries model exactly once, and `lodestar check` must find the read models equal to
the store.

Embedded (`run_embedded`): `lodestar serve --workers 2` (GMS workers and the background process
with the MCL processor), its whole process group SIGKILLed at random moments spread over the run
and started again on the same data directory. Client threads own disjoint entities and send the
next step of each in batches over REST. A batch whose response was lost to a kill is uncertain:
it is sent again as it was, and a step that then fails its condition with the aspect at exactly
version k (deleted, for a DELETE) was applied by the lost attempt (no one else writes that aspect);
any other failure is a lost or doubled proposal and fails the run; the histories are checked after.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gms.schema_registry import schema_lookup
from gms.service import DATABASE, MCP_GROUP
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.proposal import Proposal
from ingest.rest import LodestarError, RestClient
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import GROUP as MCL_GROUP
from mcl_processor.processor import TOPICS as MCL_TOPICS
from schemas import mcl_wire
from schemas.mcl_wire import MclReader
from schemas.registry import default_registry
from schemas.urns import Urn
from tests.support.builders import dataset_urn, proposal
from tests.support.processes import LODESTAR, TOKEN
from tests.support.server import free_port
from tests.support.stack import Chain, lineage, properties_chain, tags, upserts

PROFILE = "datasetProfile"
T0 = 1_700_000_000_000  # timestamps of the points: T0 + entity * 1000 + point


# -- the workload ---------------------------------------------------------------------------


def entity(i: int) -> str:
    return dataset_urn(f"fi.t{i:06d}")


@dataclass(frozen=True)
class Work:
    """Per entity, its steps in the order they must be applied: versioned steps come from the
    entity's chains (one chain after the other), timeseries points in between."""

    chains: list[Chain]
    steps: dict[str, list[Proposal]]  # urn -> proposals in order
    points: dict[str, list[int]]  # urn -> timestamps of its datasetProfile points

    @property
    def mcps(self) -> int:
        return sum(len(steps) for steps in self.steps.values())


def workload(entities: int, first: int = 0) -> Work:
    """About 8 MCPs per entity: properties (3 to 6 versions, a PATCH in one of 7, a DELETE at the
    end in one of 10), lineage to the entity before (2 versions), tags on one in 3 (2 versions),
    two profile points."""
    chains: list[Chain] = []
    steps: dict[str, list[Proposal]] = {}
    points: dict[str, list[int]] = {}
    for i in range(first, first + entities):
        urn = entity(i)
        mine = [properties_chain(urn, f"fi{i:06d}", 3 + i % 4, 1, patch=i % 7 == 0, delete=i % 10 == 3)]
        if i > first:
            mine.append(Chain(urn, "upstreamLineage", 1, upserts(lineage(entity(i - 1)),
                                                                 lineage(entity(i - 1), entity(max(0, i - 2))))))
        if i % 3 == 0:
            mine.append(Chain(urn, "globalTags", 1, upserts(tags("fi_draft"), tags("fi_gold"))))
        chains += mine
        points[urn] = [T0 + i * 1000, T0 + i * 1000 + 1]
        ordered = [p for chain in mine for _, p in chain.proposals()]
        ordered.insert(1, proposal(urn, PROFILE, {"timestampMillis": points[urn][0], "rowCount": i}))
        ordered.append(proposal(urn, PROFILE, {"timestampMillis": points[urn][1], "rowCount": i + 1}))
        steps[urn] = ordered
    return Work(chains, steps, points)


# -- what must hold -------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the checks found; `lost`, `doubled_mcls`, `doubled_points` and `divergences` must be 0."""

    versions: int = 0
    lost: int = 0  # versions missing or holding another value than their step's
    doubled_mcls: int = 0  # versions with more than one MCL, or MCLs of no stored version
    missing_mcls: int = 0
    doubled_points: int = 0  # timeseries points in the read model more than once
    divergences: int = 0  # what `lodestar check` found
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.doubled_mcls or self.missing_mcls or self.doubled_points or self.divergences)


def expected_versions(work: Work) -> dict[tuple[str, str], list[tuple[int, Any]]]:
    """(urn, aspect) -> [(version, value or None if deleted)], key aspects included."""
    registry = default_registry()
    wanted = {(c.urn, c.aspect): c.versions() for c in work.chains}
    for urn in work.steps:
        wanted[(urn, "datasetKey")] = [(1, registry.key_value(Urn.parse(urn)))]
    return wanted


def compare_histories(verdict: Verdict, wanted: dict[tuple[str, str], list[tuple[int, Any]]],
                      history: Callable[[str, str], list[Any]]) -> None:
    for (urn, aspect), expected in wanted.items():
        stored = [(row.version, row.value if row.exists else None) for row in history(urn, aspect)]
        verdict.versions += len(stored)
        if stored != expected:
            verdict.lost += max(1, len(set(expected) ^ set(stored)))
            verdict.examples.append(f"{urn} {aspect}: stored {stored}, expected {expected}")


def compare_mcls(verdict: Verdict, wanted: dict[tuple[str, str], list[tuple[int, Any]]],
                 counts: Counter[tuple[str, str, int]]) -> None:
    """(MCLs of entities outside the workload, e.g. the schema registry's own, are not counted.)"""
    expected = {(urn, aspect, v) for (urn, aspect), versions in wanted.items() for v, _ in versions}
    urns = {urn for urn, _ in wanted}
    counts = Counter({key: n for key, n in counts.items() if key[0] in urns})
    verdict.doubled_mcls += sum(n - 1 for n in counts.values() if n > 1) + len(set(counts) - expected)
    verdict.missing_mcls += len(expected - set(counts))
    if verdict.doubled_mcls or verdict.missing_mcls:
        verdict.examples.append(f"MCLs doubled {[k for k, n in counts.items() if n > 1][:5]},"
                                f" missing {sorted(expected - set(counts))[:5]}")


def compare_points(verdict: Verdict, work: Work, query: Callable[[str], list[dict[str, Any]]]) -> None:
    for urn, expected in work.points.items():
        seen = sorted(point["timestampMillis"] for point in query(urn))
        if seen != expected:
            verdict.doubled_points += max(0, len(seen) - len(set(seen)))
            verdict.lost += len(set(expected) - set(seen))
            verdict.examples.append(f"{urn} {PROFILE}: points {seen}, expected {expected}")


def run_check(data_dir: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`lodestar check` on data_dir: (differences found, its output)."""
    done = subprocess.run([*LODESTAR, "check", "--json", "--data-dir", str(data_dir)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})
    if done.returncode not in (0, 1):
        return 1, done.stdout + done.stderr
    return json.loads(done.stdout)["differences"], done.stdout


def mcl_counts(log: Any, reader: MclReader, partitions: int = 1) -> Counter[tuple[str, str, int]]:
    """How many MCLs the versioned topic holds of each (urn, aspect, version), in either format."""
    counts: Counter[tuple[str, str, int]] = Counter()
    for partition in range(partitions):
        offset = 0
        while batch := log.read(topics.MCL_VERSIONED, partition, offset, 10_000):
            for record in batch:
                mcl = reader.decode(record.value)
                counts[(mcl["entityUrn"], mcl["aspectName"], int(mcl["systemMetadata"]["version"]))] += 1
            offset = batch[-1].offset + 1
    return counts


# -- the embedded run -----------------------------------------------------------------------


class Server:
    """`lodestar serve --workers 2` in a process group of its own, SIGKILLed as a whole."""

    def __init__(self, data_dir: Path, output: Path, wire_format: str = mcl_wire.LODESTAR):
        self.data_dir, self.output = data_dir, output
        self.env = {**os.environ, "LODESTAR_KAFKA_WIRE_FORMAT": wire_format}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.up = threading.Event()

    def start(self) -> None:
        with self.output.open("ab") as out:
            self.proc = subprocess.Popen([*LODESTAR, "serve", "--workers", "2", "--data-dir", str(self.data_dir),
                                          "--port", str(self.port), "--admin-token", TOKEN],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env=self.env)
        client = RestClient(self.url)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, f"lodestar serve exited {self.proc.returncode}: {self.tail()}"
            try:
                if client.request("GET", "/health")[0] == 200:
                    break
            except LodestarError:
                pass
            assert time.monotonic() < deadline, "lodestar serve did not answer /health within 60s"
            time.sleep(0.05)  # polling a condition, with a deadline
        self.up.set()

    def kill(self) -> None:
        """SIGKILL to every process of the group: GMS workers, background process, decode workers."""
        assert self.proc is not None
        self.up.clear()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> int:
        """SIGTERM; the exit status."""
        assert self.proc is not None
        self.up.clear()
        self.proc.terminate()
        return self.proc.wait(60)

    def close(self) -> None:
        """SIGKILL whatever of the group is left (after a failure; stop() ends it cleanly)."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class RunReport:
    mcps: int
    kills: int
    seconds: float
    resent: int  # proposals sent again after a response lost to a kill (REST)
    # proposals delivered a second time (resent after a lost answer, or replayed from the MCP topic
    # after a GMS died before committing its offsets) whose version was already made: applied once
    duplicates_absorbed: int
    verdict: Verdict
    converged: float = 0.0  # seconds from the last recovery to every MCP applied and indexed (distributed)

    def summary(self, fault: str) -> str:
        """One line per fault: what was acknowledged, lost, doubled, and how long convergence took."""
        v = self.verdict
        return (f"{fault}: {self.mcps} MCPs acknowledged, {v.versions} versions, lost {v.lost + v.missing_mcls},"
                f" duplicates {v.doubled_mcls + v.doubled_points}, divergences {v.divergences},"
                f" converged in {self.converged:.1f}s after recovery ({self.seconds:.0f}s in all)")


class Driver(threading.Thread):
    """Sends the steps of its entities, the next step of each only once the one before is settled."""

    def __init__(self, server: Server, work: Work, urns: list[str], batch: int, progress: Callable[[int], None]):
        super().__init__(daemon=True)
        self.server, self.work, self.urns, self.batch, self.progress = server, work, urns, batch, progress
        self.resent = self.by_lost_attempt = 0
        self.refused = 0  # answers 429 or 503 (the batch sent again)
        self.failures: list[str] = []

    def run(self) -> None:
        try:
            self._run()
        except BaseException as err:  # reported by the caller
            self.failures.append(f"driver stopped: {type(err).__name__}: {err}")

    def _run(self) -> None:
        position = dict.fromkeys(self.urns, 0)
        active = list(self.urns)
        client = RestClient(self.server.url, TOKEN, timeout=120)
        while active and not self.failures:
            chosen = active[:self.batch]
            active = active[self.batch:] + chosen  # round robin
            sent = [self.work.steps[urn][position[urn]] for urn in chosen]
            results, uncertain = self._send(client, sent)
            for urn, step, result in zip(chosen, sent, results, strict=True):
                if self._settled(step, result, uncertain):
                    position[urn] += 1
            self.progress(len(sent))
            active = [urn for urn in active if position[urn] < len(self.work.steps[urn])]

    def _send(self, client: RestClient, sent: list[Proposal]) -> tuple[list[dict[str, Any]], bool]:
        """The results, and whether an earlier attempt may have been applied (its answer lost, or
        a 503): the batch was sent again."""
        uncertain = False
        body = {"proposals": [p.to_json() for p in sent]}
        while True:
            self.server.up.wait()
            try:
                status, answer = client.request("POST", "/v1/proposals", body)
            except LodestarError:  # killed while the batch was in flight: it may be applied, or part of it
                uncertain = True  # (the killer cleared `up` before the kill: the loop waits for the restart)
                self.resent += len(sent)
                client.close()
                continue
            if status in (429, 503):  # asked to come back later; a 503 may come after the batch was
                uncertain = uncertain or status == 503  # applied (its MCLs not yet published: operations.md)
                self.refused += 1
                time.sleep(0.2)
                continue
            if not isinstance(answer, dict) or "results" not in answer:
                self.failures.append(f"HTTP {status}: {answer}")
                return [{"status": "failed"}] * len(sent), uncertain
            return answer["results"], uncertain

    def _settled(self, step: Proposal, result: dict[str, Any], uncertain: bool) -> bool:
        if result["status"] == "applied":
            return True
        wanted = step.headers.get("If-Version-Match")
        # what the aspect is at if the lost attempt made this step's version (a deleted one reads as -1)
        made = "-1" if step.change_type == "DELETE" else str(int(wanted) + 1 if wanted != "-1" else 1) \
            if wanted is not None else None
        if uncertain and made is not None and result.get("error") == "precondition_failed" \
                and str(result.get("actual")) == made:
            self.by_lost_attempt += 1
            return True
        self.failures.append(f"{step.entity_urn} {step.aspect_name} {step.change_type} {step.headers}: {result}")
        return False


def assert_settled(drivers: list[Driver], context: str = "") -> None:
    """Fails naming what the REST clients could not settle: proposals answered neither applied
    nor with a retryable status (their versions are then not all made)."""
    failures = [failure for driver in drivers for failure in driver.failures]
    assert not failures, f"{len(failures)} proposal(s) not settled, e.g. {failures[:5]}\n{context}"


def run_embedded(root: Path, entities: int, kills: int, clients: int = 4, batch: int = 50, seed: int = 1,
                 note: Callable[[str], None] = print, wire_format: str = mcl_wire.LODESTAR) -> RunReport:
    """The workload over REST into `lodestar serve --workers 2` (MCLs in `wire_format`), killed
    `kills` times at random moments spread over the run (each after a random share of one
    interval's MCPs), then checked."""
    rng = random.Random(seed)
    work = workload(entities)
    data_dir = root / "data"
    server = Server(data_dir, root / "serve.out", wire_format)
    server.start()
    sent = Counter[str]()
    lock = threading.Lock()

    def progress(n: int) -> None:
        with lock:
            sent["mcps"] += n

    try:
        urns = list(work.steps)
        drivers = [Driver(server, work, urns[c::clients], batch, progress) for c in range(clients)]
        started = time.monotonic()
        for driver in drivers:
            driver.start()
        interval = work.mcps / (kills + 1)
        done_kills = 0
        while done_kills < kills and any(d.is_alive() for d in drivers):
            target = interval * (done_kills + rng.uniform(0.5, 1.5))
            while sent["mcps"] < target and any(d.is_alive() for d in drivers):
                time.sleep(0.01)  # polling the drivers' progress
            server.kill()
            done_kills += 1
            note(f"kill {done_kills} after {sent['mcps']} MCPs sent")
            server.start()
        for driver in drivers:
            driver.join()
        seconds = time.monotonic() - started
        assert_settled(drivers, server.tail())
        client = RestClient(server.url, TOKEN, timeout=300)
        deadline = time.monotonic() + 600
        while not client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]:
            assert time.monotonic() < deadline, "the MCL processor did not catch up within 600 s"  # 30 s a call
        assert server.stop() == 0, server.tail()
    finally:
        server.close()
    verdict = verify_embedded(data_dir, work)
    return RunReport(work.mcps, done_kills, seconds, sum(d.resent for d in drivers),
                     sum(d.by_lost_attempt for d in drivers), verdict)


def verify_embedded(data_dir: Path, work: Work) -> Verdict:
    verdict = Verdict()
    wanted = expected_versions(work)
    log = SqliteEventLog(data_dir / DATABASE)
    store = SqliteAspectStore(data_dir / DATABASE, colocated_log=log)
    models = SqliteReadModels.in_data_dir(data_dir, default_registry())
    try:
        assert store.pending_outbox() == []
        compare_histories(verdict, wanted, store.history)
        compare_mcls(verdict, wanted, mcl_counts(log, MclReader(lookup=schema_lookup(store))))
        compare_points(verdict, work, lambda urn: models.timeseries.query(urn, PROFILE))
    finally:
        models.close()
        store.close()
        log.close()
    verdict.divergences, report = run_check(data_dir)
    if verdict.divergences:
        verdict.examples.append(report)
    return verdict


# -- the distributed run --------------------------------------------------------------------


def seed_and_rest(work: Work) -> tuple[list[Proposal], list[Proposal]]:
    """The first step of every chain (applied before any kill: a replay of a step conditioned on
    -1 would match an aspect deleted since), and every other step, entity after entity."""
    first, rest = [], []
    for steps in work.steps.values():
        for step in steps:
            (first if step.headers.get("If-Version-Match") == "-1" else rest).append(step)
    return first, rest


# A fault on the servers: called with the fault's number while writes go on, it breaks something
# and returns what it did and how to recover (called later, while writes still go on).
Fault = Callable[[int], tuple[str, Callable[[], None]]]

PROCESSES = {"gms-a": "gms", "gms-b": "gms", "mcl-a": "mcl_processor", "mcl-b": "mcl_processor"}  # name -> Stack's


@dataclass
class RestTarget:
    """A GMS the REST clients of a distributed run write to (a request it did not answer is sent again)."""

    url: str
    up: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.up.set()


def start_processes(stack: Any) -> dict[str, Any]:
    """gms-a, gms-b, mcl-a and mcl-b (PROCESSES) on the stack, once both GMS answer and both
    consumer groups are stable with two members each."""
    running = {name: getattr(stack, command)(name) for name, command in PROCESSES.items()}
    stack.await_healthy(running["gms-a"], running["gms-b"])
    stack.await_group(MCP_GROUP, topics.PROPOSAL_TOPICS, 2)
    stack.await_group(MCL_GROUP, MCL_TOPICS, 2)
    return running


def seed_round(stack: Any, works: list[Work]) -> list[list[Proposal]]:
    """The first step of every chain of `works` appended to the MCP topic and applied (before
    any fault); returns each work's other steps."""
    split = [seed_and_rest(work) for work in works]
    first = [step for steps, _ in split for step in steps]
    stack.produce(first)
    stack.await_mcps_applied(timeout=max(90.0, len(first) / 50))
    stack.note(f"seed round applied: {len(first)} MCPs")
    return [rest for _, rest in split]


def append(stack: Any, proposals: list[Proposal]) -> None:
    """Appended to the MCP topic: a producer told its write failed (a broker down) sends it
    again; the replays are harmless (conditional steps)."""
    stack.await_(lambda: stack.produce(proposals) or True, "the MCPs appended to the MCP topic")


def wanted_versions(works: list[Work]) -> dict[tuple[str, str], list[tuple[int, Any]]]:
    return {key: versions for work in works for key, versions in expected_versions(work).items()}


def await_converged(stack: Any, gms: Any, works: list[Work]) -> None:
    """Until GMS's group has applied every MCP appended so far, every version of `works` has
    its MCL on the MCL topic, and the MCL processors have indexed every MCL (`gms` asked)."""
    stack.await_mcps_applied(timeout=max(300.0, sum(work.mcps for work in works) / 50))
    stack.note("every MCP applied")
    expected = {(urn, aspect, v) for (urn, aspect), versions in wanted_versions(works).items() for v, _ in versions}
    try:
        stack.await_(lambda: set(stack.mcl_counts()) >= expected, "every MCL on the MCL topic", timeout=300)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{missing_mcls(stack, expected)}") from None
    stack.await_healthy(gms)
    stack.await_(lambda: gms.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
                 ["indexed"], "the MCL processors indexing every MCL", timeout=300)


def missing_mcls(stack: Any, expected: set[tuple[str, str, int]]) -> str:
    """What of the expected MCLs the MCL topic lacks, with their aspects' versions in the store
    and the outbox entries still pending, by producer."""
    missing = sorted(expected - set(stack.mcl_counts()))
    stored = {(urn, aspect): [row.version for row in stack.aspects.history(urn, aspect)]
              for urn, aspect, _ in missing[:5]}
    pending = Counter(row.producer for row in stack.session.execute(
        f'SELECT producer FROM "{stack.run}".outbox_pending', timeout=60))
    return (f"{len(missing)} MCL(s) missing, e.g. {missing[:5]}; those aspects' versions in the store: {stored};"
            f" outbox entries pending, by producer: {dict(pending)}")


def verify_distributed(stack: Any, works: list[Work], writers: list[Driver]) -> tuple[Verdict, int]:
    """The checks of the embedded run on Cassandra, Kafka and OpenSearch, of the entities of
    `works` (written from the MCP topic, or over REST by `writers`), then `lodestar check` on the
    whole stack; and how many deliveries of those entities found their version already made
    (absorbed duplicates)."""
    verdict = Verdict()
    wanted = wanted_versions(works)
    with ThreadPoolExecutor(16) as pool:
        histories = dict(zip(wanted, pool.map(lambda key: stack.aspects.history(*key), wanted), strict=True))
    compare_histories(verdict, wanted, lambda urn, aspect: histories[(urn, aspect)])
    compare_mcls(verdict, wanted, stack.mcl_counts())
    for work in works:
        compare_points(verdict, work, lambda urn: stack.models.timeseries.query(urn, PROFILE))
    urns = {urn for work in works for urn in work.steps}
    failed = [f for f in stack.records(topics.FAILED_MCP) if f["mcp"].get("entityUrn") in urns]
    replays = [f for f in failed if f["error"].startswith("precondition_failed: ")]
    verdict.lost += len(failed) - len(replays)
    verdict.examples += [f"failed other than as a replay: {f}" for f in failed if f not in replays][:5]
    verdict.divergences, report = run_check(stack.root / "tool", stack.env)
    if verdict.divergences:
        verdict.examples.append(report)
    return verdict, len(replays) + sum(writer.by_lost_attempt for writer in writers)


def run_distributed(stack: Any, entities: int, kills: int, seed: int = 1, fault: Fault | None = None,
                    rest_entities: int = 0) -> RunReport:
    """The workload appended to the MCP topic (by a producer that is not GMS) for two `lodestar
    gms` and two `lodestar mcl-processor` processes (tests.support.stack.Stack), in
    `kills` + 1 chunks; after a random share of each chunk is applied, a random one of the four
    is SIGKILLed and started again on its data directory (same producer id, so its outbox is
    published), or, given `fault`, that fault happens (its recovery at the next fault's moment,
    or once the last chunk is appended). Meanwhile `rest_entities` more entities are written over
    REST to gms-b by a client thread that sends a batch again only after a retryable answer (429,
    503) or none; any other answer is a failure. Then all is checked like the embedded run, on
    Cassandra, Kafka and OpenSearch."""
    rng = random.Random(seed)
    work = workload(entities)
    running = start_processes(stack)
    started = time.monotonic()
    [rest] = seed_round(stack, [work])
    rest_work = workload(rest_entities, first=entities)
    writer = Driver(RestTarget(running["gms-b"].client().server), rest_work, list(rest_work.steps), 10, lambda _: None)
    writer.start()
    chunk = len(rest) // (kills + 1) + 1
    pending: list[Callable[[], None]] = []  # the recovery of the last fault, until done
    try:
        for k in range(kills + 1):
            part = rest[k * chunk:(k + 1) * chunk]
            if not part:
                break
            # (awaited: a broker may be down)
            committed = stack.await_(lambda: (stack.mcp_committed(),), "the MCP group's offsets")[0]
            target = committed + int(len(part) * rng.uniform(0.2, 0.8))
            append(stack, part)
            if k == kills:
                break
            stack.await_(lambda t=target: stack.mcp_committed() >= t, "part of the chunk applied",
                         timeout=max(180.0, len(part) / 20))
            while pending:
                pending.pop()()
            if fault is None:
                victim = rng.choice(sorted(running))
                running[victim].kill()
                stack.note(f"kill {k + 1}: {victim}, {stack.mcp_committed()} MCPs committed")
                running[victim] = getattr(stack, PROCESSES[victim])(victim)
            else:
                what, recover = fault(k)
                pending.append(recover)
                stack.note(f"fault {k + 1}: {what}")
    finally:  # a failed run leaves no server down behind it
        while pending:
            pending.pop()()
            stack.note("recovered from the last fault")
    recovered = time.monotonic()
    writer.join(600)
    assert not writer.is_alive(), "the REST client did not finish within 600 s"
    assert_settled([writer])
    await_converged(stack, running["gms-a"], [work, rest_work])
    seconds, converged = time.monotonic() - started, time.monotonic() - recovered
    verdict, absorbed = verify_distributed(stack, [work, rest_work], [writer])
    return RunReport(work.mcps + rest_work.mcps, kills, seconds, writer.resent, absorbed, verdict, converged)
