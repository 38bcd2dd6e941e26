"""Native routes: /v1/proposals, /v1/entities/..., /health."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gms.access import READ, REMOVE
from gms.conditions import NAMES as CONDITION_HEADERS
from gms.errors import ProposalFailed
from gms.store import StoredAspect
from gms.write_path import Result
from ingest.proposal import ProposalError, parse_proposal
from lodestar.api.access import require
from lodestar.api.context import Api, api_of, decode_json, error, json_text, principal_of
from lodestar.api.limits import MAX_VERSION, bool_param, int_param
from lodestar.api.openapi import ASPECT, ERROR_OR_RESULTS, OBJECT, RESULTS, URN, query_param, response


def conditional_headers(request: web.Request) -> dict[str, str]:
    """The conditional-write headers of an HTTP request; they apply to each proposal in it."""
    return {name: request.headers[name] for name in CONDITION_HEADERS if name in request.headers}


def batch_status(results: list[Result]) -> int:
    """200 when every proposal succeeded; a single proposal's own status when it failed;
    207 (Multi-Status) when some of several failed."""
    failures = [r for r in results if r.failure is not None]
    if not failures:
        return 200
    return failures[0].http_status if len(results) == 1 else 207


def parse_all(items: list[Any]) -> list:
    parsed = []
    for item in items:
        try:
            parsed.append(parse_proposal(item))
        except ProposalError as err:
            parsed.append(err)
    return parsed


async def post_proposals(request: web.Request) -> web.Response:
    api = api_of(request)
    answer = await api.run(_answer_proposals, api, await request.read(), principal_of(request),
                           conditional_headers(request))
    if isinstance(answer, web.Response):
        return answer
    status, body, wait = answer
    if wait:
        body["indexed"] = await api.wait_for_index()
    return web.json_response(body, status=status, dumps=json_text)


def _answer_proposals(api: Api, raw: bytes, actor: str, headers: dict[str, str]
                      ) -> web.Response | tuple[int, dict[str, Any], bool]:
    """The request decoded, applied (or queued) and answered in one call on the writer thread:
    the request's objects (some 100,000 for 1,000 proposals) are freed before the cyclic garbage
    collector runs again, which otherwise scans them all once after every batch. The status,
    the answer and whether to wait for the index, or an error response."""
    body = decode_json(raw, api.max_json_items)
    if not isinstance(body, dict) or not isinstance(body.get("proposals"), list):
        return error(400, "invalid_request", 'body must be {"proposals": [MCP, ...], "async": false}')
    items = body["proposals"]
    flags = [name for name in ("async", "waitForIndex") if not isinstance(body.get(name, False), bool)]
    if flags:
        return error(400, "invalid_request", f"{flags[0]}: must be true or false")
    if len(items) > api.gms.limits.max_batch:
        return error(413, "too_large", f"{len(items)} proposals, over the limit of {api.gms.limits.max_batch}")
    parsed = parse_all(items)
    if body.get("async") is True:
        return enqueue(api, parsed, actor, headers)
    results = api.gms.apply(parsed, actor, headers, authorize=True)
    return batch_status(results), {"results": [r.to_json() for r in results]}, body.get("waitForIndex") is True


def enqueue(api: Api, parsed: list, actor: str, headers: dict[str, str]) -> tuple[int, dict[str, Any], bool]:
    """Check what can be checked without the stored state (validation and authorization, as a
    synchronous request is checked), then queue the rest on the MCP topic."""
    results: list[dict[str, Any]] = []
    queued, refused = [], []
    for proposal, checked in zip(parsed, api.gms.check(parsed, actor, headers), strict=True):
        if isinstance(checked, ProposalFailed):
            results.append(Result("failed", failure=checked).to_json())
            refused.append(checked.http_status)
            continue
        proposal.headers = {**headers, **proposal.headers}
        queued.append(proposal)
        results.append({"status": "queued"})
    if queued:
        api.gms.enqueue(queued, actor)
        return 202, {"results": results}, False
    return 403 if refused and set(refused) == {403} else 400, {"results": results}, False


def aspect_json(row: StoredAspect) -> dict[str, Any]:
    return {"version": row.version, "value": row.value, "deleted": not row.exists,
            "systemMetadata": row.system_metadata}


async def get_entity(request: web.Request) -> web.Response:
    urn = request.match_info["urn"]
    require(request, READ, urn)
    rows = api_of(request).gms.store.entity(urn)
    if not rows:
        return error(404, "not_found", f"entity {urn} not found")
    return web.json_response({
        "urn": urn,
        "entityType": urn.removeprefix("urn:li:").partition(":")[0],
        "aspects": {row.aspect: aspect_json(row) for row in sorted(rows, key=lambda r: r.aspect)},
    })


def _version_param(request: web.Request) -> int | None:
    return int_param(request, "version", None, 1, MAX_VERSION)


async def get_aspect(request: web.Request) -> web.Response:
    urn, aspect = request.match_info["urn"], request.match_info["aspect"]
    require(request, READ, urn)
    version = _version_param(request)
    row = api_of(request).gms.store.get(urn, aspect, version)
    if row is None:
        which = f"version {version} of " if version else ""
        return error(404, "not_found", f"{which}aspect {aspect} of {urn} not found")
    if version is None and not row.exists:
        return error(404, "not_found", f"aspect {aspect} of {urn} was deleted at version {row.version}")
    return web.json_response({"urn": urn, "aspect": aspect, **aspect_json(row)})


async def get_versions(request: web.Request) -> web.Response:
    urn, aspect = request.match_info["urn"], request.match_info["aspect"]
    require(request, READ, urn)
    rows = api_of(request).gms.store.history(urn, aspect)
    if not rows:
        return error(404, "not_found", f"aspect {aspect} of {urn} not found")
    return web.json_response({"urn": urn, "aspect": aspect, "versions": [aspect_json(r) for r in rows]})


async def delete_entity(request: web.Request) -> web.Response:
    api = api_of(request)
    urn = request.match_info["urn"]
    hard = bool_param(request, "hard")
    require(request, REMOVE, urn)
    result = await api.run(api.gms.delete_entity, urn, hard, principal_of(request), True)
    if result is None:
        return error(404, "not_found", f"entity {urn} not found")
    return web.json_response({"urn": urn, "hard": hard, **result.to_json()}, status=result.http_status)


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


_CONDITIONAL = [
    {"name": name, "in": "header", "required": False, "schema": {"type": "string"}, "description": doc}
    for name, doc in (
        ("If-Version-Match", "Expected current version of each aspect; -1 = must not exist"),
        ("If-Unmodified-Since", "ISO-8601; fail if the aspect changed after this time"),
        ("If-Modified-Since", "ISO-8601; fail unless the aspect changed after this time"),
        ("If-None-Match", "'*' with CREATE/CREATE_ENTITY: drop silently when it exists"),
    )
]
OPENAPI_PATHS: dict[str, Any] = {
    "/v1/proposals": {"post": {
        "summary": "Apply proposals in order (or queue them with async: true)",
        "parameters": _CONDITIONAL,
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["proposals"], "properties": {
                "proposals": {"type": "array", "description": "MCPs (schema Proposal); each is checked on its"
                              " own and a bad one fails in its result, not the request", "items": {}},
                "async": {"type": "boolean", "default": False},
                "waitForIndex": {"type": "boolean", "default": False}}}}}},
        "responses": {
            "200": response("Every proposal succeeded", RESULTS),
            "202": response("Queued on the MCP topic", RESULTS),
            "207": response("Some of several proposals failed; see each result", RESULTS),
            "400": response("Invalid request, or its single proposal (or every async one) is invalid",
                            ERROR_OR_RESULTS),
            "403": response("Its single proposal (or every async one) is one the caller may not make",
                            ERROR_OR_RESULTS),
            "412": response("A single proposal failed a precondition", RESULTS),
            "413": response("Over the size limit (the request, or its single proposal)", ERROR_OR_RESULTS)}}},
    "/v1/entities/{urn}": {
        "get": {"summary": "Latest version of every aspect", "parameters": [URN],
                "responses": {"200": response("The entity", OBJECT), "404": response("No such entity")}},
        "delete": {"summary": "Soft delete (status.removed), or purge with hard=true",
                   "parameters": [URN, query_param("hard", kind="boolean")],
                   "responses": {"200": response("Deleted", OBJECT), "400": response("Invalid request"),
                                 "404": response("No such entity"), "412": response("Refused")}}},
    "/v1/entities/{urn}/aspects/{aspect}": {"get": {
        "summary": "One aspect, latest or a given version",
        "parameters": [URN, ASPECT, query_param("version", kind="integer", minimum=1, maximum=MAX_VERSION)],
        "responses": {"200": response("The aspect", {"$ref": "#/components/schemas/Aspect"}),
                      "400": response("Invalid version"), "404": response("No such aspect or version")}}},
    "/v1/entities/{urn}/aspects/{aspect}/versions": {"get": {
        "summary": "Every version of an aspect", "parameters": [URN, ASPECT],
        "responses": {"200": response("The versions", OBJECT), "404": response("No such aspect")}}},
    "/health": {"get": {"summary": "Liveness", "security": [],
                        "responses": {"200": response("Alive", OBJECT)}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/proposals", post_proposals)
    app.router.add_get("/v1/entities/{urn}", get_entity)
    app.router.add_delete("/v1/entities/{urn}", delete_entity)
    app.router.add_get("/v1/entities/{urn}/aspects/{aspect}", get_aspect)
    app.router.add_get("/v1/entities/{urn}/aspects/{aspect}/versions", get_versions)
    app.router.add_get("/health", health)
