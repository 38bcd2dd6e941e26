"""DataHub-compatible Rest.li routes, so DataHub's unmodified `DatahubRestEmitter` works:
`GET /config`, `POST /aspects?action=ingestProposal|ingestProposalBatch`,
`POST /entities?action=delete`."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gms.access import REMOVE
from gms.write_path import Result
from lodestar.api import datahub_reads
from lodestar.api.access import require
from lodestar.api.context import api_of, error, principal_of, read_json
from lodestar.api.native import conditional_headers, enqueue, parse_all
from lodestar.api.openapi import ERROR_OR_RESULTS, OBJECT, RESULTS, query_param, response


async def config(request: web.Request) -> web.Response:
    # No "versions" key: DataHub's emitter then keeps to the Rest.li endpoints below.
    return web.json_response({"noCode": "true", "product": "lodestar"})


def _is_async(body: dict[str, Any]) -> bool:
    return str(body.get("async", "false")).lower() == "true"


def _failure_response(results: list[Result]) -> web.Response:
    failures = [(i, r) for i, r in enumerate(results) if r.failure is not None]
    first = failures[0][1].failure
    assert first is not None
    if len(results) == 1:
        return error(first.http_status, first.code, first.message, **_extra(first))
    listing = "; ".join(f"proposal {i}: {r.failure.message}" for i, r in failures[:10])  # type: ignore[union-attr]
    return error(first.http_status, first.code, f"{len(failures)} of {len(results)} proposals failed: {listing}",
                 results=[r.to_json() for r in results])


def _extra(failure: Any) -> dict[str, Any]:
    return {"expected": failure.expected, "actual": failure.actual} if failure.expected is not None else {}


async def aspects(request: web.Request) -> web.Response:
    action = request.query.get("action")
    if action in datahub_reads.ASPECT_ACTIONS:  # reads: getTimeseriesAspectValues, getCount
        return await datahub_reads.aspect_action(request)
    body = await read_json(request)
    if not isinstance(body, dict):
        return error(400, "invalid_request", "body must be a JSON object")
    if action == "ingestProposal":
        items = [body.get("proposal")]
    elif action == "ingestProposalBatch":
        items = body.get("proposals")
        if not isinstance(items, list):
            return error(400, "invalid_request", 'ingestProposalBatch needs {"proposals": [...]}')
    else:
        return error(400, "unknown_action", f"unknown action {action!r} (ingestProposal, ingestProposalBatch)")
    api = api_of(request)
    if len(items) > api.gms.limits.max_batch:
        return error(413, "too_large", f"{len(items)} proposals, over the limit of {api.gms.limits.max_batch}")
    parsed = parse_all(items)
    if _is_async(body):
        return await enqueue(request, parsed)
    results = await api.apply(parsed, principal_of(request), conditional_headers(request))
    if any(r.failure is not None for r in results):
        return _failure_response(results)
    urns = [p.entity_urn for p in parsed]
    return web.json_response({"value": urns[0] if action == "ingestProposal" else urns})


async def entities(request: web.Request) -> web.Response:
    action = request.query.get("action")
    if action in datahub_reads.ENTITY_ACTIONS:  # search, listUrns, deleteReferences
        return await datahub_reads.entity_action(request)
    if action != "delete":
        return error(400, "unknown_action", f"unknown action {action!r} (delete)")
    body = await read_json(request)
    urn = body.get("urn") if isinstance(body, dict) else None
    if not isinstance(urn, str):
        return error(400, "invalid_request", 'delete needs {"urn": "..."}')
    require(request, REMOVE, urn)
    api = api_of(request)
    result = await api.run(api.gms.delete_entity, urn, True, principal_of(request))
    if result is None:
        return error(404, "not_found", f"entity {urn} not found")
    return web.json_response({"value": {"urn": urn}})


_BODY = {"required": True, "content": {"application/json": {"schema": OBJECT}}}
OPENAPI_PATHS: dict[str, Any] = {
    "/aspects": {"post": {
        "summary": "DataHub Rest.li: ?action=ingestProposal | ingestProposalBatch",
        "parameters": [query_param("action", required=True,
                                   enum=["ingestProposal", "ingestProposalBatch", *datahub_reads.ASPECT_ACTIONS])],
        "requestBody": _BODY,
        "responses": {"200": response("Applied", OBJECT), "202": response("Queued", RESULTS),
                      "400": response("Invalid request or proposal", ERROR_OR_RESULTS),
                      "412": response("Precondition failed"), "413": response("Over a size limit")}}},
    "/entities": {"post": {
        "summary": "DataHub Rest.li: ?action=delete {\"urn\": ...}",
        "parameters": [query_param("action", required=True, enum=["delete", *datahub_reads.ENTITY_ACTIONS])],
        "requestBody": _BODY,
        "responses": {"200": response("Deleted", OBJECT), "400": response("Invalid request"),
                      "404": response("No such entity"), "412": response("Refused")}}},
    "/config": {"get": {"summary": "Server configuration (DataHub clients check noCode)", "security": [],
                        "responses": {"200": response("Configuration", OBJECT)}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/config", config)
    app.router.add_post("/aspects", aspects)
    app.router.add_post("/entities", entities)
