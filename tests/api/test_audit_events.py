"""The security audit log through DataHub's `POST /openapi/v1/events/audit/search`: sign-ins
(failed ones too), personal tokens, users, grants, policies and ingestion sources, newest first;
ADMIN reads every event, anyone else its own; no password or token is ever in it."""

from __future__ import annotations

from urllib.parse import quote

import requests

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import mcp
from tests.support.server import TOKEN, LiveServer
from tests.support.waiting import await_

SEARCH = "/openapi/v1/events/audit/search"
PASSWORD = "lighthouse keeper 7"
CREATE = """mutation make($input: CreateAccessTokenInput!) {
  createAccessToken(input: $input) { accessToken metadata { id } } }"""
REVOKE = "mutation revoke($id: String!) { revokeAccessToken(tokenId: $id) }"


def _search(session: requests.Session, server: LiveServer, body: dict, **params: object) -> requests.Response:
    return session.post(f"{server.url}{SEARCH}", params=params, json=body, timeout=30)


def _admin() -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    return session


def _events(session: requests.Session, server: LiveServer, body: dict, count: int, **params: object) -> list[dict]:
    """The first page once it holds `count` events (the log is read from the read models)."""
    def found() -> list[dict] | None:
        answer = _search(session, server, body, **params)
        assert answer.status_code == 200, answer.text
        events = answer.json()["usageEvents"]
        return events if len(events) >= count else None
    return await_(found, f"{count} audit events for {body}")


def _person(server: LiveServer, name: str) -> tuple[str, requests.Session]:
    admin = server.client()
    admin.call("POST", "/v1/access/principals", {"name": name})
    admin.call("PUT", f"/v1/access/principals/{name}/password", {"password": PASSWORD})
    session = requests.Session()
    assert session.post(f"{server.url}/logIn", json={"username": name, "password": "not it"},
                        timeout=30).status_code == 401
    assert session.post(f"{server.url}/logIn", json={"username": name, "password": PASSWORD},
                        timeout=30).status_code == 200
    return f"urn:li:corpuser:{name}", session


def test_a_principal_reads_its_sign_ins_and_tokens_newest_first_without_secrets(server: LiveServer):
    urn, session = _person(server, "keeper")
    made = session.post(f"{server.url}/api/v2/graphql", timeout=30, json={"query": CREATE, "variables": {"input": {
        "type": "PERSONAL", "actorUrn": urn, "duration": "ONE_HOUR", "name": "lamp"}}}).json()["data"]
    token, token_id = made["createAccessToken"]["accessToken"], made["createAccessToken"]["metadata"]["id"]
    assert session.post(f"{server.url}/api/v2/graphql", json={"query": REVOKE, "variables": {"id": token_id}},
                        timeout=30).json()["data"]["revokeAccessToken"] is True

    events = _events(session, server, {"actorUrns": [urn]}, 4, size=4)
    assert [e["eventType"] for e in events] == [
        "RevokeAccessTokenEvent", "CreateAccessTokenEvent", "LogInEvent", "FailedLogInEvent"]
    assert {e["entityUrn"] for e in events[:2]} == {f"urn:li:dataHubAccessToken:{token_id}"}
    assert [e.get("loginSource") for e in events[2:]] == ["PASSWORD_LOGIN", "PASSWORD_LOGIN"]
    assert all(e["actorUrn"] == urn and e["timestamp"] > 0 for e in events)
    everything = _search(_admin(), server, {}, size=1000).text
    assert token not in everything and PASSWORD not in everything and "not it" not in everything
    assert "scrypt" not in everything and "hash" not in everything

    only_failures = _events(session, server, {"eventTypes": ["FailedLogInEvent"]}, 1)
    assert [e["eventType"] for e in only_failures] == ["FailedLogInEvent"]


def test_only_an_admin_reads_other_principals_events(server: LiveServer):
    urn, session = _person(server, "visitor")
    refused = _search(session, server, {"actorUrns": ["urn:li:corpuser:admin"]})
    assert refused.status_code == 403 and "urn:li:corpuser:admin" in refused.json()["message"]
    mine = _events(session, server, {}, 2)  # no actor named: its own events only
    assert {e["actorUrn"] for e in mine} == {urn}
    made_by_admin = _events(_admin(), server, {"actorUrns": ["urn:li:corpuser:admin"],
                                               "eventTypes": ["CreateUserEvent", "UpdateUserEvent"]}, 3)
    assert [(e["eventType"], e["entityUrn"], e["aspectName"]) for e in made_by_admin[:3]] == [
        ("UpdateUserEvent", urn, "accessCredentialsInfo"), ("UpdateUserEvent", urn, "status"),
        ("CreateUserEvent", urn, "corpUserInfo")]
    writer = principal_with_grants(server, "forger", [("instance", ["READ", "WRITE"])])
    forged = mcp("urn:li:auditLog:security", "securityAuditEvent",
                 {"timestampMillis": 1, "eventType": "LogInEvent", "actorUrn": urn})
    for path in ("/v1/proposals", f"/v1/entities/{quote('urn:li:auditLog:security', safe='')}"):
        method, body = ("POST", {"proposals": [forged]}) if path == "/v1/proposals" else ("GET", None)
        answer = requests.request(method, server.url + path, json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {writer}"})
        assert answer.status_code == 403, (path, answer.text)


def test_policy_and_ingestion_source_changes_whichever_route_writes_them(server: LiveServer):
    policy, source = "urn:li:dataHubPolicy:night-watch", "urn:li:dataHubIngestionSource:tide-tables"
    info = {"displayName": "night watch", "description": "rounds after dark", "type": "METADATA", "state": "ACTIVE",
            "editable": True,
            "privileges": ["EDIT_ENTITY_TAGS"], "actors": {"allUsers": True}}
    recipe = {"name": "tide tables", "type": "file", "config": {"recipe": '{"source": {"type": "file"}}'}}
    admin = server.client()
    admin.propose([mcp(policy, "dataHubPolicyInfo", info), mcp(source, "dataHubIngestionSourceInfo", recipe)])
    admin.propose([mcp(policy, "dataHubPolicyInfo", {**info, "state": "INACTIVE"}),
                   mcp(source, "dataHubIngestionSourceInfo", {**recipe, "name": "tides"})])
    admin.propose([mcp(policy, "dataHubPolicyKey", change="DELETE")])
    events = _events(_admin(), server, {"entityTypes": ["dataHubPolicy", "dataHubIngestionSource"]}, 5)
    assert [(e["eventType"], e["entityUrn"]) for e in events] == [
        ("DeletePolicyEvent", policy), ("UpdateIngestionSourceEvent", source), ("UpdatePolicyEvent", policy),
        ("CreateIngestionSourceEvent", source), ("CreatePolicyEvent", policy)]


def test_pages_follow_the_scroll_id_and_bad_input_is_a_400(server: LiveServer):
    _person(server, "pager")
    _events(_admin(), server, {"eventTypes": ["LogInEvent", "FailedLogInEvent"]}, 2)
    first = _search(_admin(), server, {"eventTypes": ["LogInEvent", "FailedLogInEvent"]}, size=1).json()
    assert first["count"] == 1 and first["total"] == 2 and first["usageEvents"][0]["eventType"] == "LogInEvent"
    second = _search(_admin(), server, {"eventTypes": ["LogInEvent", "FailedLogInEvent"]}, size=1,
                     scrollId=first["nextScrollId"]).json()
    assert second["usageEvents"][0]["eventType"] == "FailedLogInEvent" and "nextScrollId" not in second
    for body, params, named in (({"actorUrns": "urn:li:corpuser:pager"}, {}, "actorUrns"),
                                ([], {}, "body"), ({}, {"size": "ten"}, "size"), ({}, {"size": 5000}, "size"),
                                ({}, {"scrollId": "nope"}, "scrollId"), ({}, {"startTime": "noon"}, "startTime"),
                                ({}, {"startTime": -2}, "startTime"), ({}, {"endTime": -(2**72)}, "endTime"),
                                ({}, {"endTime": 2**63}, "endTime")):
        answer = _search(_admin(), server, body, **params)
        assert answer.status_code == 400 and named in answer.json()["message"], (body, params, answer.text)
    assert _search(_admin(), server, {}, startTime=0, endTime=1).json()["usageEvents"] == []
