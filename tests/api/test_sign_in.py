"""Signing in DataHub's way: passwords an admin sets (no default one), sessions that are
revocable tokens in HttpOnly cookies, personal access tokens and invitations through GraphQL,
all of them the principals and tokens of Lodestar's access API."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from gms.access.accounts import Accounts, credentials_urn
from tests.support.builders import mcp
from tests.support.server import LiveServer
from tests.support.waiting import await_

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"
CREATE = """mutation make($input: CreateAccessTokenInput!) {
  createAccessToken(input: $input) { accessToken metadata { id actorUrn ownerUrn name } } }"""
LIST = """query list($input: ListAccessTokenInput!) {
  listAccessTokens(input: $input) { total tokens { id actorUrn ownerUrn } } }"""


def _principal(server: LiveServer, name: str, password: str | None = PASSWORD, grants: tuple[str, ...] = ()) -> str:
    admin = server.client()
    admin.call("POST", "/v1/access/principals", {"name": name})
    if grants:
        admin.call("POST", "/v1/access/grants", {"principal": name, "resource": "instance", "privileges": list(grants)})
    if password is not None:
        admin.call("PUT", f"/v1/access/principals/{name}/password", {"password": password})
    return f"urn:li:corpuser:{name}"


def _log_in(server: LiveServer, username: str, password: str) -> requests.Session:
    session = requests.Session()
    session.post(f"{server.url}/logIn", json={"username": username, "password": password}, timeout=30)
    return session


def _graphql(session: requests.Session, server: LiveServer, query: str, **variables) -> dict:
    answer = session.post(f"{server.url}/api/v2/graphql", json={"query": query, "variables": variables}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _token_input(actor: str, name: str = "laptop") -> dict:
    return {"type": "PERSONAL", "actorUrn": actor, "duration": "ONE_DAY", "name": name}


def test_the_frontend_check_answers_and_no_password_signs_in_by_default(server: LiveServer):
    assert requests.get(f"{server.url}/admin", timeout=30).status_code == 200
    for username, password in (("datahub", "datahub"), ("admin", "admin"), ("admin", "")):
        answer = requests.post(f"{server.url}/logIn", json={"username": username, "password": password}, timeout=30)
        assert answer.status_code == 401 and "lodestar_session" not in answer.cookies
    _principal(server, "nopassword", password=None)  # a principal without a password cannot sign in
    assert requests.post(f"{server.url}/logIn", json={"username": "nopassword", "password": ""},
                         timeout=30).status_code == 401


def test_a_sign_in_sets_an_httponly_strict_session_that_graphql_and_rest_accept(server: LiveServer):
    urn = _principal(server, "ada", grants=("READ",))
    answer = requests.post(f"{server.url}/logIn", json={"username": "ada", "password": PASSWORD}, timeout=30)
    assert answer.status_code == 200 and answer.json() == {"actor": urn}
    cookies = {c.split("=", 1)[0]: c for c in answer.raw.headers.getlist("Set-Cookie")}
    assert "HttpOnly" in cookies["lodestar_session"] and "SameSite=Strict" in cookies["lodestar_session"]
    assert "SameSite=Strict" in cookies["actor"] and answer.cookies["actor"] == urn
    session = requests.Session()
    session.cookies.update(answer.cookies)
    assert session.get(f"{server.url}/v1/access/grants", timeout=30).json()["principal"] == urn
    found = _graphql(session, server, '{ searchAcrossEntities(input: {query: "*"}) { total } }')
    assert "errors" not in found
    assert requests.get(f"{server.url}/v1/access/grants", timeout=30).status_code == 401  # no cookie, no token


def test_wrong_passwords_and_unknown_users_get_the_same_401(server: LiveServer):
    _principal(server, "ada")
    answers = [requests.post(f"{server.url}/logIn", json=body, timeout=30) for body in (
        {"username": "ada", "password": PASSWORD + "x"}, {"username": "nobody", "password": PASSWORD},
        {"username": "ada"}, {"username": "x" * 500, "password": PASSWORD})]
    assert {a.status_code for a in answers} == {401}
    assert len({a.json()["message"] for a in answers}) == 1
    assert requests.post(f"{server.url}/logIn", data="not json", timeout=30).status_code == 400


def test_a_flood_of_sign_ins_gets_429_beyond_the_password_checks_a_process_runs_at_once(server: LiveServer):
    _principal(server, "flood")
    wrong = {"username": "flood", "password": "guess"}
    with ThreadPoolExecutor(max_workers=24) as pool:
        answers = list(pool.map(lambda _: requests.post(f"{server.url}/logIn", json=wrong, timeout=60), range(48)))
    statuses = Counter(answer.status_code for answer in answers)
    assert set(statuses) <= {401, 429} and statuses[429] > 0 and statuses[401] >= 2, statuses
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.headers["Retry-After"] == "1" and refused.json()["error"] == "overloaded"
    assert "flood" in _log_in(server, "flood", PASSWORD).cookies.get("actor", "")


def test_a_password_is_stored_as_a_salted_scrypt_hash_and_only_an_admin_sets_one(server: LiveServer):
    _principal(server, "ada")
    _principal(server, "bob")
    stored = server.gms.store.get(credentials_urn("urn:li:corpuser:ada"), "accessCredentialsInfo").value
    assert stored["algorithm"] == "scrypt" and PASSWORD not in str(stored) and len(bytes.fromhex(stored["salt"])) == 16
    other = server.gms.store.get(credentials_urn("urn:li:corpuser:bob"), "accessCredentialsInfo").value
    assert other["salt"] != stored["salt"] and other["hash"] != stored["hash"]  # same password, another salt
    bob = _log_in(server, "bob", PASSWORD)
    refused = bob.put(f"{server.url}/v1/access/principals/ada/password", json={"password": "bob knows it now"},
                      timeout=30)
    assert refused.status_code == 403
    short = server.client().request("PUT", "/v1/access/principals/ada/password", {"password": "short"})
    assert short[0] == 400 and "at least 8" in short[1]["message"]
    assert server.client().request("PUT", "/v1/access/principals/ghost/password", {"password": PASSWORD})[0] == 404
    assert _log_in(server, "ada", PASSWORD).cookies.get("actor") == "urn:li:corpuser:ada"  # unchanged


def test_signing_out_revokes_the_session_token(server: LiveServer):
    _principal(server, "ada", grants=("READ",))
    session = _log_in(server, "ada", PASSWORD)
    stolen = session.cookies["lodestar_session"]
    assert session.get(f"{server.url}/logOut", timeout=30).status_code == 200
    replayed = requests.get(f"{server.url}/v1/access/grants", cookies={"lodestar_session": stolen}, timeout=30)
    assert replayed.status_code == 401
    as_bearer = requests.get(f"{server.url}/v1/access/grants", headers={"Authorization": f"Bearer {stolen}"},
                             timeout=30)
    assert as_bearer.status_code == 401


def test_personal_tokens_are_lodestar_tokens_the_cli_api_revokes(server: LiveServer):
    ada = _principal(server, "ada", grants=("READ",))
    _principal(server, "bob")
    session = _log_in(server, "ada", PASSWORD)
    made = _graphql(session, server, CREATE, input=_token_input(ada))["data"]["createAccessToken"]
    assert made["metadata"]["actorUrn"] == made["metadata"]["ownerUrn"] == ada
    bearer = {"Authorization": f"Bearer {made['accessToken']}"}
    assert requests.get(f"{server.url}/v1/access/grants", headers=bearer, timeout=30).json()["principal"] == ada
    refused = _graphql(session, server, CREATE, input=_token_input("urn:li:corpuser:bob"))
    assert refused["data"]["createAccessToken"] is None and "ADMIN" in refused["errors"][0]["message"]

    def listed() -> list[str]:
        found = _graphql(session, server, LIST, input={"filters": [{"field": "ownerUrn", "values": [ada]}]})
        return [t["id"] for t in found["data"]["listAccessTokens"]["tokens"]]
    await_(lambda: listed() == [made["metadata"]["id"]], what="the token listed")
    server.client().call("DELETE", f"/v1/access/tokens/{made['metadata']['id']}")  # `lodestar token revoke`
    assert requests.get(f"{server.url}/v1/access/grants", headers=bearer, timeout=30).status_code == 401
    assert listed() == []


def test_an_admin_makes_tokens_for_others_and_a_user_cannot_revoke_theirs(server: LiveServer):
    boss = _principal(server, "boss", grants=("READ", "WRITE", "ADMIN"))
    ada = _principal(server, "ada")
    made = _graphql(_log_in(server, "boss", PASSWORD), server, CREATE, input=_token_input(ada))
    metadata = made["data"]["createAccessToken"]["metadata"]
    assert (metadata["actorUrn"], metadata["ownerUrn"]) == (ada, boss)
    _principal(server, "eve")
    eve = _log_in(server, "eve", PASSWORD)
    refused = _graphql(eve, server, "mutation r($id: String!) { revokeAccessToken(tokenId: $id) }",
                       id=metadata["id"])
    assert refused["data"] is None and "not found" in refused["errors"][0]["message"]
    token = made["data"]["createAccessToken"]["accessToken"]
    assert requests.get(f"{server.url}/v1/access/grants", headers={"Authorization": f"Bearer {token}"},
                        timeout=30).status_code == 200


def test_sign_up_needs_an_admins_invitation_that_works_once_and_signs_in_no_one(server: LiveServer):
    body = {"fullName": "Grace Hopper", "email": "grace", "password": PASSWORD, "title": "Rear Admiral"}
    assert requests.post(f"{server.url}/signUp", json=body, timeout=30).status_code == 401
    assert requests.post(f"{server.url}/signUp", json={**body, "inviteToken": "0" * 64}, timeout=30).status_code == 401
    _principal(server, "eve")
    not_admin = _graphql(_log_in(server, "eve", PASSWORD), server,
                         "{ getInviteToken(input: {}) { inviteToken } }")
    assert not_admin["data"]["getInviteToken"] is None and "ADMIN" in not_admin["errors"][0]["message"]
    admin = requests.Session()
    admin.headers["Authorization"] = f"Bearer {server.token}"
    invite = _graphql(admin, server, "{ getInviteToken(input: {}) { inviteToken } }")["data"]["getInviteToken"]
    assert requests.get(f"{server.url}/v1/access/grants", timeout=30,
                        headers={"Authorization": f"Bearer {invite['inviteToken']}"}).status_code == 401
    signed_up = requests.post(f"{server.url}/signUp", json={**body, "inviteToken": invite["inviteToken"]}, timeout=30)
    assert signed_up.status_code == 200 and signed_up.cookies["actor"] == "urn:li:corpuser:grace"
    info = server.client().call("GET", "/v1/entities/urn%3Ali%3Acorpuser%3Agrace")
    assert "Grace Hopper" in str(info)
    again = requests.post(f"{server.url}/signUp", timeout=30,
                          json={**body, "email": "mallory", "inviteToken": invite["inviteToken"]})
    assert again.status_code == 401
    assert _log_in(server, "grace", PASSWORD).cookies.get("actor") == "urn:li:corpuser:grace"


def test_the_first_admin_gets_the_start_password_once(server: LiveServer):
    accounts = Accounts(server.gms)
    assert accounts.ensure_admin("datahub", PASSWORD) is True
    assert accounts.ensure_admin("datahub", "another password") is False  # never overwritten
    session = _log_in(server, "datahub", PASSWORD)
    assert session.cookies["actor"] == "urn:li:corpuser:datahub"
    assert _log_in(server, "datahub", "another password").cookies.get("actor") is None
    made = _graphql(session, server, CREATE, input=_token_input("urn:li:corpuser:ada"))
    assert "not found" in made["errors"][0]["message"]  # an admin: refused only for the missing principal


def test_the_cli_sets_a_password_from_standard_input(server: LiveServer, tmp_path):
    _principal(server, "ada", password=None)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LODESTAR_SERVER": server.url, "LODESTAR_TOKEN": server.token}
    done = subprocess.run([sys.executable, "-m", "lodestar.cli.main", "principal", "set-password", "ada"],
                          input=PASSWORD + "\n", capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _log_in(server, "ada", PASSWORD).cookies.get("actor") == "urn:li:corpuser:ada"
    empty = subprocess.run([sys.executable, "-m", "lodestar.cli.main", "principal", "set-password", "ada"],
                           input="", capture_output=True, text=True, env=env, timeout=120)
    assert empty.returncode != 0 and "no password" in empty.stderr and "Traceback" not in empty.stderr


@pytest.mark.parametrize("field", ["username", "password"])
def test_a_login_body_of_the_wrong_shape_is_refused_without_a_500(server: LiveServer, field):
    answer = requests.post(f"{server.url}/logIn", json={"username": "ada", "password": PASSWORD, field: [1]},
                           timeout=30)
    assert answer.status_code == 401


def test_http_basic_carries_a_token_as_its_password(server: LiveServer):
    ada = _principal(server, "ada", grants=("READ",))
    token = server.client().call("POST", "/v1/access/tokens", {"principal": "ada"})["token"]
    assert requests.get(f"{server.url}/v1/access/grants", auth=("anyone", token), timeout=30).json()["principal"] == ada
    wrong = token[:-1] + ("1" if token[-1] == "0" else "0")
    for user, secret in (("ada", PASSWORD), ("ada", ""), ("ada", wrong)):  # a password is no token
        assert requests.get(f"{server.url}/v1/access/grants", auth=(user, secret), timeout=30).status_code == 401
    garbled = requests.get(f"{server.url}/v1/access/grants", headers={"Authorization": "Basic !!"}, timeout=30)
    assert garbled.status_code == 401


def _admin_session(server: LiveServer) -> requests.Session:
    admin = requests.Session()
    admin.headers["Authorization"] = f"Bearer {server.token}"
    return admin


RESET = ("mutation r($input: CreateNativeUserResetTokenInput!) {"
         " createNativeUserResetToken(input: $input) { resetToken } }")


def test_a_reset_token_sets_a_new_password_once_for_its_user_only(server: LiveServer):
    _principal(server, "ada")
    _principal(server, "bob")
    made = _graphql(_admin_session(server), server, RESET, input={"userUrn": "urn:li:corpuser:ada"})
    token = made["data"]["createNativeUserResetToken"]["resetToken"]
    assert requests.get(f"{server.url}/v1/access/grants", headers={"Authorization": f"Bearer {token}"},
                        timeout=30).status_code == 401  # a reset token signs in no one
    for_bob = requests.post(f"{server.url}/resetNativeUserCredentials", timeout=30,
                            json={"email": "bob", "password": "bob's new password", "resetToken": token})
    assert for_bob.status_code == 401
    done = requests.post(f"{server.url}/resetNativeUserCredentials", timeout=30,
                         json={"email": "ada", "password": "ada's new password", "resetToken": token})
    assert done.status_code == 200
    assert _log_in(server, "ada", "ada's new password").cookies.get("actor") == "urn:li:corpuser:ada"
    assert _log_in(server, "ada", PASSWORD).cookies.get("actor") is None
    again = requests.post(f"{server.url}/resetNativeUserCredentials", timeout=30,
                          json={"email": "ada", "password": "a third password", "resetToken": token})
    assert again.status_code == 401
    not_admin = _graphql(_log_in(server, "bob", PASSWORD), server, RESET, input={"userUrn": "urn:li:corpuser:ada"})
    assert not_admin["data"]["createNativeUserResetToken"] is None and "ADMIN" in not_admin["errors"][0]["message"]


def test_a_removed_user_and_its_tokens_are_gone_even_if_the_name_comes_back(server: LiveServer):
    ada = _principal(server, "ada", grants=("READ",))
    session = _log_in(server, "ada", PASSWORD)
    made = _graphql(session, server, CREATE, input=_token_input(ada))["data"]["createAccessToken"]
    bearer = {"Authorization": f"Bearer {made['accessToken']}"}
    users = "query u($input: ListUsersInput!) { listUsers(input: $input) { total users { username } } }"
    admin = _admin_session(server)
    await_(lambda: {"username": "ada"} in _graphql(admin, server, users, input={"start": "0", "count": "50"})
           ["data"]["listUsers"]["users"], what="ada listed (start and count sent as strings)")
    removed = _graphql(admin, server, "mutation r($urn: String!) { removeUser(urn: $urn) }", urn=ada)
    assert removed["data"]["removeUser"] is True
    assert requests.get(f"{server.url}/v1/access/grants", headers=bearer, timeout=30).status_code == 401
    assert session.get(f"{server.url}/v1/access/grants", timeout=30).status_code == 401
    assert _log_in(server, "ada", PASSWORD).cookies.get("actor") is None
    _principal(server, "ada", password="a new ada's password")  # the name again: nothing of the old one
    assert requests.get(f"{server.url}/v1/access/grants", headers=bearer, timeout=30).status_code == 401
    assert server.client().call("GET", "/v1/access/grants?principal=ada")["grants"] == []


ME = "{ me { corpUser { urn username } platformPrivileges { managePolicies generatePersonalAccessTokens } } }"
GET_TOKEN = "query g($input: GetAccessTokenInput!) { getAccessToken(input: $input) { accessToken } }"


def test_me_says_who_signed_in_and_what_it_may_do(server: LiveServer):
    boss = _principal(server, "boss", grants=("READ", "WRITE", "ADMIN"))
    ada = _principal(server, "ada")
    for name, urn, admin in (("boss", boss, True), ("ada", ada, False)):
        found = _graphql(_log_in(server, name, PASSWORD), server, ME)["data"]["me"]
        assert found["corpUser"] == {"urn": urn, "username": name}
        assert found["platformPrivileges"] == {"managePolicies": admin, "generatePersonalAccessTokens": True}


def test_get_access_token_makes_a_token_for_the_caller_only(server: LiveServer):
    ada = _principal(server, "ada")
    session = _log_in(server, "ada", PASSWORD)
    made = _graphql(session, server, GET_TOKEN, input={"type": "PERSONAL", "actorUrn": ada, "duration": "ONE_HOUR"})
    token = made["data"]["getAccessToken"]["accessToken"]
    assert requests.get(f"{server.url}/v1/access/grants", headers={"Authorization": f"Bearer {token}"},
                        timeout=30).json()["principal"] == ada
    listed = _graphql(session, server, CREATE, input=_token_input(ada, "listed"))["data"]["createAccessToken"]
    await_(lambda: _graphql(session, server, LIST, input={})["data"]["listAccessTokens"]["tokens"],
           what="the listed token")
    assert [t["id"] for t in _graphql(session, server, LIST, input={})["data"]["listAccessTokens"]["tokens"]] == [
        listed["metadata"]["id"]]  # getAccessToken's token is not listed, as DataHub's are not
    boss = _principal(server, "boss", grants=("ADMIN",))
    refused = _graphql(session, server, GET_TOKEN, input={"type": "PERSONAL", "actorUrn": boss, "duration": "ONE_HOUR"})
    assert refused["data"]["getAccessToken"] is None and "caller only" in refused["errors"][0]["message"]


def test_a_suspended_or_soft_deleted_user_signs_in_no_more_and_its_session_stops(server: LiveServer):
    ada = _principal(server, "ada", grants=("READ",))
    session = _log_in(server, "ada", PASSWORD)
    who = f"{server.url}/openapi/operations/identity/user/urn"
    assert session.get(who, timeout=30).json() == {"urn": ada}
    stamp = {"time": 1, "actor": "urn:li:corpuser:admin"}
    for aspect, off, on, said in (("corpUserStatus", {"status": "SUSPENDED", "lastModified": stamp},
                                   {"status": "ACTIVE", "lastModified": stamp}, "suspended"),
                                  ("status", {"removed": True}, {"removed": False}, "removed")):
        server.client().propose([mcp(ada, aspect, off)])
        refused = session.get(f"{server.url}/v1/access/grants", timeout=30)
        assert refused.status_code == 403 and refused.json()["message"] == f"principal {ada} is {said}"
        assert _log_in(server, "ada", PASSWORD).cookies.get("actor") is None
        server.client().propose([mcp(ada, aspect, on)])
        assert session.get(f"{server.url}/v1/access/grants", timeout=30).status_code == 200
    server.client().call("DELETE", f"/v1/entities/{quote(ada, safe='')}?hard=true")
    refused = session.get(who, timeout=30)
    assert refused.status_code == 403 and refused.json()["message"] == f"principal {ada} no longer exists"
    assert requests.get(who, headers={"Authorization": "Bearer not-a-token"}, timeout=30).status_code == 401
