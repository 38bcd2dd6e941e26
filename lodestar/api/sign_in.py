"""Signing in the way DataHub's frontend does: `POST /logIn` with a username and password gives
a session (a revocable Lodestar token in an HttpOnly, SameSite=Strict cookie, and the `actor`
cookie DataHub's clients read), `GET /logOut` ends it, `POST /signUp` creates a user with an
invite token, `POST /resetNativeUserCredentials` sets a password with a reset token, `GET
/admin` answers that the frontend is up, `GET /openapi/operations/identity/user/urn` who the
caller is; `PUT /v1/access/principals/{name}/password` lets an admin set a password.
`session_authorization` turns a session cookie (or HTTP Basic carrying a token) into the bearer
header the authentication middleware checks (a token of a removed, suspended or deleted
principal: 403)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from gms.access.accounts import AccountError, Accounts
from gms.errors import ProposalFailed
from lodestar.api.context import GMS_KEY, api_of, error, principal_of, read_json

ACCOUNTS_KEY = web.AppKey("accounts", Accounts)
SESSION_COOKIE = "lodestar_session"
ACTOR_COOKIE = "actor"
PUBLIC = frozenset({"/admin", "/logIn", "/logOut", "/signUp", "/resetNativeUserCredentials"})
WRONG = "invalid username or password"  # one answer whichever part was wrong
# Password hashes (scrypt, ~50 ms of CPU and 16 MiB each) computed at once by one process for
# requests that need no token; one more is refused with 429, so a flood of sign-ins cannot take
# the server's CPU or memory.
PASSWORD_CHECKS = 2
CHECKS_KEY = web.AppKey("password_checks", asyncio.Semaphore)


def session_authorization(request: web.Request) -> str | None:
    """The bearer header to check: the request's own; HTTP Basic whose password is a token (as
    Kafka clients send a schema registry's credentials, from `http://user:TOKEN@host/`; the
    user name is not checked); else the session cookie's token."""
    given = request.headers.get("Authorization")
    if given and given[:6].lower() == "basic ":
        try:
            _, _, secret = base64.b64decode(given[6:].strip(), validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return f"Bearer {secret}" if secret else None
    if given:
        return given
    session = request.cookies.get(SESSION_COOKIE)
    return f"Bearer {session}" if session else None


def accounts_of(request: web.Request) -> Accounts:
    return request.app[ACCOUNTS_KEY]


async def _hashing(request: web.Request, work: Callable[[], Awaitable[web.Response]]) -> web.Response:
    """`work` (which checks or sets a password) in one of the process's PASSWORD_CHECKS slots, or
    429 with Retry-After when they are all taken."""
    slots = request.app[CHECKS_KEY]
    if slots.locked():
        return error(429, "overloaded", f"{PASSWORD_CHECKS} password checks are under way; retry in a second",
                     headers={"Retry-After": "1"})
    async with slots:
        return await work()


async def admin_page(request: web.Request) -> web.Response:
    return web.Response(text="<!doctype html><title>Lodestar</title><p>Lodestar is up: the web UI is at "
                             "<a href=\"/\">/</a>.</p>", content_type="text/html")


def _set_session(response: web.Response, request: web.Request, token: str, principal: str) -> None:
    secure = request.secure
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="Strict", secure=secure, path="/")
    response.set_cookie(ACTOR_COOKIE, principal, samesite="Strict", secure=secure, path="/")


async def _credentials_body(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "invalid_request", "status": 400,
                                                  "message": "body must be a JSON object"}),
                                 content_type="application/json")
    return body


async def log_in(request: web.Request) -> web.Response:
    return await _hashing(request, lambda: _log_in(request))


async def _log_in(request: web.Request) -> web.Response:
    body = await _credentials_body(request)
    api, accounts = api_of(request), accounts_of(request)
    principal = await api.run(accounts.sign_in, body.get("username"), body.get("password"))
    if principal is None:
        return error(401, "unauthorized", WRONG)
    token = await api.run(accounts.start_session, principal)
    response = web.json_response({"actor": principal})
    _set_session(response, request, token, principal)
    return response


async def log_out(request: web.Request) -> web.Response:
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        await api_of(request).run(accounts_of(request).end_session, session)
    response = web.json_response({"signedOut": True})
    response.del_cookie(SESSION_COOKIE, path="/")
    response.del_cookie(ACTOR_COOKIE, path="/")
    return response


async def sign_up(request: web.Request) -> web.Response:
    return await _hashing(request, lambda: _sign_up(request))


async def _sign_up(request: web.Request) -> web.Response:
    body = await _credentials_body(request)
    api, accounts = api_of(request), accounts_of(request)
    info = {"fullName": body.get("fullName"), "displayName": body.get("fullName"), "email": body.get("email"),
            "title": body.get("title")}
    try:
        principal = await api.run(accounts.sign_up, body.get("inviteToken"), body.get("email"),
                                  body.get("password"), info)
        token = await api.run(accounts.start_session, principal)
    except AccountError as err:
        return error(err.status, "unauthorized" if err.status == 401 else "invalid_request", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)
    response = web.json_response({"actor": principal})
    _set_session(response, request, token, principal)
    return response


async def reset_credentials(request: web.Request) -> web.Response:
    return await _hashing(request, lambda: _reset_credentials(request))


async def _reset_credentials(request: web.Request) -> web.Response:
    body = await _credentials_body(request)
    api, accounts = api_of(request), accounts_of(request)
    try:
        principal = await api.run(accounts.reset_password, body.get("resetToken"), body.get("email"),
                                  body.get("password"))
    except AccountError as err:
        return error(err.status, "unauthorized" if err.status == 401 else "invalid_request", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)
    return web.json_response({"actor": principal, "passwordSet": True})


async def set_password(request: web.Request) -> web.Response:
    body = await _credentials_body(request)
    api, accounts = api_of(request), accounts_of(request)
    try:
        principal = await api.run(accounts.set_password, principal_of(request), request.match_info["name"],
                                  body.get("password"))
    except AccountError as err:
        return error(err.status, "forbidden" if err.status == 403 else
                     "not_found" if err.status == 404 else "invalid_request", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)
    return web.json_response({"principal": principal, "passwordSet": True})


async def who_am_i(request: web.Request) -> web.Response:
    """DataHub's `GET /openapi/operations/identity/user/urn`: `{"urn"}` of the caller."""
    return web.json_response({"urn": principal_of(request)})


def _op(summary: str, responses: dict[str, str], body: bool = True, public: bool = True) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary,
                          "responses": {code: {"description": text} for code, text in responses.items()}}
    if public:  # the sign-in routes (PUBLIC) take no token
        op["security"] = []
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
    return op


OPENAPI_PATHS: dict[str, Any] = {
    "/admin": {"get": _op("DataHub's frontend check: 200 when Lodestar is up", {"200": "Up"}, body=False)},
    "/logIn": {"post": _op("Sign in {username, password}: sets the session (HttpOnly) and actor cookies",
                           {"200": "Signed in", "400": "Not a JSON object", "401": "Wrong username or password",
                            "429": "Too many password checks under way"})},
    "/logOut": {"get": _op("Sign out: revokes the session and clears its cookies", {"200": "Signed out"},
                           body=False)},
    "/signUp": {"post": _op("Create a user {email (the username), password, fullName, title, inviteToken} and sign"
                            " in", {"200": "Signed up", "400": "Bad username or password",
                                    "401": "Invalid invite token", "409": "The user exists"})},
    "/resetNativeUserCredentials": {"post": _op(
        "Set a new password {email (the username), password, resetToken} with an admin's reset token",
        {"200": "Set", "400": "Not a JSON object, or a bad password", "401": "Invalid reset token"})},
    "/openapi/operations/identity/user/urn": {"get": _op(
        "DataHub: {urn} of the caller (a removed, suspended or deleted principal's token: 403)",
        {"200": "The caller", "403": "The principal may not act"}, body=False, public=False)},
    "/v1/access/principals/{name}/password": {"put": _op(
        "Set a principal's password {password} (needs ADMIN on the instance)",
        {"200": "Set", "400": "Too short or too long", "403": "No ADMIN privilege", "404": "No such principal"},
        public=False)},
}


def add_routes(app: web.Application) -> None:
    app[ACCOUNTS_KEY] = Accounts(app[GMS_KEY].gms)
    app[CHECKS_KEY] = asyncio.Semaphore(PASSWORD_CHECKS)
    app.router.add_get("/admin", admin_page)
    app.router.add_post("/logIn", log_in)
    app.router.add_get("/logOut", log_out)
    app.router.add_post("/signUp", sign_up)
    app.router.add_post("/resetNativeUserCredentials", reset_credentials)
    app.router.add_put("/v1/access/principals/{name}/password", set_password)
    app.router.add_get("/openapi/operations/identity/user/urn", who_am_i)
