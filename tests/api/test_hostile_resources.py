"""Requests built to exhaust the server (CPU, memory, the write lock) or to crash a handler, on a
live embedded server: each is refused with a clear 4xx naming the limit, or answered as cheaply as
an honest request, and the server answers others meanwhile. The limits: docs/access-control.md."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from gms.service import Gms, Limits
from mcl_processor.embedded import SqliteReadModels
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn, mcp
from tests.support.server import TOKEN, LiveServer, start_server

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LONG = dataset_urn("db." + "x" * 3000)  # a regex with a few `%` before a missing character backtracks forever on it


def post(server: LiveServer, path: str, body: Any = None, token: str | None = TOKEN, raw: bytes | None = None,
         ) -> requests.Response:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return requests.post(server.url + path, data=raw if raw is not None else json.dumps(body), headers=headers,
                         timeout=120)


def propose(server: LiveServer, *mcps: dict[str, Any]) -> requests.Response:
    return post(server, "/v1/proposals", {"proposals": list(mcps)})


def while_answering(server: LiveServer, hostile: Callable[[], requests.Response]) -> requests.Response:
    """The hostile request's answer; /health answered while it was under way (or done)."""
    answers: list[requests.Response] = []
    thread = threading.Thread(target=lambda: answers.append(hostile()))
    thread.start()
    health = requests.get(server.url + "/health", timeout=120)
    thread.join(120)
    assert health.status_code == 200
    assert answers, "the hostile request got no answer"
    return answers[0]


def test_get_count_with_a_backtracking_urn_like_answers_like_sql_at_once(server: LiveServer):
    assert propose(server, *(mcp(urn, "status", {"removed": False}) for urn in (
        LONG, dataset_urn("db.orders"), dataset_urn("db.order_items"), dataset_urn("db.items", "kafka")))).ok

    def count(like: str, token: str = TOKEN) -> requests.Response:
        return post(server, "/aspects?action=getCount", {"aspect": "datasetKey", "urnLike": like}, token)

    hostile = while_answering(server, lambda: count("%%%%%%%%%%%%#"))
    assert hostile.status_code == 200 and hostile.json() == {"value": 0}
    assert count("%hive%").json() == {"value": 3}
    assert count("%db.order_%").json() == {"value": 2}
    assert count("%db.order_,%").json() == {"value": 1}
    assert count("%db.order__,%").json() == {"value": 0}
    assert count("urn:li:dataset:(urn:li:dataPlatform:kafka,db.items,PROD)").json() == {"value": 1}
    nobody = principal_with_grants(server, "nobody")
    assert count("%%%%%%%%%%%%#", nobody).json() == {"value": 0}
    assert count("%", nobody).json() == {"value": 0}
    too_long = count("%" * 1001)
    assert too_long.status_code == 400 and "urnLike: 1001 characters, over the limit of 1000" in too_long.text


def test_a_patch_copying_an_array_onto_itself_stops_at_the_size_limit(server: LiveServer):
    urn = dataset_urn("db.tagged")
    tags = {"tags": [{"tag": f"urn:li:tag:t{i}"} for i in range(20)]}
    assert propose(server, mcp(urn, "globalTags", tags)).ok
    doubling = [{"op": "copy", "from": "/tags", "path": "/tags/-"}] * 40  # 2^40 tags if nothing stops it
    answer = while_answering(server, lambda: propose(server, mcp(urn, "globalTags", doubling, "PATCH")))
    assert answer.status_code == 413, answer.text
    (result,) = answer.json()["results"]
    assert result["error"] == "too_large" and "over twice the aspect limit of 65536" in result["message"]
    assert "copy /tags/-" in result["message"]
    stored = requests.get(f"{server.url}/v1/entities/{quote(urn, safe='')}/aspects/globalTags", headers=AUTH,
                          timeout=30).json()
    assert stored["version"] == 1 and stored["value"] == tags  # nothing half-applied
    copied = propose(server, mcp(urn, "globalTags", [{"op": "copy", "from": "/tags/0", "path": "/tags/-"}], "PATCH"))
    assert copied.ok, copied.text  # a copy that fits is applied


def test_a_patch_of_too_many_ops_is_refused_naming_the_limit(server: LiveServer):
    urn = dataset_urn("db.ops")
    ops = [{"op": "test", "path": "/tags", "value": []}] * 10_001
    answer = propose(server, mcp(urn, "globalTags", ops, "PATCH"))
    assert answer.status_code == 413
    assert "a JSON Patch of 10001 ops, over the limit of 10000" in answer.json()["results"][0]["message"]


def deep_urn(levels: int) -> str:
    urn = dataset_urn("db.t")
    for _ in range(levels):
        urn = f"urn:li:schemaField:({urn},f)"
    return urn


def test_an_urn_nested_thousands_deep_is_refused_on_every_write_route(server: LiveServer):
    urn = deep_urn(3000)
    status = mcp(urn, "status", {"removed": False})
    native = propose(server, status)
    assert native.status_code == 400
    assert native.json()["results"][0]["error"] == "invalid_urn"
    assert "tuples nested over 20 deep" in native.json()["results"][0]["message"]
    rest_li = post(server, "/aspects?action=ingestProposal", {"proposal": status})
    assert rest_li.status_code == 400 and "tuples nested over 20 deep" in rest_li.json()["message"]
    tag = post(server, "/api/graphql", {"query": 'mutation($u: String!) { createTag(input: {id: $u, name: "x"}) }',
                                        "variables": {"u": urn}})
    assert tag.status_code == 200 and tag.json()["errors"][0]["extensions"]["error"] == "invalid_urn"
    for query in ("query($u: String!) { entity(urn: $u) { urn } }",
                  "query($u: String!) { entities(urns: [$u]) { urn } }",
                  'query($u: String!) { searchAcrossLineage(input: {urn: $u, query: "*", direction: UPSTREAM})'
                  " { total } }"):
        answer = post(server, "/api/graphql", {"query": query, "variables": {"u": urn}})
        assert answer.status_code == 200 and "data" in answer.json(), answer.text
    search = post(server, "/entities?action=search", {"entity": "dataset", "input": urn})
    assert search.status_code in (200, 400), search.text
    assert propose(server, status | {"entityUrn": deep_urn(18)}).ok  # as deep as any URN needs is stored


def test_json_nested_past_the_guard_is_400_on_the_schema_registry_without_a_token(server: LiveServer):
    answer = post(server, "/schema-registry/api/subjects/x", raw=b"[" * 100_000, token=None)
    assert answer.status_code == 400
    assert "depth limit exceeded" in answer.json()["message"]


def test_a_ui_path_with_a_nul_byte_is_404_without_a_token(server: LiveServer):
    answer = requests.get(server.url + "/ui/index.html%00.js", timeout=30)
    assert answer.status_code == 404 and answer.json()["error"] == "not_found"


def graphql(server: LiveServer, query: str, variables: dict[str, Any] | None = None) -> requests.Response:
    return post(server, "/api/graphql", {"query": query, "variables": variables})


def fragment_chain(root: str, links: int, aliases: int) -> str:
    """A document whose fragment i asks for the container's container `aliases` times, each
    through fragment i + 1: aliases^links containers from a 1 KB document."""
    spreads = lambda i: " ".join(f"c{a}: container {{ urn ...F{i + 1} }}" for a in range(aliases))  # noqa: E731
    fragments = "\n".join(f"fragment F{i} on Container {{ {spreads(i)} }}" for i in range(links))
    return f'{{ container(urn: "{root}") {{ ...F0 }} }}\n{fragments}\nfragment F{links} on Container {{ urn }}'


def test_graphql_fragments_and_aliases_cannot_fan_out_past_the_limits(server: LiveServer):
    loop = "urn:li:container:loop"  # a container inside itself: every level resolves
    assert propose(server, mcp(loop, "containerProperties", {"name": "loop"}),
                   mcp(loop, "container", {"container": loop})).ok
    fan_out = while_answering(server, lambda: graphql(server, fragment_chain(loop, 17, 2)))
    assert fan_out.status_code == 200 and "data" not in fan_out.json()
    assert fan_out.json()["errors"][0]["message"].startswith("the document asks for over 5000 fields")
    chained = graphql(server, fragment_chain(loop, 40, 1)).json()
    assert chained["errors"][0]["message"] == ("the document nests over 32 selections (fragments inlined); at most 32"
                                               " are served")
    cycle = graphql(server, "query($u: String!) { container(urn: $u) { ...A } } fragment A on Container"
                            " { container { ...B } } fragment B on Container { ...A }", {"u": loop}).json()
    assert cycle["errors"][0]["message"] == "fragment A spreads itself"
    small = graphql(server, fragment_chain(loop, 3, 2)).json()
    assert "errors" not in small
    assert small["data"]["container"]["c1"]["c0"]["c1"]["urn"] == loop  # 2^3 containers answered


def test_graphql_aliases_of_big_pages_are_refused_by_cost(server: LiveServer):
    page = 'searchAcrossEntities(input: {query: "*", count: 10000}) { total }'
    aliased = graphql(server, "{ " + " ".join(f"s{i}: {page}" for i in range(900)) + " }")
    assert aliased.status_code == 200 and "data" not in aliased.json()
    assert aliased.json()["errors"][0]["message"].startswith("the document may cost over 1000000")
    by_variable = graphql(server, "query($n: Int) { " + " ".join(
        f's{i}: searchAcrossEntities(input: {{query: "*", count: $n}}) {{ searchResults {{ entity {{ urn }} }} }}'
        for i in range(50)) + " }", {"n": 10000})
    assert by_variable.json()["errors"][0]["message"].startswith("the document may cost over")
    one = graphql(server, '{ searchAcrossEntities(input: {query: "*", count: 10000}) {'
                          ' searchResults { entity { urn } } } }').json()
    assert "errors" not in one and isinstance(one["data"]["searchAcrossEntities"]["searchResults"], list)


@pytest.fixture
def few_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """A server whose bodies may hold 100,000 JSON items and 1 MiB."""
    monkeypatch.setenv("LODESTAR_MAX_JSON_ITEMS", "100000")
    gms = Gms.embedded(tmp_path / "data", Limits(max_request_bytes=1024 * 1024))
    read_models = SqliteReadModels.in_data_dir(tmp_path / "data", gms.registry)
    live, thread = start_server(gms, read_models)
    yield live
    thread.stop()
    read_models.close()
    gms.close()


@pytest.mark.parametrize("path", ["/v1/proposals", "/aspects?action=ingestProposalBatch", "/api/graphql",
                                  "/entities?action=search"])
def test_a_body_of_many_small_values_is_refused_before_it_is_parsed(few_values: LiveServer, path: str):
    nobody = principal_with_grants(few_values, "nobody")
    raw = b'{"proposals": [' + b",".join([b"{}"] * 300_000) + b"]}"  # 0.9 MiB; 300,000 dicts once parsed
    answer = post(few_values, path, raw=raw, token=nobody)
    assert answer.status_code == 413, answer.text
    assert answer.json()["message"] == ("request body holds 600003 JSON items (commas, colons, brackets), over the"
                                        " limit of 100000")
    strings = b'{"proposals": [], "pad": "' + b"{}," * 300_000 + b'"}'  # brackets inside a string are no values
    assert post(few_values, "/v1/proposals", raw=strings).status_code == 200
    urn = dataset_urn("db.fits")
    assert propose(few_values, *(mcp(urn, "status", {"removed": False}) for _ in range(100))).ok


def test_a_schema_registry_body_of_many_small_values_is_refused_without_a_token(few_values: LiveServer):
    raw = b'{"schema": [' + b",".join([b"{}"] * 300_000) + b"]}"
    answer = post(few_values, "/schema-registry/api/subjects/x", raw=raw, token=None)
    assert answer.status_code == 413
    assert answer.json() == {"error_code": 413,
                             "message": "request body holds 600003 JSON items, over the limit of 100000"}


def test_a_body_sent_without_a_length_is_cut_off_at_the_size_limit(few_values: LiveServer):
    def chunks() -> Iterator[bytes]:
        yield b'{"proposals": [], "pad": "'
        for _ in range(64):
            yield b"x" * 65536  # 4 MiB in all, the limit 1 MiB
        yield b'"}'

    answer = requests.post(few_values.url + "/v1/proposals", data=chunks(), timeout=60,
                           headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert answer.status_code == 413 and answer.json()["error"] == "too_large"
    assert requests.get(few_values.url + "/health", timeout=30).status_code == 200
