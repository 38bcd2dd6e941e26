"""Access routes: principals, tokens and grants (`/v1/access/...`), and `require`, the check
every route makes before it reads or changes an entity."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from gms.access.admin import AccessAdmin, AccessError
from gms.errors import ProposalFailed
from lodestar.api.context import GMS_KEY, api_of, error, principal_of, read_json

ADMIN_KEY = web.AppKey("access_admin", AccessAdmin)


def require(request: web.Request, privileges: Iterable[str], urn: str) -> None:
    """Raises 403 forbidden unless the caller holds one of `privileges` on `urn` or above it."""
    try:
        api_of(request).gms.access.require(principal_of(request), privileges, urn)
    except ProposalFailed as failure:
        raise web.HTTPForbidden(text=json.dumps({"error": failure.code, "message": failure.message, "status": 403}),
                                content_type="application/json") from None


def readable(request: web.Request) -> frozenset[str] | None:
    """The resources under which the caller may read (None: everything)."""
    return api_of(request).gms.access.readable(principal_of(request))


async def _call(request: web.Request, fn: Any, *args: Any) -> web.Response:
    try:
        return web.json_response(await api_of(request).run(fn, principal_of(request), *args))
    except AccessError as err:
        return error(err.status, "not_found" if err.status == 404 else "invalid_request", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)


async def _body(request: web.Request, *required: str) -> dict[str, Any]:
    body = await read_json(request)
    missing = [name for name in required if not isinstance(body, dict) or not isinstance(body.get(name), (str, list))]
    if missing:
        raise web.HTTPBadRequest(text=json.dumps({"error": "invalid_request", "status": 400,
                                                  "message": f"body needs {', '.join(missing)}"}),
                                 content_type="application/json")
    return body


def _admin(request: web.Request) -> AccessAdmin:
    return request.app[ADMIN_KEY]


async def add_principal(request: web.Request) -> web.Response:
    body = await _body(request, "name")
    return await _call(request, lambda actor: {"principal": _admin(request).add_principal(
        actor, body["name"], body.get("displayName"))})


async def remove_principal(request: web.Request) -> web.Response:
    return await _call(request, lambda actor: {"principal": _admin(request).remove_principal(
        actor, request.match_info["name"])})


async def create_token(request: web.Request) -> web.Response:
    body = await _body(request, "principal")
    return await _call(request, lambda actor: _admin(request).create_token(actor, body["principal"], body.get("name")))


async def revoke_token(request: web.Request) -> web.Response:
    def revoke(actor: str) -> dict[str, Any]:
        _admin(request).revoke_token(actor, request.match_info["id"])
        return {"id": request.match_info["id"], "revoked": True}
    return await _call(request, revoke)


async def get_grants(request: web.Request) -> web.Response:
    def grants(actor: str) -> dict[str, Any]:
        principal = request.query.get("principal") or actor
        if principal.removeprefix("urn:li:corpuser:") != actor.removeprefix("urn:li:corpuser:"):
            _admin(request).require_admin(actor)
        return {"principal": principal, "grants": _admin(request).grants(principal)}
    return await _call(request, grants)


async def add_grant(request: web.Request) -> web.Response:
    body = await _body(request, "principal", "resource", "privileges")
    return await _call(request, lambda actor: {"principal": body["principal"], "grants": _admin(request).grant(
        actor, body["principal"], body["resource"], body["privileges"])})


async def remove_grant(request: web.Request) -> web.Response:
    query = request.query
    if not query.get("principal") or not query.get("resource"):
        return error(400, "invalid_request", "principal and resource are required query parameters")
    privileges = [p for p in query.get("privileges", "").split(",") if p] or None
    return await _call(request, lambda actor: {"principal": query["principal"], "grants": _admin(request).revoke(
        actor, query["principal"], query["resource"], privileges)})


def _op(summary: str, body: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {
        "200": {"description": "Done"}, "400": {"description": "Invalid request"},
        "403": {"description": "No ADMIN privilege on the instance"}, "404": {"description": "No such principal"}}}
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
    return op


OPENAPI_PATHS: dict[str, Any] = {
    "/v1/access/principals": {"post": _op("Add a principal {name, displayName}", body=True)},
    "/v1/access/principals/{name}": {"delete": _op("Remove a principal (its tokens stop working)")},
    "/v1/access/tokens": {"post": _op("Create a token {principal, name}: the token is shown once", body=True)},
    "/v1/access/tokens/{id}": {"delete": _op("Revoke a token by its id (SHA-256)")},
    "/v1/access/grants": {
        "get": _op("A principal's grants (?principal=; default: one's own)"),
        "post": _op("Grant {principal, resource, privileges}", body=True),
        "delete": _op("Revoke (?principal=&resource=&privileges=READ,WRITE; all without privileges)")},
}


def add_routes(app: web.Application) -> None:
    app[ADMIN_KEY] = AccessAdmin(app[GMS_KEY].gms)
    app.router.add_post("/v1/access/principals", add_principal)
    app.router.add_delete("/v1/access/principals/{name}", remove_principal)
    app.router.add_post("/v1/access/tokens", create_token)
    app.router.add_delete("/v1/access/tokens/{id}", revoke_token)
    app.router.add_get("/v1/access/grants", get_grants)
    app.router.add_post("/v1/access/grants", add_grant)
    app.router.add_delete("/v1/access/grants", remove_grant)

