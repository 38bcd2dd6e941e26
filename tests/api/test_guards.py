"""Guards on every route (backpressure, readiness) and observability (/metrics, trace ids, JSON logs),
on a live embedded server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from aiohttp import hdrs
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.parser import text_string_to_metric_families

from gms import tracing
from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.eventlog import LogMessage
from ingest.eventlog.sqlite import SqliteEventLog
from lodestar.api import context
from lodestar.api.app import create_app
from lodestar.api.auth import ADMIN, TokenAuth
from lodestar.api.context import Api
from lodestar.api.guards import AWAIT_AFTER, GUARDS_KEY, RETRY_AFTER_LIMIT, Backpressure, Guards, LagSampler
from lodestar.metrics import ProcessFilesCollector
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import GROUP, MclProcessor
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import ServeProcess
from tests.support.server import TOKEN, ServerThread, free_port, start_server
from tests.support.waiting import await_

AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Lagging:
    """A live server whose MCL processor runs only when asked: writes make it lag."""

    def __init__(self, data: Path, limits: Backpressure, yielding_niceness: int = 0):
        self.gms = Gms.embedded(data)
        self.read_models = SqliteReadModels.in_data_dir(data, self.gms.registry)
        self.processor = MclProcessor(self.gms.registry, self.gms.codec, self.read_models)
        auth = TokenAuth()
        auth.add(TOKEN, ADMIN)
        app = create_app(self.gms, auth, self.read_models, self.processor, yielding_niceness)
        self.guards = app[GUARDS_KEY] = Guards(self.gms.log, limits)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = ServerThread(app, self.port)
        self.thread.start()
        assert self.thread.ready.wait(10)

    def post(self, *mcps: dict, **headers: str) -> requests.Response:
        return requests.post(f"{self.url}/v1/proposals", json={"proposals": list(mcps)}, headers={**AUTH, **headers},
                             timeout=30)

    def catch_up(self) -> None:
        """Run the MCL processor until it has indexed everything."""
        stop = threading.Event()
        worker = threading.Thread(target=self.processor.run, args=(self.gms.log, stop, 0.05, 10_000, 0))
        worker.start()
        assert self.processor.wait_until_caught_up(self.gms.log, 30)
        stop.set()
        worker.join(10)

    def close(self) -> None:
        self.thread.stop()
        self.read_models.close()
        self.gms.close()


@pytest.fixture
def lagging(tmp_path: Path) -> Iterator[Lagging]:
    server = Lagging(tmp_path / "data", Backpressure(max_mcl_lag=20, max_inflight_bytes=4096, sample_every=0.0))
    yield server
    server.close()


def refused(send) -> requests.Response:
    """send()'s first 429 response (a Response is falsy when not ok, so it is wrapped)."""
    return await_(lambda: [r for r in [send()] if r.status_code == 429], "a 429")[0]


def test_writes_get_429_with_retry_after_while_the_mcl_processor_lags_and_pass_again_once_it_caught_up(lagging):
    for i in range(10):  # 20 MCLs (key aspect + properties): at the limit
        assert lagging.post(mcp(dataset_urn(f"lag.t{i}"), "datasetProperties", properties("x"))).status_code == 200
    sent = []

    def write() -> requests.Response:  # each accepted write adds 2 MCLs; the lag is sampled as writes come
        sent.append(dataset_urn(f"lag.n{len(sent)}"))
        return lagging.post(mcp(sent[-1], "datasetProperties", properties("late")))

    response = refused(write)
    assert len(sent) <= 3  # the sample that saw the limit crossed is at most one write old
    body = response.json()
    assert body["error"] == "overloaded" and body["lag"] > 20
    assert 1 <= int(response.headers["Retry-After"]) <= RETRY_AFTER_LIMIT
    assert requests.get(f"{lagging.url}/v1/entities/{sent[-1]}", headers=AUTH).status_code == 404
    assert requests.get(f"{lagging.url}/v1/search?query=*", headers=AUTH).status_code == 200  # reads still served
    search = '{ searchAcrossEntities(input: {query: "*", start: 0, count: 1}) { total } }'
    graphql = requests.post(f"{lagging.url}/api/graphql", headers=AUTH, json={"query": search})  # a read by POST
    assert graphql.status_code == 200 and "errors" not in graphql.json(), graphql.text
    restli = requests.post(f"{lagging.url}/entities?action=search", headers=AUTH,
                           json={"input": "*", "entity": "dataset", "start": 0, "count": 1})
    assert restli.status_code == 200, restli.text
    ready = requests.get(f"{lagging.url}/health/ready").json()
    assert (ready["status"], ready["mclLag"]) == ("ready", 2 * (10 + len(sent) - 1))

    lagging.catch_up()
    await_(lambda: lagging.post(mcp(sent[-1], "datasetProperties", properties("late"))).status_code == 200,
           "writes accepted after catching up")


def test_past_half_the_lag_limit_writes_run_on_the_writer_thread_of_lower_cpu_priority(tmp_path):
    server = Lagging(tmp_path / "data", Backpressure(max_mcl_lag=20, max_inflight_bytes=4096, sample_every=0.0),
                     yielding_niceness=4)

    def writer_threads() -> dict[str, int]:
        return {thread.name.rpartition("_")[0]: int(Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
                                                    .rpartition(")")[2].split()[16])
                for thread in threading.enumerate() if thread.name.startswith("gms-writer")}
    try:
        base = os.getpriority(os.PRIO_PROCESS, 0)
        assert server.post(mcp(dataset_urn("lag.t0"), "datasetProperties", properties("x"))).status_code == 200
        assert writer_threads() == {"gms-writer": base}  # no lag: the writes go first
        sent = []

        def lagging_write() -> dict[str, int] | None:  # each write adds 2 MCLs; past 10 they yield
            sent.append(dataset_urn(f"lag.t{len(sent) + 1}"))
            assert server.post(mcp(sent[-1], "datasetProperties", properties("x"))).status_code == 200
            return threads if len(threads := writer_threads()) == 2 else None
        assert await_(lagging_write, "a write on the yielding thread") == {
            "gms-writer": base, "gms-writer-yielding": min(base + 4, 19)}
        assert 5 <= len(sent) <= 7  # from the first sample past half the limit (at most a write or two old)
        assert requests.get(f"{server.url}/v1/entities/{sent[-1]}", headers=AUTH).status_code == 200
    finally:
        server.close()


def test_retry_after_is_the_time_the_processor_needs_at_its_best_recent_rate_to_get_back_under_the_limit(tmp_path):
    log = SqliteEventLog(tmp_path / "log.db")
    log.append(topics.MCL_VERSIONED, [LogMessage(f"k{i}", b"mcl") for i in range(400)])
    now = [0.0]
    sampler = LagSampler(log, every=0.5, clock=lambda: now[0])

    def sample(at: float, committed: int) -> None:
        now[0] = at
        log.commit(GROUP, {(topics.MCL_VERSIONED, 0): committed})
        asyncio.run(sampler.fresh(5))

    sample(0.0, 0)
    assert sampler.lag == 400 and sampler.retry_after(200) == 5  # no rate known yet
    sample(1.0, 0)
    sample(2.0, 0)
    sample(4.0, 100)  # one batch of 100 committed in the 4 s since the last commit seen: 25 records/s
    assert sampler.index_rate == 25 and sampler.lag == 300
    assert sampler.retry_after(200) == 6  # (300 - 150) / 25: back to three quarters of the limit
    assert sampler.retry_after(0) == RETRY_AFTER_LIMIT == 10  # 300 / 25 = 12 s: at most the limit
    sample(5.0, 280)  # 180 records/s
    assert sampler.lag == 120 and sampler.retry_after(100) == 1  # never less than a second
    sample(6.0, 280)
    assert sampler.index_rate == 180  # no commit since: the rate stands
    sample(125.0, 290)  # slower: the best rate is forgotten, halving every minute
    assert sampler.index_rate == pytest.approx(45)
    assert sampler.retry_after(40) == 2  # (110 - 30) / 45
    log.close()


class StuckLog(SqliteEventLog):
    """A log that cannot say where its partitions end until `release` is set (a broker that
    does not answer)."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.release = threading.Event()

    def end_offset(self, topic: str, partition: int) -> int:
        self.release.wait()
        return super().end_offset(topic, partition)


def test_a_lag_sample_older_than_two_seconds_is_awaited_but_not_for_longer(tmp_path):
    log = StuckLog(tmp_path / "log.db")
    log.release.set()
    log.append(topics.MCL_VERSIONED, [LogMessage(f"k{i}", b"mcl") for i in range(10)])
    now = [0.0]
    sampler = LagSampler(log, every=0.5, clock=lambda: now[0])

    async def current_twice() -> tuple[int, int]:  # one event loop, as a server's
        first = await sampler.current()
        log.commit(GROUP, {(topics.MCL_VERSIONED, 0): 10})
        now[0] = 1.0  # stale, but recent: a new sample starts and the last figure is used
        second = await sampler.current()
        return first, second

    assert asyncio.run(current_twice()) == (10, 10)
    now[0] = 3.5  # writers paused: the next write waits for a new sample
    assert asyncio.run(sampler.current()) == 0
    log.append(topics.MCL_VERSIONED, [LogMessage("k", b"mcl")])
    log.release.clear()
    now[0] = 7.0

    async def timed_then_release() -> tuple[int, float]:
        started = time.monotonic()
        lag = await sampler.current()  # the log does not answer: this returns without the sample
        took = time.monotonic() - started
        log.release.set()  # (the event loop's end waits for the sample's thread)
        return lag, took

    watchdog = threading.Timer(30, log.release.set)  # a sampler that waits for the log fails, not hangs
    watchdog.start()
    try:
        lag, took = asyncio.run(timed_then_release())
    finally:
        watchdog.cancel()
        log.release.set()
    assert lag == 0  # the last figure stands; the sample would have said 1
    assert took >= AWAIT_AFTER - 0.05  # it was awaited (a loop's timer may fire a clock tick early)
    assert asyncio.run(sampler.fresh(timeout=60)) == 1  # the log answers again: the new record counts
    log.close()


def test_wait_for_index_answers_not_indexed_when_the_log_cannot_say_where_it_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(context, "OFFSETS_GRACE_S", 0.1)
    log = StuckLog(tmp_path / "log.db")
    gms = Gms(SqliteAspectStore(tmp_path / "store.db"), log)
    read_models = SqliteReadModels.in_data_dir(tmp_path, gms.registry)
    api = Api(gms, TokenAuth(), read_models)

    async def answer_then_release() -> bool:
        answer = await api.wait_for_index(timeout=0.1)
        log.release.set()  # (the event loop's end waits for the check's thread)
        return answer

    try:
        assert asyncio.run(answer_then_release()) is False  # not a request hanging as long as the log
    finally:
        log.release.set()
        api.writers.shutdown()
        read_models.close()
        gms.close()


def test_writes_beyond_the_in_flight_byte_budget_get_429_and_nothing_of_them_is_applied(lagging):
    body = json.dumps({"proposals": [mcp(dataset_urn("slow.upload"), "datasetProperties",
                                         properties("s" * 3000))]}).encode()
    with socket.create_connection(("127.0.0.1", lagging.port)) as slow:  # a body that takes its time to arrive
        slow.sendall(f"POST /v1/proposals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:100])
        await_(lambda: lagging.guards.inflight_bytes == len(body), "the slow request in flight")
        response = lagging.post(mcp(dataset_urn("over.budget"), "datasetProperties", properties("b" * 2000)))
        assert response.status_code == 429
        assert response.json()["error"] == "overloaded" and response.headers["Retry-After"] == "1"
        slow.sendall(body[100:])
        assert b" 200 OK" in slow.recv(65536).split(b"\r\n")[0]
    assert requests.get(f"{lagging.url}/v1/entities/{dataset_urn('over.budget')}", headers=AUTH).status_code == 404
    assert lagging.post(mcp(dataset_urn("over.budget"), "datasetProperties", properties("b"))).status_code == 200


def test_readiness_names_each_backend(server):
    response = requests.get(f"{server.url}/health/ready")
    assert response.status_code == 200
    assert response.json()["backends"] == {"aspectStore": {"ok": True}, "eventLog": {"ok": True},
                                           "readModels": {"ok": True}}


def test_the_threads_of_a_server_end_with_it(tmp_path):
    """Those a request starts too: the event-log probe's thread and the event loop's executor."""
    before = set(threading.enumerate())
    gms = Gms.embedded(tmp_path)
    read_models = SqliteReadModels.in_data_dir(tmp_path, gms.registry)
    live, thread = start_server(gms, read_models)
    assert requests.get(f"{live.url}/health/ready").status_code == 200  # pings the log from a thread
    started = {t.name.rsplit("_", 1)[0] for t in set(threading.enumerate()) - before}
    assert {"log-ping", "asyncio"} <= started, started
    thread.stop()
    read_models.close()
    gms.close()
    await_(lambda: not set(threading.enumerate()) - before, "the server's threads ending")


def test_metrics_count_proposals_by_outcome_and_reason_and_expose_offsets_and_lag(server):
    urn = dataset_urn("metrics.t")
    server.client().propose([mcp(urn, "datasetProperties", properties("one"))])
    server.client().propose([mcp(urn, "datasetProperties", properties("two"), headers={"If-Version-Match": "7"})])
    server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    text = requests.get(f"{server.url}/metrics").text
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert float(samples['lodestar_proposals_total{outcome="applied",reason=""}']) >= 1
    assert float(samples['lodestar_proposals_total{outcome="failed",reason="precondition_failed"}']) >= 1
    mcl = 'topic="MetadataChangeLog_Versioned_v1"'
    ends = sum(float(v) for k, v in samples.items() if k.startswith("lodestar_log_end_offset{") and mcl in k)
    lags = [float(v) for k, v in samples.items()
            if k.startswith('lodestar_consumer_lag{group="mcl-processor"') and mcl in k]
    assert ends == 2 and lags and sum(lags) == 0  # the key aspect's and the properties' MCLs, all indexed
    assert float(samples['lodestar_index_batch_seconds_count{stage="write"}']) >= 1
    assert 'lodestar_http_responses_total{method="POST",status="412"}' in samples


def test_made_up_http_methods_are_counted_as_other_so_the_metrics_labels_stay_bounded(server):
    # methods beyond HTTP's own (aiohttp's pure-Python parser takes any token as a method)
    for method in ("PURGE", "PROPFIND", "MKCOL"):
        assert requests.request(method, f"{server.url}/health").status_code == 405
    samples = _samples(requests.get(f"{server.url}/metrics").text)
    # the counters are the process's: other tests' requests (DELETE, PUT, ...) are counted too
    assert {labels["method"] for labels, _ in samples["lodestar_http_responses_total"]} <= {*hdrs.METH_ALL, "other"}
    assert sum(value for labels, value in samples["lodestar_http_responses_total"]
               if labels == {"method": "other", "status": "405"}) >= 3


def test_metrics_show_the_memory_of_every_process_of_serve_with_workers(tmp_path):
    processes = ("w0", "w1", "background")

    def every_process_sampled() -> dict[str, list[tuple[dict[str, str], float]]] | None:
        samples = _samples(requests.get(f"{serve.url}/metrics").text)
        # both gauges: a process's sample sets one, then the other, and a scrape may come in between
        gauges = ("lodestar_process_resident_bytes", "lodestar_sqlite_heap_bytes")
        sampled = [{labels["process"] for labels, _ in samples.get(gauge, [])} for gauge in gauges]
        return samples if all(found >= set(processes) for found in sampled) else None

    with ServeProcess(tmp_path / "data", None, "--workers", "2") as serve:
        serve.client().propose([mcp(dataset_urn("memory.t"), "datasetProperties", properties("one"))])
        samples = await_(every_process_sampled, "each process's first memory sample")  # each samples as it starts
    resident = {(labels["process"], labels["kind"]): value
                for labels, value in samples["lodestar_process_resident_bytes"]}
    sqlite_heap = {labels["process"]: value for labels, value in samples["lodestar_sqlite_heap_bytes"]}
    for process in processes:
        total, anonymous, file = (resident[process, kind] for kind in ("total", "anonymous", "file"))
        assert total == anonymous + file and anonymous > 10 * 2**20, (process, total, anonymous, file)
        assert sqlite_heap[process] > 0  # every process opened the databases


def test_a_scrape_adds_up_the_processes_files_but_one_still_being_made(tmp_path):
    counted = MmapedDict(str(tmp_path / "counter_1.db"))  # a process's file, as prometheus_client writes it
    counted.write_value(mmap_key("lodestar_http_responses", "lodestar_http_responses_total", ["method", "status"],
                                 ["GET", "200"], "HTTP responses"), 3.0, 0.0)
    counted.close()
    (tmp_path / "counter_2.db").touch()  # another's, created and not sized yet (a worker starting)
    registry = CollectorRegistry()
    ProcessFilesCollector(registry, str(tmp_path))
    samples = _samples(generate_latest(registry).decode())
    assert samples["lodestar_http_responses_total"] == [({"method": "GET", "status": "200"}, 3.0)]


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Exposition text as (labels, value) per sample name."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def test_each_response_carries_a_trace_id_and_log_lines_are_json_with_it_and_the_urn(server, caplog):
    given = requests.get(f"{server.url}/health", headers={"X-Trace-Id": "caller-trace-1"})
    assert given.headers["X-Trace-Id"] == "caller-trace-1"
    made = requests.get(f"{server.url}/health", headers={"X-Trace-Id": "bad id\twith spaces"})
    assert made.headers["X-Trace-Id"] != "bad id\twith spaces" and len(made.headers["X-Trace-Id"]) == 32

    urn = dataset_urn("trace.t")
    with caplog.at_level(logging.INFO, logger="gms.service"):
        requests.post(f"{server.url}/v1/proposals", headers={**AUTH, "X-Trace-Id": "trace-412"}, json={
            "proposals": [mcp(urn, "datasetProperties", properties("x"), headers={"If-Version-Match": "3"})]})
    (record,) = [r for r in caplog.records if r.name == "gms.service"]
    line = json.loads(tracing.JsonFormatter().format(record))
    assert (line["urn"], line["aspect"], line["level"]) == (urn, "datasetProperties", "INFO")
    assert line["msg"].startswith("proposal failed: precondition_failed")
    assert line["trace_id"] == "trace-412"  # carried from the request into the writer thread


def test_graphql_bodies_count_against_the_in_flight_byte_budget(lagging):
    body = json.dumps({"query": "{ __typename }", "pad": "p" * 3000}).encode()
    with socket.create_connection(("127.0.0.1", lagging.port)) as slow:  # a query whose body takes its time
        slow.sendall(f"POST /api/graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:100])
        await_(lambda: lagging.guards.inflight_bytes == len(body), "the slow query in flight")
        response = requests.post(f"{lagging.url}/api/graphql", headers=AUTH, timeout=30,
                                 json={"query": "{ __typename }", "pad": "q" * 2000})
        assert response.status_code == 429 and response.json()["error"] == "overloaded"
        slow.sendall(body[100:])
        assert b" 200 OK" in slow.recv(65536).split(b"\r\n")[0]
    await_(lambda: lagging.guards.inflight_bytes == 0, "the slow query done")
    answer = requests.post(f"{lagging.url}/api/graphql", headers=AUTH, json={"query": "{ __typename }"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["data"] == {"__typename": "Query"}
