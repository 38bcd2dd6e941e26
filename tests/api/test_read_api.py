"""Search, lineage and timeseries over HTTP, with read-your-writes through waitForIndex."""

from __future__ import annotations

from urllib.parse import quote

from tests.support.builders import dataset_urn, mcp

ORDERS, RAW, MART = dataset_urn("shop.orders"), dataset_urn("shop.raw_orders"), dataset_urn("shop.mart")


def lineage_of(upstream: str) -> dict:
    return {"upstreams": [{"dataset": upstream, "type": "TRANSFORMED",
                           "auditStamp": {"time": 0, "actor": "urn:li:corpuser:etl"}}]}


def write_and_wait(client, *proposals) -> dict:
    status, body = client.request("POST", "/v1/proposals", {"proposals": list(proposals), "waitForIndex": True})
    assert status == 200, body
    assert body["indexed"] is True
    return body


def test_a_write_with_wait_for_index_is_searchable_when_it_returns(server):
    client = server.client()
    write_and_wait(client, mcp(ORDERS, "datasetProperties", {"name": "orders", "description": "Every customer order"}))
    result = client.call("GET", "/v1/search?query=customer")
    assert result["total"] == 1
    assert result["results"][0]["urn"] == ORDERS
    assert result["results"][0]["description"] == "Every customer order"
    assert {f["value"] for f in result["facets"]["entityType"]} == {"dataset"}
    names = [s["text"] for s in client.call("GET", "/v1/autocomplete?query=ord")["suggestions"]]
    assert "orders" in names


def test_lineage_over_http(server):
    client = server.client()
    write_and_wait(client, mcp(ORDERS, "upstreamLineage", lineage_of(RAW)),
                   mcp(MART, "upstreamLineage", lineage_of(ORDERS)))
    answer = client.call("GET", f"/v1/lineage?urn={quote(MART)}&direction=upstream&maxHops=5")
    assert {n["urn"] for n in answer["nodes"]} == {MART, ORDERS, RAW}
    assert {(e["source"], e["destination"]) for e in answer["edges"]} == {(RAW, ORDERS), (ORDERS, MART)}
    one_hop = client.call("GET", f"/v1/lineage?urn={quote(MART)}&direction=upstream&maxHops=1")
    assert {n["urn"] for n in one_hop["nodes"]} == {MART, ORDERS}


def test_timeseries_points_in_time_order(server):
    run = "urn:li:dataProcessInstance:run-7"
    client = server.client()
    write_and_wait(client, *[mcp(run, "dataProcessInstanceRunEvent", {"timestampMillis": t, "status": s})
                             for t, s in ((2000, "COMPLETE"), (1000, "STARTED"))])
    points = client.call("GET", f"/v1/timeseries/{quote(run, safe='')}/dataProcessInstanceRunEvent")["points"]
    assert [p["timestampMillis"] for p in points] == [1000, 2000]
    window = client.call("GET", f"/v1/timeseries/{quote(run, safe='')}/dataProcessInstanceRunEvent?start=1500")
    assert [p["status"] for p in window["points"]] == ["COMPLETE"]


def test_bad_read_parameters_are_400_with_a_reason(server):
    client = server.client()
    for path, words in (("/v1/lineage", "urn"), (f"/v1/lineage?urn={quote(ORDERS)}&direction=sideways", "direction"),
                        (f"/v1/lineage?urn={quote(ORDERS)}&maxHops=0", "maxHops"),
                        ("/v1/search?query=x&count=abc", "count"), ("/v1/search?query=x&sort=sideways", "sort")):
        status, body = client.request("GET", path)
        assert status == 400, path
        assert words in body["message"], (path, body)


def test_reads_need_a_token(server):
    for path in ("/v1/search?query=x", "/v1/autocomplete?query=x", f"/v1/lineage?urn={quote(ORDERS)}"):
        assert server.client(token=None).request("GET", path)[0] == 401
