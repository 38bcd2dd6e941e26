"""CDAP's search API: parameters and their 400s, sorts, cursors, hidden entities, namespaces,
the response shape, and that a caller sees only what it may read (totals included)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from lodestar.metadata.client import MetadataClient
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp
from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps

NAMES = ["delta", "alpha", "echo", "charlie", "bravo"]  # created in this order


def _indexed(server) -> None:
    assert server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]


@pytest.fixture
def client(server) -> MetadataClient:
    rest = server.client()
    for name in NAMES:  # one request each: creation times in this order
        assert rest.propose(dataset_mcps("default", name, fields=(("id", "long"),)))[0]["status"] == "applied"
    rest.propose(dataset_mcps("default", "_hidden") + dataset_mcps("sales", "leads"))
    client = MetadataClient(server.url, rest=rest)
    client.add_tags("default/datasets/alpha", "finance")
    client.add_tags("default/datasets/_hidden", "finance")
    client.add_tags("sales/datasets/leads", "finance")
    client.add_tags("default/datasets/alpha/field/id", "pii")
    _indexed(server)
    return client


def _search(client: MetadataClient, path: str = "/v3/namespaces/default/metadata/search", **params) -> tuple[int, dict]:
    items = [(k, v) for k, values in params.items() for v in (values if isinstance(values, list) else [values])]
    return client.rest.request("GET", f"{path}?{urlencode(items)}")


def _names(answer: dict) -> list[str]:
    return [r["metadataEntity"]["details"].get("dataset") for r in answer["results"]]


def test_results_in_cdaps_shape(client):
    status, answer = _search(client, query="finance")
    assert status == 200
    assert answer["total"] == 1 and answer["offset"] == 0 and answer["limit"] == 10 and answer["cursors"] == []
    (result,) = answer["results"]
    assert result["metadataEntity"] == {"details": {"namespace": "default", "dataset": "alpha"}, "type": "dataset"}
    assert result["metadata"]["USER"] == {"properties": {}, "tags": ["finance"]}
    assert result["metadata"]["SYSTEM"]["properties"]["entity-name"] == "alpha"
    status, answer = _search(client, query="finance", scope="user")
    assert list(answer["results"][0]["metadata"]) == ["USER"]


def test_namespaces_hidden_entities_and_targets(client):
    everywhere = _search(client, "/v3/metadata/search", query="finance")[1]
    assert sorted(_names(everywhere)) == ["alpha", "leads"]
    assert _names(_search(client, "/v3/metadata/search", query="finance", namespaces="sales")[1]) == ["leads"]
    shown = _search(client, query="finance", showHidden="TRUE")[1]
    assert sorted(_names(shown)) == ["_hidden", "alpha"] and shown["total"] == 2
    assert _search(client, query="pii", target="dataset")[1]["total"] == 0
    fields = _search(client, query="pii", target=["dataset", "field"])[1]
    assert [r["metadataEntity"]["type"] for r in fields["results"]] == ["field"]


@pytest.mark.parametrize(("sort", "expected"), [
    ("entity-name asc", sorted(NAMES)), ("entity-name desc", sorted(NAMES, reverse=True)),
    ("creation-time asc", NAMES), ("CREATION-TIME desc", NAMES[::-1]), ("entity-name", sorted(NAMES)),
])
def test_sorts(client, sort, expected):
    status, answer = _search(client, query="*", target="dataset", sort=sort, limit=10)
    assert status == 200, answer
    assert _names(answer) == expected and answer["total"] == 5


@pytest.mark.parametrize("sort", ["entity-name asc", "creation-time desc"])
def test_cursors_page_through_a_sorted_search(client, sort):
    first = _search(client, query="*", target="dataset", sort=sort, limit=2, numCursors=5)[1]
    assert len(first["cursors"]) == 2  # pages 2 and 3 of 5 results
    pages = [_names(first)]
    for cursor in first["cursors"]:
        status, page = _search(client, query="*", target="dataset", sort=sort, limit=2, cursor=cursor)
        assert status == 200, page
        pages.append(_names(page))
    whole = _names(_search(client, query="*", target="dataset", sort=sort, limit=10)[1])
    assert [name for page in pages for name in page] == whole


@pytest.mark.parametrize(("params", "says"), [
    ({}, "query is required"),
    ({"query": "*", "sort": "name asc"}, "is not one of 'entity-name asc|desc'"),
    ({"query": "*", "sort": "entity-name up"}, "is not one of"),
    ({"query": "finance", "sort": "entity-name asc"}, "takes the query '*' only"),
    ({"query": "*", "numCursors": "2"}, "need a sort"),
    ({"query": "*", "cursor": "abc"}, "need a sort"),
    ({"query": "*", "sort": "entity-name asc", "cursor": "abc"}, "not a cursor this API gave"),
    ({"query": "*", "sort": "entity-name asc", "cursor": "abc", "offset": "2"}, "exclude each other"),
    ({"query": "*", "showHidden": "maybe"}, "showHidden"),
    ({"query": "*", "limit": "0"}, "limit: 0 is not between 1 and 1000"),
    ({"query": "*", "offset": "x"}, "not an integer"),
    ({"query": "*", "scope": "GLOBAL"}, "scope must be USER or SYSTEM"),
])
def test_bad_searches_are_400_saying_why(client, params, says):
    status, answer = _search(client, **params)
    assert status == 400 and says in answer["message"], answer


def test_the_python_client_searches_with_every_option(client):
    assert _names(client.search("finance")) == ["alpha", "leads"]  # every namespace
    assert _names(client.search("finance", "default", showHidden=True)) == ["_hidden", "alpha"]
    fields = client.search("pii", "default", target=["field"], scope="USER")["results"]
    assert [r["metadataEntity"]["details"].get("field") for r in fields] == ["id"]
    assert client.search("pii", "default", target=["field"], scope="SYSTEM")["total"] == 0
    sorted_by = {"target": ["dataset"], "sort": "entity-name desc", "limit": 2}
    first = client.search("*", "default", **sorted_by, numCursors=1)
    assert _names(first) == ["echo", "delta"]
    page = client.search("*", "default", **sorted_by, cursor=first["cursors"][0])
    assert _names(page) == ["charlie", "bravo"]


def test_a_cursor_belongs_to_its_search(client):
    cursor = _search(client, query="*", sort="entity-name asc", limit=1, numCursors=1)[1]["cursors"][0]
    status, answer = _search(client, query="*", sort="entity-name desc", limit=1, cursor=cursor)
    assert status == 400 and "belongs to another search" in answer["message"]


def test_a_caller_sees_and_counts_only_what_it_may_read(client, server):
    reader = MetadataClient(server.url, principal_with_grants(server, "reader", [("sales", ["READ"])]))
    outsider = MetadataClient(server.url, principal_with_grants(server, "outsider"))
    answer = _search(reader, "/v3/metadata/search", query="finance")[1]
    assert answer["total"] == 1 and _names(answer) == ["leads"]
    answer = _search(outsider, "/v3/metadata/search", query="*", showHidden="true")[1]
    assert answer == {**answer, "total": 0, "results": [], "cursors": []}
    field_reader = MetadataClient(server.url, principal_with_grants(server, "alice", [(
        "default/datasets/alpha", ["READ"])]))
    answer = _search(field_reader, query="pii")[1]
    assert answer["total"] == 1 and answer["results"][0]["metadataEntity"]["details"]["field"] == "id"
    status, _ = _search(reader, query="*", sort="creation-time asc")
    assert status == 200


def test_native_search_and_cdap_search_see_the_same_writes(client, server):
    urn = cdap_dataset("default", "echo")
    server.client().propose([mcp(urn, "userScopeMetadata", {"tags": ["fresh"], "properties": {}})])
    _indexed(server)
    assert _names(_search(client, query="fresh")[1]) == ["echo"]
    assert [h["urn"] for h in server.client().call("GET", "/v1/search?query=tags:fresh")["results"]] == [urn]


def test_native_search_and_autocomplete_leave_out_what_a_caller_may_not_read(client, server):
    reader = MetadataClient(server.url, principal_with_grants(server, "reader", [("sales", ["READ"])])).rest
    outsider = MetadataClient(server.url, principal_with_grants(server, "outsider")).rest
    found = reader.call("GET", "/v1/search?query=*")
    assert [h["urn"] for h in found["results"]] == [cdap_dataset("sales", "leads")] and found["total"] == 1
    assert found["facets"]["entityType"] == [{"value": "dataset", "count": 1}]
    assert reader.call("GET", "/v1/search?query=tags:finance")["total"] == 1
    nothing = outsider.call("GET", "/v1/search?query=*")
    assert nothing["total"] == 0 and nothing["results"] == [] and not any(nothing["facets"].values())
    assert [s["text"] for s in reader.call("GET", "/v1/autocomplete?query=lea")["suggestions"]] == ["leads"]
    assert reader.call("GET", "/v1/autocomplete?query=alp")["suggestions"] == []
    assert outsider.call("GET", "/v1/autocomplete?query=lea")["suggestions"] == []
    admin = server.client().call("GET", "/v1/autocomplete?query=alp")["suggestions"]
    assert "alpha" in [s["text"] for s in admin]


def test_values_with_special_characters_over_http(client, server):
    client.set_properties("default/datasets/bravo", {"path": "/data/in (2020)", "emails": "a@x.com, b@y.org"})
    _indexed(server)
    for query in ("path:/data/in", "emails:b@y.org", "path:(2020)", "a@x*", "path:/data/in emails:nobody"):
        status, answer = _search(client, query=query)
        assert status == 200 and _names(answer) == ["bravo"], (query, answer)
    for query in ("path:data", "emails:x.com", ", : -"):
        assert _search(client, query=query)[1]["total"] == 0, query
