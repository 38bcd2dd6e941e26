"""End-to-end MCP/s on the real stack (Kafka + Cassandra + OpenSearch) next to each backend's raw limit.

    .venv/bin/python -m bench.real_stack [--datasets 2500] [--setups serve,split] [--workers 2]
                                         [--wire-formats lodestar,confluent] [--rounds 3]
                                         [--warmup-datasets 500]

Lodestar: 4 MCPs per realistic dataset (`bench/datasets.py`) sent to GMS over HTTP (batches of
1000, one connection per GMS worker), timed from the first request until everything is
searchable (`waitForIndex`), as `bench/read_models.py` measures the embedded stack. Each setup
runs on names of its own (Kafka prefix, keyspace, index prefix) against the running servers:

* `serve`: `lodestar serve --workers W` (W request workers + one background process: MCP
  consumer, MCL processor and its decode workers, outbox relay);
* `split`: `lodestar gms --workers W` and `lodestar mcl-processor` as separate processes.

Each setup runs once per MCL wire format (`kafka.wire_format`: Lodestar's own, then DataHub's
schema in Confluent's framing), one right after the other, printed side by side with the
Confluent run's extra time (target: under 10% more per MCL).

Then each backend alone, on the same machine, doing the writes Lodestar made for those MCPs
(read back from the first setup's run), as a well-written client would:

* Kafka: the run's MCLs (same keys, sizes and partitioning), produced by an idempotent
  acks=all producer (the adapter's settings) while a consumer reads them back;
* Cassandra: the rows of the run's aspect store, each an `INSERT ... IF NOT EXISTS` into a
  table of the same shape, 64 in flight (execute_concurrent); then the same rows as one
  conditional batch per entity, as Lodestar writes them (the fair baseline);
* OpenSearch: the run's search documents, bulk-indexed into an index with the same settings
  and mappings, then refreshed.

A raw run repeats the run's writes (under other keys) until it has RAW_MINIMUM of them, so it
measures a steady rate. Each raw figure is also given in MCP/s: the MCPs whose writes it did
per second. The ratio is Lodestar's best setup over the slowest backend, both measured in the
same round (target >= 70%), and over the fair baseline (target >= 50%). The bound beside them
is what the end-to-end rate could be if Lodestar's own processes took no CPU: the raw backends'
rates in series (each MCP's Kafka, batched Cassandra and OpenSearch writes one after the
other), and the rate at which those raw writes' server CPU fills the machine's cores.
A warm-up round (`--warmup-datasets`, printed, not counted) runs first, then `--rounds` rounds,
each printing its own ratios; the last lines give every round's.

Where the time goes: beside each Lodestar run, the CPU seconds of its processes and of each
server's (every node's, found by its listening address; a server's figure includes any other
client's work meanwhile), per 1,000 MCPs; beside the raw Cassandra run, Cassandra's. Figures only,
never asserted; on a shared 2-core machine they move between runs. Every topic, consumer
group, keyspace and index made is deleted at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import orjson
import psutil
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import BatchStatement, BatchType, tuple_factory
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from opensearchpy import OpenSearch

from bench.datasets import generate
from bench.startup import tree_cpu
from gms.store.cassandra import ENTITY_CONCURRENCY
from gms.store.cassandra_schema import QUORUM, SERIAL, ensure_schema
from ingest import topics
from ingest.backends import Endpoints
from ingest.eventlog import partition_for
from ingest.rest import LodestarError, RestClient
from mcl_processor.workers import default_workers
from schemas.mcl_wire import WIRE_FORMATS
from tests.support.processes import LODESTAR, TOKEN
from tests.support.server import free_port
from tests.support.stack import replication_env

T = TypeVar("T")
BATCH = 1000  # MCPs per POST, as the other benchmarks send them
PARTITIONS = 4  # the Kafka event log's default partition count
CASSANDRA_CONCURRENCY = 64
BULK_DOCS = 500  # documents per raw bulk request
FAIR = "fair"  # the key of a round's ratio to the raw client that batches each entity's rows
FAIR_TARGET = 50  # percent of that client's rate, in each round
RAW_MINIMUM = {"kafka": 50_000, "cassandra": 20_000, "opensearch": 10_000}  # writes per raw run, at least
WAIT = 120.0


@dataclass
class Names:
    """The names one Lodestar run uses on the shared servers (unique per run)."""

    run: str = field(default_factory=lambda: f"bench_{uuid.uuid4().hex[:12]}")

    @property
    def kafka_prefix(self) -> str:
        return f"{self.run}-"

    def env(self, endpoints: Endpoints, wire_format: str, replication: int = 1) -> dict[str, str]:
        """`replication`: of the topics and keyspace (and, less one, the indices; see replication_env)."""
        return {**replication_env(replication), "LODESTAR_KAFKA_WIRE_FORMAT": wire_format,
                "LODESTAR_EVENT_LOG": "kafka", "LODESTAR_ASPECT_STORE": "cassandra",
                "LODESTAR_READ_MODELS": "distributed", "LODESTAR_KAFKA_PREFIX": self.kafka_prefix,
                "LODESTAR_CASSANDRA_KEYSPACE": self.run, "LODESTAR_OPENSEARCH_PREFIX": self.run,
                "LODESTAR_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
                "LODESTAR_CASSANDRA_HOSTS": ",".join(endpoints.cassandra_hosts),
                "LODESTAR_OPENSEARCH_URL": endpoints.opensearch_url}


# -- servers: connections and cleanup -----------------------------------------------------


def cassandra_session(endpoints: Endpoints) -> Cluster:
    """A cluster connection as a well-written client makes it: token aware, QUORUM/SERIAL,
    TCP_NODELAY (else every request over ~4 KB waits ~40 ms for a delayed ACK), plain tuples
    for rows."""
    hosts, port = endpoints.cassandra_contact_points()
    profile = ExecutionProfile(load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
                               request_timeout=30.0, consistency_level=QUORUM, serial_consistency_level=SERIAL,
                               row_factory=tuple_factory)
    return Cluster(hosts, port=port, protocol_version=5, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                   sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)], connect_timeout=30)


def drop_everything(endpoints: Endpoints, names: Names) -> None:
    """Delete the run's topics, consumer groups, keyspace and indices (whatever exists)."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    with suppress(Exception):
        doomed = [t for t in admin.list_topics(timeout=30).topics if t.startswith(names.kafka_prefix)]
        for future in (admin.delete_topics(doomed, operation_timeout=30).values() if doomed else ()):
            with suppress(Exception):
                future.result()
    with suppress(Exception):
        groups = [g.group_id for g in admin.list_consumer_groups(request_timeout=30).result().valid
                  if g.group_id.startswith(names.kafka_prefix)]
        for future in (admin.delete_consumer_groups(groups, request_timeout=30).values() if groups else ()):
            with suppress(Exception):
                future.result()
    with suppress(Exception):
        cluster = cassandra_session(endpoints)
        try:
            cluster.connect().execute(f'DROP KEYSPACE IF EXISTS "{names.run}"', timeout=120)
        finally:
            cluster.shutdown()
    with suppress(Exception):
        client = OpenSearch(endpoints.opensearch_nodes, timeout=120)
        for index in client.indices.get(index=f"{names.run}_*", params={"allow_no_indices": "true"}):
            client.indices.delete(index=index, params={"ignore_unavailable": "true"})
        client.close()


# -- Lodestar ------------------------------------------------------------------------------


@dataclass
class Setup:
    """How Lodestar runs: the processes (each a `lodestar` command line) and what they do."""

    name: str
    commands: list[list[str]]
    description: str
    connections: int


def setups(workers: int) -> dict[str, Setup]:
    """The setups by name (see the module docstring)."""
    gms = (f"{workers} GMS request workers (each applying up to {ENTITY_CONCURRENCY} entities at once on"
           " Cassandra)")
    processor = f"MCL processor with {default_workers()} decode worker process(es)"
    return {
        "serve": Setup("serve", [["serve", "--workers", str(workers)]],
                       f"lodestar serve --workers {workers}: {gms} + 1 background process (MCP consumer,"
                       f" {processor}, outbox relay)", workers),
        "split": Setup("split", [["gms", "--workers", str(workers)], ["mcl-processor"]],
                       f"lodestar gms --workers {workers}: {gms} + 1 background process (MCP consumer, outbox"
                       f" relay); lodestar mcl-processor: {processor}", workers),
    }


@contextmanager
def running(setup: Setup, data_dir: Path, env: dict[str, str]
            ) -> Iterator[tuple[str, Callable[[], dict[str, float]]]]:
    """The setup's processes on a free port, each started once the one before is ready (GMS
    answers /health; the MCL processor says it runs): the first makes the names (keyspace,
    tables, topics, indices) that commands started at once would race for (docs/operations.md).
    Yields GMS's URL, and a function giving the CPU seconds each process (with its children) has
    used so far, by command."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    procs: list[subprocess.Popen[str]] = []
    logs = data_dir.parent / "process-logs"
    logs.mkdir(exist_ok=True)
    outputs = [logs / f"{number}-{command[0]}.log" for number, command in enumerate(setup.commands)]
    client = RestClient(url)

    def ready(command: list[str], output: Path) -> bool:
        if command[0] in ("serve", "gms"):
            with suppress(LodestarError):
                return client.request("GET", "/health")[0] == 200
            return False
        return "MCL processor on" in output.read_text()

    try:
        for command, output in zip(setup.commands, outputs, strict=True):
            args = [*LODESTAR, *command, "--data-dir", str(data_dir)]
            if command[0] in ("serve", "gms"):
                args += ["--port", str(port), "--admin-token", TOKEN]
            procs.append(subprocess.Popen(args, env={**os.environ, **env}, stdout=output.open("w"),
                                          stderr=subprocess.STDOUT, text=True))
            deadline = time.monotonic() + WAIT
            while not ready(command, output):
                for proc, log in zip(procs, outputs, strict=False):
                    if proc.poll() is not None:
                        raise RuntimeError(f"{proc.args} exited {proc.returncode}: {log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"lodestar {command[0]} not ready within {WAIT:g} s")
                time.sleep(0.1)
        watched = {command[0]: psutil.Process(proc.pid) for command, proc in zip(setup.commands, procs, strict=True)}
        yield url, lambda: {command: tree_cpu(process) for command, process in watched.items()}
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ingest(url: str, mcps: Sequence[dict[str, Any]], connections: int) -> tuple[float, float]:
    """(seconds until every MCP was accepted, seconds until everything was searchable)"""
    bodies = [json.dumps({"proposals": list(mcps[i:i + BATCH])}).encode() for i in range(0, len(mcps), BATCH)]
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    client = RestClient(url, TOKEN)

    def share(worker: int) -> None:
        conn = RestClient(url, TOKEN)._connection()  # a connection of its own
        for body in bodies[worker::connections]:
            conn.request("POST", "/v1/proposals", body, headers)
            response = conn.getresponse()
            answer = json.loads(response.read())
            if response.status != 200 or any(r["status"] != "applied" for r in answer["results"]):
                raise RuntimeError(f"POST /v1/proposals: {response.status} {str(answer)[:500]}")
        conn.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(share, range(connections)))
    accepted = time.perf_counter() - start
    while not indexed(client):
        pass  # each call waits up to 30 s for the processor to catch up
    return accepted, time.perf_counter() - start


def indexed(client: RestClient) -> bool:
    """Whether everything written is searchable, waiting up to 30 s for it; a 503 (a backend
    that did not answer, e.g. a Kafka group coordinator still loading on a fresh cluster) is
    asked again after its Retry-After (2 s), as the API says, for up to WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        status, answer = client.request("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
        if status == 200:
            return bool(answer["indexed"])
        if status != 503 or time.monotonic() > deadline:
            raise RuntimeError(f"waitForIndex: {status} {str(answer)[:500]}")
        time.sleep(2)


@dataclass
class LodestarRun:
    setup: Setup
    wire_format: str
    names: Names
    accepted: float
    elapsed: float
    cpu: dict[str, float]  # CPU seconds during the run: each Lodestar command's processes, each server's


def lodestar_run(setup: Setup, wire_format: str, mcps: Sequence[dict[str, Any]], endpoints: Endpoints, names: Names,
                 workdir: Path, servers: Servers, replication: int = 1) -> LodestarRun:
    data_dir = workdir / names.run / "data"
    data_dir.mkdir(parents=True)
    # The keyspace's tables are made beforehand, as docs/operations.md advises when several
    # commands start at once on new names (the split setup starts gms and mcl-processor together).
    cluster = cassandra_session(endpoints)
    try:
        ensure_schema(cluster.connect(), names.run, replication_factor=replication)
    finally:
        cluster.shutdown()
    try:
        with running(setup, data_dir, names.env(endpoints, wire_format, replication)) as (url, lodestar_cpu):
            before, started = servers.cpu(), lodestar_cpu()
            accepted, elapsed = ingest(url, mcps, setup.connections)
            cpu = {**{command: spent - started[command] for command, spent in lodestar_cpu().items()},
                   **servers.since(before)}
    except BaseException:
        for log in sorted((workdir / names.run).glob("*-logs/*.log")):
            print(f"--- {log.name}:\n{log.read_text()[-3000:]}", file=sys.stderr)
        raise
    return LodestarRun(setup, wire_format, names, accepted, elapsed, cpu)


class Servers:
    """The servers' processes, every node of each, found by their listening addresses (see the
    module docstring); their CPU read from /proc/<pid>/stat."""

    def __init__(self, endpoints: Endpoints):
        hosts, cassandra_port = endpoints.cassandra_contact_points()
        kafka = [urlsplit(f"//{address}") for address in endpoints.kafka_bootstrap.split(",")]
        opensearch = [urlsplit(url) for url in endpoints.opensearch_nodes]
        addresses = {"kafka": [(a.hostname or "", a.port or 9092) for a in kafka],
                     "cassandra": [(host, cassandra_port) for host in hosts],
                     "opensearch": [(a.hostname or "", a.port or 9200) for a in opensearch]}
        listening = {(c.laddr.ip.removeprefix("::ffff:"), c.laddr.port): c.pid  # (a JVM's IPv4 on an IPv6 socket)
                     for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN and c.pid is not None}
        self.nodes: dict[str, psutil.Process] = {}  # `engine@address:port` -> its process
        for engine, nodes in addresses.items():
            for host, port in nodes:
                ip = socket.gethostbyname(host)
                found = [listening[a] for a in ((ip, port), ("0.0.0.0", port), ("::", port)) if a in listening]
                if found:
                    self.nodes[f"{engine}@{ip}:{port}"] = psutil.Process(found[0])

    def node_cpu(self) -> dict[str, float]:
        """CPU seconds of each node so far, by `engine@address:port`."""
        return {node: sum(process.cpu_times()[:2]) for node, process in self.nodes.items()}

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each server (all its nodes) so far."""
        totals: dict[str, float] = {}
        for node, seconds in self.node_cpu().items():
            engine = node.split("@")[0]
            totals[engine] = totals.get(engine, 0.0) + seconds
        return totals

    def since(self, before: dict[str, float]) -> dict[str, float]:
        now = self.cpu()
        return {name: now[name] - before[name] for name in before}

    def spent_by(self, engine: str, work: Callable[[], T]) -> tuple[T, float]:
        """What `work` returns, and the CPU seconds `engine`'s nodes spent meanwhile."""
        before = self.cpu()
        result = work()
        return result, self.since(before)[engine]


# -- what Lodestar wrote, read back for the raw runs ----------------------------------------


def written_mcls(endpoints: Endpoints, names: Names) -> list[tuple[bytes, bytes]]:
    """(key, value) of every versioned MCL the run published."""
    topic = names.kafka_prefix + topics.MCL_VERSIONED
    consumer = Consumer({"bootstrap.servers": endpoints.kafka_bootstrap, "group.id": f"{names.run}-reader",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        found: list[tuple[bytes, bytes]] = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            while True:
                message = consumer.poll(30)
                if message is None:
                    raise RuntimeError(f"reading {topic}[{partition}] timed out")
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        break
                    raise RuntimeError(str(message.error()))
                found.append((message.key(), message.value()))
        return found
    finally:
        consumer.close()


def written_rows(session: Session, names: Names) -> list[tuple[Any, ...]]:
    """(urn, kind, name, seq, value, system_metadata) of every version the run stored."""
    rows = session.execute(f'SELECT urn, kind, name, seq, value, system_metadata FROM "{names.run}".aspects')
    return [tuple(row) for row in rows if row[1] == "aspect"]


def written_documents(client: OpenSearch, names: Names) -> tuple[str, dict[str, Any], list[tuple[str, Any]]]:
    """(index, its settings and mappings, [(id, source)]) of the run's dataset search documents."""
    index = f"{names.run}_search_dataset"
    described = client.indices.get(index=index)[index]
    settings = {key: value for key, value in described["settings"]["index"].items()
                if key not in ("uuid", "creation_date", "provided_name", "version")}
    docs: list[tuple[str, Any]] = []
    after: list[Any] | None = None
    while True:
        body: dict[str, Any] = {"size": 2000, "sort": [{"_id": "asc"}], "query": {"match_all": {}}}
        if after is not None:
            body["search_after"] = after
        hits = client.search(index=index, body=body)["hits"]["hits"]
        if not hits:
            return index, {"settings": {"index": settings}, "mappings": described["mappings"]}, docs
        docs.extend((hit["_id"], hit["_source"]) for hit in hits)
        after = hits[-1]["sort"]


# -- the raw limits -------------------------------------------------------------------------


def copies(items: Sequence[Any], minimum: int) -> int:
    """How many copies of the run's writes make a raw run of at least `minimum` writes (so that
    each raw figure is a steady rate, not a start-up time)."""
    return max(1, -(-minimum // max(1, len(items))))


def raw_kafka(endpoints: Endpoints, names: Names, messages: Sequence[tuple[bytes, bytes]]) -> float:
    """Seconds to produce the messages (idempotent, acks=all, linger 5 ms: the adapter's producer
    settings) while a consumer of a group reads them all back."""
    topic = f"{names.kafka_prefix}raw"
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, -1)], operation_timeout=30)[topic].result()
    consumer = Consumer({"bootstrap.servers": endpoints.kafka_bootstrap, "group.id": f"{names.kafka_prefix}raw",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})
    done = threading.Event()
    seen = 0

    def consume() -> None:
        nonlocal seen
        while seen < len(messages):
            batch = consumer.consume(10_000, 1.0)
            seen += sum(1 for message in batch if message.error() is None)
        done.set()

    try:
        start = time.perf_counter()
        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        for key, value in messages:
            while True:
                try:
                    producer.produce(topic, value=value, key=key,
                                     partition=partition_for(key.decode(), PARTITIONS))
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if producer.flush(WAIT):
            raise RuntimeError("raw Kafka: messages not acknowledged")
        if not done.wait(WAIT):
            raise RuntimeError(f"raw Kafka: read back {seen} of {len(messages)}")
        elapsed = time.perf_counter() - start
        consumer.commit(asynchronous=False)
        return elapsed
    finally:
        consumer.close()


def raw_cassandra(session: Session, names: Names, rows: Sequence[tuple[Any, ...]], per_entity: bool = False
                  ) -> float:
    """Seconds for the rows as conditional inserts into a table of the aspect store's shape: one
    each, or (`per_entity`) one conditional batch of each entity's rows."""
    ks = f'"{names.run}"'
    table = "raw_entities" if per_entity else "raw_aspects"
    session.execute(f"""CREATE TABLE IF NOT EXISTS {ks}.{table} (
        urn text, kind text, name text, seq bigint, value text, system_metadata text,
        topic text, msg_key text, payload blob, PRIMARY KEY ((urn), kind, name, seq)
    ) WITH CLUSTERING ORDER BY (kind ASC, name ASC, seq DESC)""", timeout=120)
    insert = session.prepare(f"INSERT INTO {ks}.{table} (urn, kind, name, seq, value, system_metadata)"
                             " VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS")
    insert.consistency_level, insert.serial_consistency_level = QUORUM, SERIAL
    start = time.perf_counter()
    if per_entity:
        statements = []
        for _, entity in groupby(rows, key=lambda row: row[0]):
            batch = BatchStatement(BatchType.UNLOGGED, consistency_level=QUORUM, serial_consistency_level=SERIAL)
            for row in entity:
                batch.add(insert, row)
            statements.append((batch, ()))
        results = execute_concurrent(session, statements, concurrency=CASSANDRA_CONCURRENCY)
    else:
        results = execute_concurrent_with_args(session, insert, rows, concurrency=CASSANDRA_CONCURRENCY)
    elapsed = time.perf_counter() - start
    failed = [result for ok, result in results if not ok or not result.was_applied]
    if failed:
        raise RuntimeError(f"raw Cassandra: {len(failed)} inserts failed, e.g. {failed[0]}")
    return elapsed


def raw_opensearch(client: OpenSearch, names: Names, body: dict[str, Any], docs: Sequence[tuple[str, Any]]
                   ) -> float:
    """Seconds to bulk-index the documents (BULK_DOCS a request) into a fresh index of the same
    settings and mappings, and refresh it."""
    index = f"{names.run}_raw_search_dataset"
    client.indices.create(index=index, body=body)
    start = time.perf_counter()
    for first in range(0, len(docs), BULK_DOCS):
        lines: list[bytes] = []
        for doc_id, source in docs[first:first + BULK_DOCS]:
            lines.append(orjson.dumps({"index": {"_index": index, "_id": doc_id}}))
            lines.append(orjson.dumps(source))
        response = client.bulk(body=b"\n".join(lines) + b"\n")
        if response["errors"]:
            raise RuntimeError(f"raw OpenSearch: bulk errors, e.g. {response['items'][0]}")
    client.indices.refresh(index=index)
    elapsed = time.perf_counter() - start
    if client.count(index=index)["count"] != len(docs):
        raise RuntimeError("raw OpenSearch: documents missing after refresh")
    return elapsed


# -- the report -----------------------------------------------------------------------------


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:9,.0f}"


def per_thousand(cpu: dict[str, float], mcps: int) -> str:
    """CPU seconds per 1,000 MCPs, by process."""
    return ", ".join(f"{name} {1000 * seconds / mcps:.2f}" for name, seconds in cpu.items())


def measure_round(label: str, mcps: Sequence[dict[str, Any]], chosen: Sequence[Setup], formats: Sequence[str],
                  endpoints: Endpoints, workdir: Path, cleanup: ExitStack, servers: Servers) -> dict[str, float]:
    """One round: each setup in each wire format, then each raw backend; returns Lodestar's
    best over the slowest raw backend, by wire format, and (key FAIR) over the raw client that
    batches each entity's rows."""
    runs: list[LodestarRun] = []
    for setup in chosen:
        for wire_format in formats:
            names = Names()
            cleanup.callback(drop_everything, endpoints, names)
            run = lodestar_run(setup, wire_format, mcps, endpoints, names, workdir / label, servers)
            base = next(r for r in runs + [run] if r.setup is setup)
            versus = "" if run is base else f"; {run.elapsed / base.elapsed - 1:+.1%} time vs {base.wire_format}"
            runs.append(run)
            print(f"{label} lodestar {setup.name:<5} {wire_format:<9} end-to-end {len(mcps):>7} MCPs"
                  f"  {run.elapsed:7.1f} s  {rate(len(mcps), run.elapsed)} MCP/s   (all accepted after"
                  f" {run.accepted:.1f} s{versus}; CPU s per 1,000 MCPs: {per_thousand(run.cpu, len(mcps))})",
                  flush=True)
    best = min(runs, key=lambda r: r.elapsed)
    source = runs[0].names
    cluster = cassandra_session(endpoints)
    cleanup.callback(cluster.shutdown)
    session = cluster.connect()
    opensearch = OpenSearch(endpoints.opensearch_url, timeout=120)
    cleanup.callback(opensearch.close)
    messages = written_mcls(endpoints, source)
    rows = written_rows(session, source)
    _, body, docs = written_documents(opensearch, source)
    figures: dict[str, float] = {}
    needed: dict[str, float] = {}  # each server's CPU seconds per MCP for the raw writes Lodestar must make

    n = copies(messages, RAW_MINIMUM["kafka"])
    sent = [(key + b"#%d" % copy, value) for copy in range(n) for key, value in messages]
    seconds, spent = servers.spent_by("kafka", lambda: raw_kafka(endpoints, source, sent))
    needed["kafka"] = spent / (n * len(mcps))
    figures["kafka"] = n * len(mcps) / seconds
    mean = sum(len(v) for _, v in messages) / max(1, len(messages))
    print(f"{label} raw kafka      produce+consume      {len(sent):>7} msgs  {seconds:7.1f} s"
          f"  {rate(len(sent), seconds)} msg/s  = {figures['kafka']:9,.0f} MCP/s"
          f"   (the run's {len(messages)} MCLs x {n}, {mean:,.0f} B on average; idempotent, acks=all,"
          f" linger 5 ms, {PARTITIONS} partitions; a consumer reading them back meanwhile;"
          f" CPU s per 1,000 MCPs: kafka {1000 * needed['kafka']:.2f})", flush=True)

    n = copies(rows, RAW_MINIMUM["cassandra"])
    inserted = [(f"{row[0]}#{copy}", *row[1:]) for copy in range(n) for row in rows]
    seconds, spent = servers.spent_by("cassandra", lambda: raw_cassandra(session, source, inserted))
    cpu = {"cassandra": spent}
    figures["cassandra"] = n * len(mcps) / seconds
    print(f"{label} raw cassandra  INSERT IF NOT EXISTS {len(inserted):>7} rows  {seconds:7.1f} s"
          f"  {rate(len(inserted), seconds)} row/s  = {figures['cassandra']:9,.0f} MCP/s"
          f"   (the run's {len(rows)} versions x {n}; execute_concurrent, {CASSANDRA_CONCURRENCY} in flight,"
          f" QUORUM/SERIAL; CPU s per 1,000 MCPs: {per_thousand(cpu, n * len(mcps))})", flush=True)
    inserted.sort(key=lambda row: row[0])
    seconds, spent = servers.spent_by("cassandra", lambda: raw_cassandra(session, source, inserted, per_entity=True))
    needed["cassandra"] = spent / (n * len(mcps))
    grouped = n * len(mcps) / seconds
    fair = 100 * len(mcps) / best.elapsed / grouped
    print(f"{label} raw cassandra  per entity, batched  {len(inserted):>7} rows  {seconds:7.1f} s"
          f"  {rate(len(inserted), seconds)} row/s  = {grouped:9,.0f} MCP/s   (the same rows, one conditional batch"
          f" of each entity's, as Lodestar writes them: the fair baseline; CPU s per 1,000 MCPs: cassandra"
          f" {1000 * needed['cassandra']:.2f}; lodestar / this = {fair:.1f}% (target >= {FAIR_TARGET}%))", flush=True)

    n = copies(docs, RAW_MINIMUM["opensearch"])
    indexed = [(f"{doc_id}#{copy}", doc) for copy in range(n) for doc_id, doc in docs]
    seconds, spent = servers.spent_by("opensearch", lambda: raw_opensearch(opensearch, source, body, indexed))
    needed["opensearch"] = spent / (n * len(mcps))
    figures["opensearch"] = n * len(mcps) / seconds
    print(f"{label} raw opensearch bulk + refresh       {len(indexed):>7} docs  {seconds:7.1f} s"
          f"  {rate(len(indexed), seconds)} doc/s  = {figures['opensearch']:9,.0f} MCP/s"
          f"   (the run's {len(docs)} search documents x {n}; {BULK_DOCS} a request, then one refresh;"
          f" CPU s per 1,000 MCPs: opensearch {1000 * needed['opensearch']:.2f})", flush=True)

    for backend, limit in figures.items():
        print(f"{label} ratio      lodestar / raw {backend:<10} = {100 * len(mcps) / best.elapsed / limit:5.1f}%")
    in_series = 1 / (1 / figures["kafka"] + 1 / grouped + 1 / figures["opensearch"])
    by_cpu = (os.cpu_count() or 1) / sum(needed.values())
    print(f"{label} bound      raw backends in series = {in_series:,.0f} MCP/s = {100 * in_series / grouped:.1f}%"
          f" of the fair baseline; the servers' CPU for those writes ({1000 * sum(needed.values()):.2f} s per 1,000"
          f" MCPs) fills the {os.cpu_count()} cores at {by_cpu:,.0f} MCP/s = {100 * by_cpu / grouped:.1f}%"
          "   (each MCP's Kafka, batched Cassandra and OpenSearch writes, raw: the end-to-end rate if Lodestar's"
          " own processes took no CPU)", flush=True)
    slowest = min(figures, key=figures.__getitem__)
    ratios: dict[str, float] = {}
    for wire_format in formats:
        fastest = min((r for r in runs if r.wire_format == wire_format), key=lambda r: r.elapsed)
        lodestar = len(mcps) / fastest.elapsed
        ratios[wire_format] = 100 * lodestar / figures[slowest]
        print(f"{label} lodestar ({wire_format}) / slowest raw backend = {ratios[wire_format]:.1f}% (target >= 70%)"
              f"   (lodestar: {lodestar:,.0f} MCP/s, setup {fastest.setup.name};"
              f" slowest raw backend: {slowest}, {figures[slowest]:,.0f} MCP/s)", flush=True)
    return {**ratios, FAIR: fair}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=2500)
    parser.add_argument("--workers", type=int, default=2, help="GMS request workers (and client connections)")
    parser.add_argument("--setups", default="serve,split", help="comma-separated: serve, split")
    parser.add_argument("--wire-formats", default=",".join(WIRE_FORMATS),
                        help="comma-separated MCL wire formats, each setup run in each (the first is the base)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds, each with its own raw runs")
    parser.add_argument("--warmup-datasets", type=int, default=500,
                        help="datasets of the warm-up round, printed but not counted (0: none)")
    args = parser.parse_args()
    formats = args.wire_formats.split(",")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the cleanup below runs
    endpoints = Endpoints.from_env()
    mcps = generate(args.datasets * 4)
    chosen = [setups(args.workers)[name] for name in args.setups.split(",")]
    servers = Servers(endpoints)
    print(f"real stack: Kafka {endpoints.kafka_bootstrap}, Cassandra {','.join(endpoints.cassandra_hosts)},"
          f" OpenSearch {endpoints.opensearch_url} (shared servers); {os.cpu_count()} CPUs for the servers,"
          f" Lodestar and this client; load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"workload: {len(mcps)} MCPs = {args.datasets} datasets x (datasetProperties, schemaMetadata of 20"
          f" fields, globalTags, upstreamLineage), POST /v1/proposals in batches of {BATCH} over"
          f" {args.workers} connections, timed until waitForIndex says all is searchable", flush=True)
    for setup in chosen:
        print(f"setup {setup.name}: {setup.description}", flush=True)
    rounds = [("warm-up", generate(args.warmup_datasets * 4))] if args.warmup_datasets else []
    rounds += [(f"round {n}", mcps) for n in range(1, args.rounds + 1)]
    ratios: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, workload in rounds:
            with ExitStack() as cleanup:  # each round's names are dropped before the next round
                ratios[label] = measure_round(label, workload, chosen, formats, endpoints, Path(tmp), cleanup,
                                              servers)
            print(f"{label} done; load average {os.getloadavg()[0]:.1f}", flush=True)
    for wire_format in formats:
        figures = "   ".join(f"{label}: {by_format[wire_format]:.1f}%" for label, by_format in ratios.items())
        print(f"lodestar ({wire_format}) / slowest raw backend by round: {figures} (target >= 70% in each round)")
    figures = "   ".join(f"{label}: {by_format[FAIR]:.1f}%" for label, by_format in ratios.items())
    print(f"lodestar / raw cassandra per entity, batched, by round: {figures} (target >= {FAIR_TARGET}% in each round)")


if __name__ == "__main__":
    main()
