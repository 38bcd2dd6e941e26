"""The native REST API over HTTP: proposals, reads, deletes, auth, errors, OpenAPI."""

from __future__ import annotations

import asyncio
import gc
import json
from urllib.parse import quote

from lodestar.api.auth import TokenAuth
from lodestar.api.context import Api
from mcl_processor.embedded import SqliteReadModels
from tests.support.builders import dataset_urn, mcp, properties

URN = dataset_urn("warehouse/raw/orders", platform="s3")  # a '/' in the name must survive URL-encoding
PATH = f"/v1/entities/{quote(URN, safe='')}"


def test_health_and_config_need_no_token(server):
    anonymous = server.client(token=None)
    assert anonymous.call("GET", "/health") == {"status": "ok"}
    assert anonymous.call("GET", "/config")["noCode"] == "true"
    assert anonymous.call("GET", "/openapi.json")["openapi"].startswith("3.")


def test_everything_else_needs_a_valid_token(server):
    for token in (None, "wrong-token"):
        client = server.client(token=token)
        for method, path, body in (("GET", PATH, None), ("POST", "/v1/proposals", {"proposals": []}),
                                   ("POST", "/aspects?action=ingestProposal", {}), ("DELETE", PATH, None)):
            status, answer = client.request(method, path, body)
            assert status == 401, (method, path, token)
            assert answer["error"] == "unauthorized"
    assert server.gms.store.entity(URN) == []


def test_proposals_answer_one_result_per_proposal_in_order(server):
    client = server.client()
    status, body = client.request("POST", "/v1/proposals", {"proposals": [
        mcp(URN, "datasetProperties", properties("first")),
        mcp(URN, "datasetProperties", properties("first")),
        mcp(URN, "status", {"removed": False}, change="CREATE"),
        mcp(URN, "status", {"removed": True}, change="CREATE", headers={"If-None-Match": "*"}),
    ]})
    assert status == 200
    assert body["results"] == [{"status": "applied", "version": 1}, {"status": "noop", "version": 1},
                               {"status": "applied", "version": 1}, {"status": "dropped", "version": 1}]


def test_a_single_failed_proposal_gets_its_own_status_and_a_mixed_batch_gets_207(server):
    client = server.client()
    client.propose([mcp(URN, "status", {"removed": False})])
    status, body = client.request("POST", "/v1/proposals", {"proposals": [
        mcp(URN, "status", {"removed": True}, headers={"If-Version-Match": "5"})]})
    assert status == 412
    assert body["results"][0] == {"status": "failed", "error": "precondition_failed", "expected": "5", "actual": "1",
                                  "message": "If-Version-Match: expected version 5, the aspect is at 1"}
    status, body = client.request("POST", "/v1/proposals", {"proposals": [
        mcp(URN, "status", {"removed": True}), mcp(URN, "status", {"removed": "no"})]})
    assert status == 207
    assert [r["status"] for r in body["results"]] == ["applied", "failed"]
    assert "field 'removed'" in body["results"][1]["message"]


def test_http_conditional_headers_apply_to_each_proposal(server):
    client = server.client()
    client.propose([mcp(URN, "status", {"removed": False})])
    conn = client._connection()
    conn.request("POST", "/v1/proposals", json.dumps({"proposals": [mcp(URN, "status", {"removed": True})]}),
                 {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json",
                  "If-Version-Match": "3"})
    response = conn.getresponse()
    body = json.loads(response.read())
    assert response.status == 412 and body["results"][0]["actual"] == "1"
    assert server.gms.store.get(URN, "status").version == 1


def test_reads_entity_aspect_version_and_history(server):
    client = server.client()
    client.propose([mcp(URN, "datasetProperties", properties("one")), mcp(URN, "datasetProperties", properties("two"))])
    entity = client.call("GET", PATH)
    assert entity["urn"] == URN and entity["entityType"] == "dataset"
    assert set(entity["aspects"]) == {"datasetKey", "datasetProperties"}
    assert entity["aspects"]["datasetProperties"]["version"] == 2
    assert entity["aspects"]["datasetProperties"]["systemMetadata"]["version"] == "2"
    latest = client.call("GET", f"{PATH}/aspects/datasetProperties")
    assert (latest["version"], latest["value"]["description"]) == (2, "two")
    first = client.call("GET", f"{PATH}/aspects/datasetProperties?version=1")
    assert first["value"]["description"] == "one"
    versions = client.call("GET", f"{PATH}/aspects/datasetProperties/versions")["versions"]
    assert [(v["version"], v["value"]["description"]) for v in versions] == [(1, "one"), (2, "two")]


def test_reads_of_missing_things_are_404_and_bad_versions_400(server):
    client = server.client()
    client.propose([mcp(URN, "datasetProperties", properties("one"))])
    for path in (f"/v1/entities/{quote(dataset_urn('nope'), safe='')}", f"{PATH}/aspects/status",
                 f"{PATH}/aspects/datasetProperties?version=9", f"{PATH}/aspects/status/versions"):
        status, body = client.request("GET", path)
        assert status == 404 and body["error"] == "not_found", path
    status, body = client.request("GET", f"{PATH}/aspects/datasetProperties?version=abc")
    assert status == 400 and "version" in body["message"]


def test_deleted_aspect_is_404_as_latest_but_its_versions_stay_readable(server):
    client = server.client()
    client.propose([mcp(URN, "datasetProperties", properties("one")), mcp(URN, "datasetProperties", change="DELETE")])
    status, body = client.request("GET", f"{PATH}/aspects/datasetProperties")
    assert status == 404 and "deleted at version 2" in body["message"]
    versions = client.call("GET", f"{PATH}/aspects/datasetProperties/versions")["versions"]
    assert [(v["version"], v["deleted"]) for v in versions] == [(1, False), (2, True)]


def test_delete_entity_soft_then_hard(server):
    client = server.client()
    client.propose([mcp(URN, "datasetProperties", properties("one"))])
    soft = client.call("DELETE", PATH)
    assert (soft["hard"], soft["status"]) == (False, "applied")
    assert client.call("GET", f"{PATH}/aspects/status")["value"] == {"removed": True}
    hard = client.call("DELETE", f"{PATH}?hard=true")
    assert hard["hard"] is True
    assert client.request("GET", PATH)[0] == 404
    assert client.request("DELETE", PATH)[0] == 404


def test_malformed_requests_are_400_with_a_reason(server):
    client = server.client()
    conn = client._connection()
    conn.request("POST", "/v1/proposals", b"{not json", {"Authorization": f"Bearer {server.token}"})
    response = conn.getresponse()
    body = json.loads(response.read())
    assert response.status == 400 and body["error"] == "invalid_json"
    status, body = client.request("POST", "/v1/proposals", {"proposal": []})
    assert status == 400 and "proposals" in body["message"]
    status, body = client.request("POST", "/v1/proposals", {"proposals": ["not an object"]})
    assert status == 400 and body["results"][0]["message"] == "proposal: must be a JSON object"


def test_request_over_the_size_limit_is_413(server):
    status, body = server.client().request("POST", "/v1/proposals", {"proposals": [
        mcp(URN, "datasetProperties", properties("x" * 2_000_000))]})
    assert status == 413 and body["error"] == "too_large"
    assert server.gms.store.entity(URN) == []


def test_async_proposals_are_queued_then_applied_by_the_mcp_consumer(server):
    import threading

    stop = threading.Event()
    consumer = threading.Thread(target=server.gms.consume_proposals, args=(stop, 0.05), daemon=True)
    consumer.start()
    try:
        status, body = server.client().request("POST", "/v1/proposals", {"async": True, "proposals": [
            mcp(URN, "datasetProperties", properties("later")), mcp(URN, "status", {"removed": "bad"})]})
        assert status == 202
        assert body["results"][0] == {"status": "queued"}
        assert body["results"][1]["status"] == "failed"
        _wait_until(lambda: server.gms.store.get(URN, "datasetProperties") is not None)
        stored = server.gms.store.get(URN, "datasetProperties")
        assert stored.value["description"] == "later"
        assert stored.system_metadata["aspectCreated"]["actor"] == "urn:li:corpuser:admin"
    finally:
        stop.set()
        consumer.join(5)


def _wait_until(condition, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_the_writer_thread_runs_with_the_garbage_collector_paused_and_only_meanwhile(gms, tmp_path):
    read_models = SqliteReadModels.in_data_dir(tmp_path, gms.registry)
    api = Api(gms, TokenAuth(), read_models)
    try:
        assert asyncio.run(api.run(gc.isenabled)) is False
        assert gc.isenabled()
    finally:
        api.writers.shutdown()
        read_models.close()


def test_every_operation_taking_a_constrained_query_parameter_documents_its_refusal(server):
    """A query parameter with a type (or bounds) other than free text can be refused: 400."""
    document = server.client(token=None).call("GET", "/openapi.json")
    undocumented = [
        (method, path, param["name"])
        for path, item in document["paths"].items() for method, operation in item.items()
        for param in operation.get("parameters", [])
        if param["in"] == "query" and param["schema"].get("type", "string") != "string"
        and "400" not in operation["responses"]]
    assert undocumented == []
