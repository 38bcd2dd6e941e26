"""Hostile input over REST, on a live embedded server with its MCL processor: the API fuzzed from its
own /openapi.json (schemathesis), property-based proposals (hypothesis), and hand-picked attacks
(URN injection, deep nesting, huge strings and arrays, unicode edge cases, query injection in
search, path traversal, oversized requests). Every answer is a 2xx or a clear 4xx, never a 5xx;
what is refused leaves nothing stored; afterwards the read models still equal the store."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gms.service import Gms, Limits
from ingest import topics
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.fuzz import fuzz
from tests.support.hostile import HOSTILE_TEXT
from tests.support.server import TOKEN, start_server

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMITS = Limits(max_aspect_bytes=64 * 1024, max_request_bytes=1024 * 1024, max_batch=100)


class Hostile:
    """A live server with limits small enough to reach, its MCL processor running."""

    def __init__(self, data: Path):
        self.gms = Gms.embedded(data, LIMITS)
        self.models = SqliteReadModels.in_data_dir(data, self.gms.registry)
        self.processor = MclProcessor(self.gms.registry, self.gms.codec, self.models)
        self.stop = threading.Event()
        self.indexing = threading.Thread(target=self.processor.run, args=(self.gms.log, self.stop, 0.05), daemon=True)
        self.indexing.start()
        self.live, self.thread = start_server(self.gms, self.models, self.processor)
        self.url = self.live.url

    def post(self, path: str, body: Any = None, raw: bytes | None = None, **headers: str) -> requests.Response:
        data = raw if raw is not None else json.dumps(body).encode()
        return requests.post(f"{self.url}{path}", data=data, timeout=60,
                             headers={**AUTH, "Content-Type": "application/json", **headers})

    def get(self, path: str) -> requests.Response:
        return requests.get(f"{self.url}{path}", headers=AUTH, timeout=60)

    def mcls(self) -> int:
        return self.gms.log.end_offset(topics.MCL_VERSIONED, 0)

    def consistent(self) -> bool:
        assert self.processor.wait_until_caught_up(self.gms.log, 60)
        return self.processor.check(self.gms.store).ok

    def close(self) -> None:
        self.thread.stop()
        self.stop.set()
        self.indexing.join(10)
        self.models.close()
        self.gms.close()


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Hostile]:
    server = Hostile(tmp_path / "data")
    yield server
    server.close()


def assert_refused_without_trace(hostile: Hostile, response: requests.Response, before: int, *statuses: int) -> None:
    assert response.status_code in statuses, response.text[:500]
    body = response.json()
    assert body.get("message") or body.get("results"), body
    assert hostile.mcls() == before, "a refused request stored something"


def test_fuzzing_every_operation_of_the_openapi_document_gives_no_5xx(hostile: Hostile):
    report = fuzz(hostile.url, TOKEN, examples=8, seed=0)  # the same cases each run (bench/ varies them)
    assert report.cases > 300 and report.statuses[401] < report.cases / 2  # most of them past authentication
    assert report.server_errors == 0 and not report.failures, "\n\n".join(report.failures[:5])
    assert hostile.consistent()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30)
hostile_text = st.sampled_from(HOSTILE_TEXT) | st.text(max_size=100)


@st.composite
def mangled_mcps(draw: st.DrawFn) -> Any:
    """A valid MCP with some of its fields replaced by hostile values, or any JSON at all."""
    if draw(st.booleans()):
        return draw(json_values)
    item = mcp(dataset_urn(draw(st.sampled_from(["fz.a", "fz.b"]))), "datasetProperties",
               properties(draw(hostile_text)))
    for name in draw(st.lists(st.sampled_from(["entityType", "entityUrn", "changeType", "aspectName", "aspect",
                                               "headers", "systemMetadata"]), max_size=3)):
        item[name] = draw(hostile_text | json_values)
    return item


@given(items=st.lists(mangled_mcps(), min_size=1, max_size=5), async_=st.booleans())
@settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_mangled_proposals_get_4xx_or_apply_and_nothing_half(hostile_server: Hostile, items: list[Any],
                                                             async_: bool):
    before = hostile_server.mcls()
    response = hostile_server.post("/v1/proposals", {"proposals": items, "async": async_})
    assert response.status_code in (200, 202, 207, 400, 412, 413), response.text[:500]
    body = response.json()
    if "results" not in body:  # refused as a whole (e.g. Infinity is not JSON)
        assert response.status_code == 400 and body["error"] and body["message"]
        assert hostile_server.mcls() == before
        return
    results = body["results"]
    assert len(results) == len(items)
    for result in results:
        assert result["status"] in ("applied", "noop", "dropped", "failed", "queued")
        if result["status"] == "failed":
            assert result["error"] and result["message"]
    if not any(r["status"] == "applied" for r in results):
        assert hostile_server.mcls() == before


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    """One server for every example of a property test (a fixture per example would be too slow)."""
    server = Hostile(tmp_path_factory.mktemp("hostile") / "data")
    yield server
    assert server.consistent()
    server.close()


@given(query=hostile_text, types=st.sampled_from(["", "dataset", "nonsense,dataset", "'"]),
       sort=st.sampled_from(["relevance", "name", "-urn", "'; --", ""]), scope=st.sampled_from(["", "user", "X"]))
@settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_search_and_autocomplete_with_injection_attempts_answer_200_or_400(hostile_server: Hostile, query: str,
                                                                            types: str, sort: str, scope: str):
    params = {"query": query, "types": types, "sort": sort, **({"scope": scope} if scope else {})}
    for path in ("/v1/search", "/v1/autocomplete"):
        response = hostile_server.get(f"{path}?{urlencode(params)}")
        assert response.status_code in (200, 400), (path, params, response.text[:300])
        if response.status_code == 400:
            assert response.json()["message"]


def test_search_injection_finds_only_what_matches(hostile: Hostile):
    secret, public = dataset_urn("inj.secret_table"), dataset_urn("inj.public_table")
    hostile.post("/v1/proposals", {"proposals": [mcp(secret, "datasetProperties", properties("hidden")),
                                                 mcp(public, "datasetProperties", properties("open"))],
                                   "waitForIndex": True})
    for query in ["open' OR 1=1 --", 'open" OR "hidden', "open) OR (hidden", "open; DROP TABLE search"]:
        response = hostile.get(f"/v1/search?{urlencode({'query': query})}")
        assert response.status_code in (200, 400)
        if response.status_code == 200:  # the words are searched for, not executed
            assert {hit["urn"] for hit in response.json()["results"]} <= {public, secret}
    assert hostile.get("/v1/search?query=hidden").json()["total"] == 1
    assert hostile.consistent()


@pytest.mark.parametrize("urn", [
    "urn:li:dataset:(urn:li:dataPlatform:hive,a,b,PROD)",  # one part too many
    "urn:li:dataset:(urn:li:dataPlatform:hive,a),PROD)",
    "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD",
    "urn:li:dataset:(urn:li:dataPlatform:hive,,PROD)",
    "urn:li:dataset:(urn:li:dataPlatform:hi'v\"e,a,PROD)",
    "urn:li:dataset:(urn:li:corpuser:admin,a,PROD)",  # a platform URN of the wrong type
    "urn:li:dataset:(urn:li:dataPlatform:hive,a) OR (1=1,PROD)",
    "urn:li:dataset:(urn:li:dataPlatform:hive,a\x00b,PROD)",
    "urn:li:dataset:(urn:li:dataPlatform:hive,../../etc/passwd,PROD)/../..",
    "urn:li:dataset:(urn:li:dataPlatform:hive,a,NOT_AN_ENV)",
])
def test_urn_injection_is_refused_or_stored_under_exactly_that_urn(hostile: Hostile, urn: str):
    before = hostile.mcls()
    response = hostile.post("/v1/proposals", {"proposals": [mcp(urn, "datasetProperties", properties("x"))]})
    if response.status_code == 200:  # a legal URN after all: stored under itself and nothing else
        stored = hostile.get(f"/v1/entities/{quote(urn, safe='')}").json()
        assert stored["urn"] == urn and hostile.mcls() == before + 2
    else:
        assert_refused_without_trace(hostile, response, before, 400)
        assert response.json()["results"][0]["error"] == "invalid_urn"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("case, status", [
    ("deep nesting in the body", 400),
    ("deep nesting in an aspect value", 400),
    ("a huge string", 413),
    ("a huge array", 413),
    ("a lone surrogate", 400),
    ("invalid UTF-8", 400),
    ("a batch over the limit", 413),
    ("a body over the limit", 413),
    ("not JSON", 400),
    ("a JSON scalar", 400),
])
def test_oversized_and_malformed_bodies_get_a_clear_4xx_and_store_nothing(hostile: Hostile, case: str, status: int):
    urn = dataset_urn("big.t")
    raw = {
        "deep nesting in the body": ('{"proposals": ' + nested(100_000) + "}").encode(),
        "deep nesting in an aspect value": json.dumps({"proposals": [mcp(urn, "datasetProperties")]}).encode()
        .replace(b'"aspectName"', b'"aspect": {"value": "' + nested(5000).encode() + b'"}, "aspectName"'),
        "a huge string": json.dumps({"proposals": [mcp(urn, "datasetProperties",
                                                       properties("x" * (LIMITS.max_aspect_bytes + 1)))]}).encode(),
        "a huge array": json.dumps({"proposals": [mcp(urn, "globalTags", {"tags": [
            {"tag": f"urn:li:tag:t{i}"} for i in range(5000)]})]}).encode(),
        "a lone surrogate": b'{"proposals": [{"entityUrn": "\\ud800"}]}',
        "invalid UTF-8": b'{"proposals": [{"entityUrn": "\xff\xfe"}]}',
        "a batch over the limit": json.dumps({"proposals": [mcp(urn, "status", {"removed": False})] * 101}).encode(),
        "a body over the limit": b'{"proposals": [], "pad": "' + b"x" * LIMITS.max_request_bytes + b'"}',
        "not JSON": b"proposals=1",
        "a JSON scalar": b"42",
    }[case]
    before = hostile.mcls()
    assert_refused_without_trace(hostile, hostile.post("/v1/proposals", raw=raw), before, status)
    assert_refused_without_trace(hostile, hostile.post("/aspects?action=ingestProposalBatch", raw=raw), before,
                                 status, 400)


@pytest.mark.parametrize("path", [
    "/v1/entities/..%2F..%2F..%2Fetc%2Fpasswd",
    "/v1/entities/%2e%2e%2f%2e%2e%2fetc%2fpasswd/aspects/datasetKey",
    "/v3/namespaces/default/datasets/..%2F..%2Fetc%2Fpasswd/metadata",
    "/v3/namespaces/..%2F..%2F/datasets/x/metadata/tags",
    "/v3/namespaces/default/apps/%2e%2e/metadata/properties",
    "/ui/..%2F..%2F..%2Fetc%2Fpasswd",
    "/ui/%2e%2e%2fpyproject.toml",
])
def test_path_traversal_reads_nothing_outside(hostile: Hostile, path: str):
    response = hostile.get(path)
    assert response.status_code in (400, 404), (path, response.status_code)
    assert "root:" not in response.text and "[project]" not in response.text


def test_request_line_and_header_size_limits_answer_4xx(hostile: Hostile):
    long_url = hostile.get("/v1/search?query=" + "a" * 20_000)
    assert long_url.status_code in (400, 414)
    many = requests.get(f"{hostile.url}/v1/search", headers={**AUTH, **{f"X-H{i}": "v" * 100 for i in range(500)}},
                        timeout=30)
    assert many.status_code in (400, 431)
    with socket.create_connection(("127.0.0.1", int(hostile.url.rsplit(":", 1)[1])), timeout=30) as raw:
        raw.sendall(b"POST /v1/proposals HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n"
                    b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n{")
        assert raw.recv(4096).split(b"\r\n")[0].split(b" ")[1] == b"413"  # at once, not after the body
