"""Attacks on what only ADMIN on the instance may touch, by principals with READ or WRITE: a
webhook redirected by a plain proposal, grants and SYSTEM-scope metadata purged by hard
deletes, a removed principal re-enabled, webhook URLs and tokens read, proposals queued without
any grant, a forged actor header in the change log. Each is refused (or leaves nothing to see)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
import requests

from gms.access import SUPERUSER
from ingest import topics
from schemas.events import default_codec
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp, proposal
from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps
from tests.support.server import LiveServer

HOOK = "urn:li:webhook:0123456789abcdef"
HOOK_INFO = {"url": "https://hooks.example.com/services/T0/B0/s3cretpath", "secretFingerprint": "00112233aabbccdd",
             "description": "the team's channel"}
ATTACKER = "https://collector.example.net/in"
CUSTOMERS = cdap_dataset("default", "customers")
q = quote


def call(server: LiveServer, token: str | None, method: str, path: str, body=None) -> requests.Response:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return requests.request(method, server.url + path, headers=headers, timeout=60,
                            data=None if body is None else json.dumps(body))


def entity_path(urn: str) -> str:
    return f"/v1/entities/{q(urn, safe='')}"


@pytest.fixture
def hook(server: LiveServer) -> str:
    """A webhook, registered by the admin (as a proposal: what it stores is what matters here)."""
    (result,) = server.gms.apply([proposal(HOOK, "webhookInfo", HOOK_INFO, systemMetadata={"runId": "hooks"})],
                                 SUPERUSER)
    assert result.failure is None
    return HOOK


def test_a_writer_cannot_redirect_a_webhook_by_a_proposal(server: LiveServer, hook: str):
    writer = principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])])
    stolen = {**HOOK_INFO, "url": ATTACKER}
    for path, body in (("/v1/proposals", {"proposals": [mcp(hook, "webhookInfo", stolen)]}),
                       ("/v1/proposals", {"proposals": [mcp(hook, "webhookInfo", stolen)], "async": True}),
                       ("/aspects?action=ingestProposal", {"proposal": mcp(hook, "webhookInfo", stolen)}),
                       ("/aspects?action=ingestProposal", {"proposal": mcp(hook, "webhookInfo", stolen),
                                                            "async": "true"}),
                       ("/v1/proposals", {"proposals": [mcp(hook, "webhookInfo", [
                           {"op": "replace", "path": "/url", "value": ATTACKER}], "PATCH")]})):
        answer = call(server, writer, "POST", path, body)
        assert answer.status_code == 403, (path, answer.text)
        assert "no ADMIN privilege on instance" in answer.text
    assert server.gms.store.get(hook, "webhookInfo").value["url"] == HOOK_INFO["url"]


def test_hard_deletes_are_authorized_as_the_deletion_of_every_aspect(server: LiveServer):
    admin = server.client()
    reader = principal_with_grants(server, "reader", [("instance", ["READ"])])
    writer = principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])])
    grants = "urn:li:accessGrants:reader"
    token = next(row.urn for row in _token_rows(server) if row.value["principal"] == "urn:li:corpuser:reader")
    for urn in (grants, token):
        for method, path, body in (("DELETE", f"{entity_path(urn)}?hard=true", None),
                                   ("DELETE", entity_path(urn), None),
                                   ("POST", "/entities?action=delete", {"urn": urn})):
            answer = call(server, writer, method, path, body)
            assert answer.status_code == 403, (urn, path, answer.text)
    assert call(server, reader, "GET", "/v1/access/grants").json()["grants"] == [
        {"resource": "instance", "privileges": ["READ"]}]
    assert call(server, reader, "GET", "/v1/search?query=*").status_code == 200

    admin.propose(dataset_mcps("default", "customers") + dataset_mcps("default", "scratch"))
    admin.call("POST", "/v3/namespaces/default/datasets/customers/metadata/tags?scope=SYSTEM", ["checked"])
    assert server.gms.store.get(CUSTOMERS, "systemScopeMetadata").exists
    ns_writer = principal_with_grants(server, "nswriter", [("default", ["READ", "WRITE"])])
    direct = call(server, ns_writer, "DELETE", "/v3/namespaces/default/datasets/customers/metadata?scope=SYSTEM")
    assert direct.status_code == 403
    for method, path, body in (("DELETE", f"{entity_path(CUSTOMERS)}?hard=true", None),
                               ("POST", "/entities?action=delete", {"urn": CUSTOMERS}),
                               ("POST", "/v1/proposals",
                                {"proposals": [mcp(CUSTOMERS, "datasetKey", change="DELETE")]})):
        answer = call(server, ns_writer, method, path, body)
        assert answer.status_code == 403 and "systemScopeMetadata" not in answer.text, (path, answer.text)
        assert "no ADMIN privilege" in answer.text
    assert server.gms.store.get(CUSTOMERS, "systemScopeMetadata").value["tags"] == ["checked"]
    scratch = cdap_dataset("default", "scratch")  # no SYSTEM-scope metadata: the writer may purge it
    assert call(server, ns_writer, "DELETE", f"{entity_path(scratch)}?hard=true").status_code == 200
    assert not server.gms.store.entity(scratch)


def _token_rows(server: LiveServer):
    rows, after = [], None
    while True:
        page = list(server.gms.store.scan_latest(after, 1000))
        rows += [row for row in page if row.aspect == "accessTokenInfo" and row.exists]
        if len(page) < 1000:
            return rows
        after = (page[-1].urn, page[-1].aspect)


def test_a_writer_cannot_enable_or_disable_a_principal(server: LiveServer):
    admin = server.client()
    writer = principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])])
    removed = principal_with_grants(server, "leaver", [("instance", ["READ"])])
    colleague = principal_with_grants(server, "colleague", [("instance", ["READ"])])
    admin.call("DELETE", "/v1/access/principals/leaver")
    assert call(server, removed, "GET", "/v1/search?query=*").status_code == 403
    back = call(server, writer, "POST", "/v1/proposals", {"proposals": [
        mcp("urn:li:corpuser:leaver", "status", {"removed": False})]})
    assert back.status_code == 403, back.text
    for method, path, body in (
            ("POST", "/v1/proposals", {"proposals": [mcp("urn:li:corpuser:colleague", "status", {"removed": True})]}),
            ("POST", "/aspects?action=ingestProposal", {"proposal": mcp("urn:li:corpuser:colleague", "status",
                                                                         {"removed": True})}),
            ("DELETE", entity_path("urn:li:corpuser:colleague"), None),
            ("DELETE", f"{entity_path('urn:li:corpuser:leaver')}?hard=true", None),  # its status would go
            ("POST", "/v1/proposals", {"proposals": [mcp("urn:li:corpuser:leaver", "status", change="DELETE")]})):
        answer = call(server, writer, method, path, body)
        assert answer.status_code == 403, (path, answer.text)
    assert call(server, removed, "GET", "/v1/search?query=*").status_code == 403
    assert call(server, colleague, "GET", "/v1/search?query=*").status_code == 200
    info = mcp("urn:li:corpuser:colleague", "corpUserEditableInfo", {"aboutMe": "edited by a writer"})
    assert call(server, writer, "POST", "/v1/proposals", {"proposals": [info]}).status_code == 200  # other aspects


def test_a_reader_of_the_instance_sees_no_webhook_url_grant_or_token(server: LiveServer, hook: str):
    reader = principal_with_grants(server, "reader", [("instance", ["READ"])])
    admin = server.client()
    admin.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    listed = call(server, reader, "POST", "/entities?action=listUrns", {"entity": "webhook"}).json()["value"]
    assert listed["entities"] == [] and listed["total"] == 0
    tokens = call(server, reader, "POST", "/entities?action=listUrns", {"entity": "accessToken"}).json()["value"]
    assert tokens["entities"] == []
    for path in (f"{entity_path(hook)}/aspects/webhookInfo", entity_path(hook), f"/entitiesV2/{q(hook, safe='')}",
                 f"/aspects/{q(hook, safe='')}?aspect=webhookInfo", entity_path("urn:li:accessGrants:admin"),
                 entity_path(_token_rows(server)[0].urn)):
        answer = call(server, reader, "GET", path)
        assert answer.status_code == 403 and "s3cretpath" not in answer.text, (path, answer.text)
    for method, path, body in (("POST", "/runs?action=describe", {"runId": "hooks", "includeAspect": True}),
                               ("POST", "/runs?action=list", {}),
                               ("POST", "/aspects?action=getCount", {"aspect": "webhookInfo"}),
                               ("GET", "/v1/search?query=*&includeRemoved=true", None),
                               ("POST", "/entities?action=search", {"input": "*", "entity": "webhook"})):
        answer = call(server, reader, method, path, body)
        assert answer.status_code == 200 and hook not in answer.text and "s3cretpath" not in answer.text, (
            path, answer.text)
    graphql = call(server, reader, "POST", "/api/graphql", {"query": f'{{ entity(urn: "{hook}") {{ urn }} }}'})
    assert graphql.json()["data"]["entity"] is None and "s3cretpath" not in graphql.text
    assert call(server, reader, "POST", "/aspects?action=getCount", {"aspect": "webhookInfo"}).json()["value"] == 0
    assert hook in call(server, server.token, "POST", "/entities?action=listUrns", {"entity": "webhook"}).text
    assert call(server, server.token, "GET", f"{entity_path(hook)}/aspects/webhookInfo").status_code == 200


def _queued(server: LiveServer) -> int:
    log = server.gms.log
    return sum(log.end_offset(topics.MCP, p) for p in range(log.partitions(topics.MCP)))


def test_async_proposals_are_authorized_before_they_are_queued(server: LiveServer):
    server.client().propose(dataset_mcps("default", "customers"))
    outsider = principal_with_grants(server, "outsider")
    ns_reader = principal_with_grants(server, "nsreader", [("default", ["READ"])])
    before = _queued(server)
    many = [mcp(cdap_dataset("default", f"t{i}"), "status", {"removed": False}) for i in range(500)]
    for token in (outsider, ns_reader):
        answer = call(server, token, "POST", "/v1/proposals", {"proposals": many, "async": True})
        assert answer.status_code == 403, answer.text[:300]
        assert {r["error"] for r in answer.json()["results"]} == {"forbidden"}
    assert _queued(server) == before
    writer = principal_with_grants(server, "writer", [("default", ["READ", "WRITE"])])
    mixed = [mcp(CUSTOMERS, "status", {"removed": False}),
             mcp(cdap_dataset("sales", "x"), "status", {"removed": False})]
    answer = call(server, writer, "POST", "/v1/proposals", {"proposals": mixed, "async": True})
    assert answer.status_code == 202 and [r["status"] for r in answer.json()["results"]] == ["queued", "failed"]
    assert _queued(server) == before + 1


def test_a_callers_lodestar_headers_do_not_reach_the_change_log(server: LiveServer):
    writer = principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])])
    forged = {"X-Lodestar-Actor": "urn:li:corpuser:admin", "x-lodestar-delivery": "forged", "X-Trace": "kept"}
    urn = cdap_dataset("default", "forged")
    answer = call(server, writer, "POST", "/v1/proposals", {"proposals": [
        mcp(urn, "status", {"removed": False}, headers=forged)]})
    assert answer.status_code == 200, answer.text
    codec = default_codec()
    logged = [codec.decode(r.value)[1] for r in server.gms.log.read(topics.MCL_VERSIONED, limit=100_000)]
    mine = [m for m in logged if m["entityUrn"] == urn]
    assert mine and all(m["created"]["actor"] == "urn:li:corpuser:writer" for m in mine)
    assert all(m["headers"] == {"X-Trace": "kept"} for m in mine if m["aspectName"] == "status"), mine
