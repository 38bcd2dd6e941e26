"""Dataset and stream lineage over time (CDAP's v3 shape) on the PurchaseHistory example and on
built chains: time windows that include and exclude runs, levels, collapse, rollup, UNKNOWN
accesses, reading and writing one dataset in a run, external stream writers, and the 400s; the
same walk in URNs from a dataset or a program (/v1/lineage/runs) and a program's runs (/v1/runs)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.support.access_fixtures import principal_with_grants
from tests.support.lineage_fixtures import cdap, example, program, propose_and_index, run

PURCHASES = "/v3/namespaces/default/datasets/purchases/lineage"
ALL = "start=1441310434&end=1441320599"


@pytest.fixture
def purchase_history(server):
    propose_and_index(server.client(), example("10-purchase-history.json"))
    return server.client()


def relations(body):
    return {(r["data"], r["program"], tuple(r["accesses"]), tuple(r["runs"])) for r in body["relations"]}


def test_purchase_history_lineage_over_the_whole_window(purchase_history):
    body = purchase_history.call("GET", f"{PURCHASES}?{ALL}&collapse=access&collapse=component")
    flow = "flow.default.PurchaseHistory.PurchaseFlow"
    builder = "mapreduce.default.PurchaseHistory.PurchaseHistoryBuilder"
    service = "service.default.PurchaseHistory.PurchaseHistoryService"
    assert body["start"] == 1441310434 and body["end"] == 1441320599
    assert relations(body) == {
        ("stream.default.purchaseStream", flow, ("read",), ("283-afsd032-adsf90",)),
        ("stream.default.purchaseStream", flow, ("read",), ("283-0rwedfk-09wrff",)),
        ("dataset.default.purchases", flow, ("write",), ("283-afsd032-adsf90",)),
        # one run reads and writes the same dataset
        ("dataset.default.purchases", flow, ("read", "write"), ("283-0rwedfk-09wrff",)),
        ("dataset.default.frequentCustomers", flow, ("write",), ("283-0rwedfk-09wrff",)),
        ("dataset.default.purchases", builder, ("read",), ("283-99sd032-adsf90",)),
        ("dataset.default.purchases", builder, ("read",), ("283-88wedfk-09wrff",)),
        ("dataset.default.history", builder, ("write",), ("283-99sd032-adsf90",)),
        ("dataset.default.history", builder, ("write",), ("283-88wedfk-09wrff",)),
        ("dataset.default.frequentCustomers", builder, ("write",), ("283-99sd032-adsf90",)),
        ("dataset.default.frequentCustomers", builder, ("write",), ("283-88wedfk-09wrff",)),
        ("dataset.default.history", service, ("read",), ("283-zsed032-adsf90",)),
    }
    assert body["programs"][flow]["id"] == {"namespace": "default", "application": "PurchaseHistory",
                                            "type": "flow", "id": "PurchaseFlow"}
    assert body["data"]["stream.default.purchaseStream"]["id"] == {"namespace": "default", "type": "stream",
                                                                   "id": "purchaseStream"}
    collapsed = purchase_history.call("GET", f"{PURCHASES}?{ALL}&collapse=access&collapse=run&collapse=component")
    assert {(r["data"], r["program"]): r["runs"] for r in collapsed["relations"]}[
        ("dataset.default.history", builder)] == ["283-88wedfk-09wrff", "283-99sd032-adsf90"]
    assert len(collapsed["relations"]) == 7
    uncollapsed = purchase_history.call("GET", f"{PURCHASES}?{ALL}")
    assert ("dataset.default.purchases", flow, ("read",), ("283-0rwedfk-09wrff",)) in relations(uncollapsed)
    assert ("dataset.default.purchases", flow, ("write",), ("283-0rwedfk-09wrff",)) in relations(uncollapsed)


def test_windows_select_the_runs_running_during_them(purchase_history):
    # 1441310434..1441313600: only the first flow run (until 1441313434) ran
    early = purchase_history.call("GET", f"{PURCHASES}?start=1441310434&end=1441313600")
    assert {tuple(r["runs"]) for r in early["relations"]} == {("283-afsd032-adsf90",)}
    # a run that ended before the window starts is out; one still running when it ends is in
    history = "/v3/namespaces/default/datasets/history/lineage"
    late = purchase_history.call("GET", f"{history}?start=1441318000&end=1441319000")
    assert {run for r in late["relations"] for run in r["runs"]} == {"283-zsed032-adsf90"}
    busy = purchase_history.call("GET", f"{PURCHASES}?start=1441317800&end=1441317850")
    assert {run for r in busy["relations"] for run in r["runs"]} == {
        "283-88wedfk-09wrff", "283-0rwedfk-09wrff", "283-zsed032-adsf90"}
    nothing = purchase_history.call("GET", f"{PURCHASES}?start=1341310434&end=1341313600")
    assert nothing["relations"] == [] and nothing["data"] == {}


def test_stream_lineage_and_relative_times(purchase_history):
    body = purchase_history.call("GET", f"/v3/namespaces/default/streams/purchaseStream/lineage?{ALL}&levels=1")
    assert {r["data"] for r in body["relations"]} == {
        "stream.default.purchaseStream", "dataset.default.purchases", "dataset.default.frequentCustomers"}
    recent = purchase_history.call("GET", f"{PURCHASES}?start=now-1d%2B4h&end=now")
    assert recent["end"] - recent["start"] == 20 * 3600 and recent["relations"] == []


def test_levels_stop_the_walk(server):
    """D3 -> P2 -> D2 -> P1 -> D1: one level from D1 reaches D2 through P1, not P2 or D3."""
    client = server.client()
    d1, d2, d3 = cdap("D1"), cdap("D2"), cdap("D3")
    propose_and_index(client, run("p1-run", program("P1"), 1000, 2000, reads=(d2,), writes=(d1,))
                      + run("p2-run", program("P2"), 500, 900, reads=(d3,), writes=(d2,)))
    one = client.call("GET", "/v3/namespaces/default/datasets/D1/lineage?start=0&end=3000&levels=1")
    assert {(r["data"], r["program"]) for r in one["relations"]} == {
        ("dataset.default.D1", "program.default.App.P1"), ("dataset.default.D2", "program.default.App.P1")}
    two = client.call("GET", "/v3/namespaces/default/datasets/D1/lineage?start=0&end=3000&levels=2")
    assert {r["data"] for r in two["relations"]} == {"dataset.default.D1", "dataset.default.D2", "dataset.default.D3"}


def test_unknown_accesses_components_and_workflow_rollup(server):
    client = server.client()
    data, other = cdap("data"), cdap("other")
    workflow = program("Nightly")
    propose_and_index(client, run("wf-run", workflow, 100, 400) + run(
        "mr-run", program("Loader"), 110, 300, parent="urn:li:dataProcessInstance:wf-run", accesses=[
            {"dataset": data, "type": "UNKNOWN"}, {"dataset": data, "type": "WRITE", "components": ["collector"]},
            {"dataset": other, "type": "UNKNOWN"}]))
    body = client.call("GET", "/v3/namespaces/default/datasets/data/lineage?start=0&end=1000")
    assert {(r["data"], tuple(r["accesses"]), tuple(r["components"])) for r in body["relations"]} == {
        ("dataset.default.data", ("write",), ("collector",)), ("dataset.default.other", ("unknown",), ())}
    rolled = client.call("GET", "/v3/namespaces/default/datasets/data/lineage?start=0&end=1000&rollup=workflow")
    assert {(r["program"], tuple(r["runs"])) for r in rolled["relations"]} == {
        ("program.default.App.Nightly", ("wf-run",))}


def test_external_stream_writers_are_recorded_once_per_day(server):
    client = server.client()
    first = client.call("POST", "/v3/namespaces/default/streams/clicks?source=webapp", {"events": ["a"]})
    second = client.call("POST", "/v3/namespaces/default/streams/clicks/batch?source=webapp", {"events": ["b"]})
    other = client.call("POST", "/v3/namespaces/default/streams/clicks?source=mobile", {})
    assert (first["recorded"], second["recorded"], other["recorded"]) == (True, False, True)
    assert first["run"] == second["run"] != other["run"]
    client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    body = client.call("GET", "/v3/namespaces/default/streams/clicks/lineage?start=now-1d&end=now")
    assert {(r["program"], tuple(r["accesses"])) for r in body["relations"]} == {
        ("external.default.webapp", ("write",)), ("external.default.mobile", ("write",))}
    status, answer = client.request("POST", "/v3/namespaces/default/streams/clicks?source=bad%20source", {})
    assert status == 400 and "source" in answer["message"]


@pytest.mark.parametrize(("query", "message"), [
    ("end=100", "start: is required"),
    ("start=100", "end: is required"),
    ("start=-5&end=100", "start: invalid time (-5 -> -5); it must be at least 0"),
    ("start=now-5x&end=now", "start: cannot parse 'now-5x'"),
    ("start=200&end=100", "start (200 -> 200) must not be after end (100 -> 100)"),
    ("start=1&end=2&levels=0", "levels: invalid levels (0); it must be between 1 and 100"),
    ("start=1&end=99999999999999999999", "end: invalid time (99999999999999999999 -> 99999999999999999999); "
                                         "it must be at most"),
    ("start=1&end=2&collapse=program", "collapse: invalid value 'program'"),
])
def test_bad_parameters_are_400_with_a_reason(server, query, message):
    status, body = server.client().request("GET", f"{PURCHASES}?{query}")
    assert status == 400 and message in body["message"], body


def test_lineage_answers_only_what_the_caller_may_read(purchase_history, server):
    token = principal_with_grants(server, "analyst", [("default/datasets/purchases", ["READ"]),
                                                     ("default/streams/purchaseStream", ["READ"]),
                                                     ("default/apps/PurchaseHistory", ["READ"])])
    analyst = server.client(token)
    body = analyst.call("GET", f"{PURCHASES}?{ALL}")
    assert {r["data"] for r in body["relations"]} == {"dataset.default.purchases", "stream.default.purchaseStream"}
    status, answer = analyst.request("GET", f"/v3/namespaces/default/datasets/history/lineage?{ALL}")
    assert status == 403 and answer["error"] == "forbidden"
    status, answer = analyst.request("GET", "/v3/namespaces/default/datasets/history/lineage/fields?" + ALL)
    assert status == 403
    status, answer = analyst.request("POST", "/v3/namespaces/default/streams/purchaseStream?source=app", {})
    assert status == 403


def test_urn_lineage_from_a_dataset_or_a_program(purchase_history):
    """/v1/lineage/runs: the same walk in URNs, runs merged per access; from a program its runs'
    accesses are the first level."""
    flow, builder = program("PurchaseFlow", "PurchaseHistory"), program("PurchaseHistoryBuilder", "PurchaseHistory")
    urns = {name: cdap(name) for name in ("purchases", "history", "frequentCustomers")}
    body = purchase_history.call("GET", f"/v1/lineage/runs?urn={quote(urns['history'], safe='')}&{ALL}&levels=1")
    assert {(r["data"], r["program"], tuple(r["accesses"])): r["runs"] for r in body["relations"]} == {
        (urns["history"], builder, ("write",)): ["urn:li:dataProcessInstance:283-88wedfk-09wrff",
                                                 "urn:li:dataProcessInstance:283-99sd032-adsf90"],
        (urns["purchases"], builder, ("read",)): ["urn:li:dataProcessInstance:283-88wedfk-09wrff",
                                                  "urn:li:dataProcessInstance:283-99sd032-adsf90"],
        (urns["frequentCustomers"], builder, ("write",)): ["urn:li:dataProcessInstance:283-88wedfk-09wrff",
                                                           "urn:li:dataProcessInstance:283-99sd032-adsf90"],
        (urns["history"], program("PurchaseHistoryService", "PurchaseHistory"), ("read",)):
            ["urn:li:dataProcessInstance:283-zsed032-adsf90"]}
    one = purchase_history.call("GET", f"/v1/lineage/runs?urn={quote(flow, safe='')}&{ALL}&levels=1")
    assert {(r["data"], r["program"], tuple(r["accesses"])) for r in one["relations"]} == {
        (cdap("purchaseStream"), flow, ("read",)), (urns["purchases"], flow, ("read",)),
        (urns["purchases"], flow, ("write",)), (urns["frequentCustomers"], flow, ("write",))}
    two = purchase_history.call("GET", f"/v1/lineage/runs?urn={quote(flow, safe='')}&{ALL}&levels=2")
    assert {r["program"] for r in two["relations"]} == {flow, builder}  # on from the program's data
    early = purchase_history.call("GET", f"/v1/lineage/runs?urn={quote(flow, safe='')}&start=1441310434&end=1441313600")
    assert {run for r in early["relations"] for run in r["runs"]} == {"urn:li:dataProcessInstance:283-afsd032-adsf90"}


@pytest.mark.parametrize(("query", "message"), [
    ("/v1/lineage/runs?start=1&end=2", "urn: is required"),
    ("/v1/lineage/runs?urn=urn:li:corpuser:x&start=1&end=2", "'urn:li:corpuser:x' is not a dataset or dataJob URN"),
    (f"/v1/lineage/runs?urn={quote(cdap('x'), safe='')}&end=2", "start: is required"),
    ("/v1/runs", "program: is required"),
    (f"/v1/runs?program={quote(cdap('x'), safe='')}", "is not a dataJob URN"),
    (f"/v1/runs?program={quote(program('P'), safe='')}&count=0", "count: must be between 1 and"),
])
def test_the_v1_run_routes_refuse_bad_parameters_with_a_reason(server, query, message):
    status, body = server.client().request("GET", query)
    assert status == 400 and message in str(body), body


def test_a_programs_runs_in_one_request_newest_first(purchase_history):
    builder = program("PurchaseHistoryBuilder", "PurchaseHistory")
    body = purchase_history.call("GET", f"/v1/runs?program={quote(builder, safe='')}")
    assert body["total"] == 2
    assert [(r["run"], r["status"], r["program"]) for r in body["runs"]] == [
        ("urn:li:dataProcessInstance:283-88wedfk-09wrff", "SUCCESS", builder),
        ("urn:li:dataProcessInstance:283-99sd032-adsf90", "SUCCESS", builder)]
    assert body["runs"][0]["start"] > body["runs"][1]["start"]
    first = purchase_history.call("GET", f"/v1/runs?program={quote(builder, safe='')}&count=1")
    assert first["total"] == 2 and len(first["runs"]) == 1
    none = purchase_history.call("GET", f"/v1/runs?program={quote(program('Nothing'), safe='')}")
    assert none == {"program": program("Nothing"), "total": 0, "runs": []}
