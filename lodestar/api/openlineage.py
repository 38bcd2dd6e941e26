"""OpenLineage intake: POST /api/v1/lineage takes a RunEvent (as the openlineage-python
client's HTTP transport sends it) and applies its MCPs (`ingest.openlineage`); also at DataHub's
path of it, POST /openapi/openlineage/api/v1/lineage."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ingest.openlineage import OpenLineageError, proposals
from ingest.proposal import ProposalError, parse_proposal
from lodestar.api.context import api_of, error, principal_of, read_json
from lodestar.api.openapi import JSON, OBJECT, response


async def lineage(request: web.Request) -> web.Response:
    try:
        items = proposals(await read_json(request))
        parsed = [parse_proposal(item) for item in items]
    except (OpenLineageError, ProposalError) as err:
        return error(400, "invalid_event", str(err))
    results = await api_of(request).apply(parsed, principal_of(request), {})
    failed = [(item, r) for item, r in zip(items, results, strict=True) if r.failure is not None]
    if failed:
        item, result = failed[0]
        return error(result.http_status, result.failure.code,
                     f"{item['entityUrn']} {item['aspectName']}: {result.failure.message}")
    return web.json_response({"proposals": [r.to_json() for r in results]}, status=201)


_INTAKE = {"post": {
    "summary": "OpenLineage RunEvent intake",
    "requestBody": {"required": True, "content": {JSON: {"schema": OBJECT}}},
    "responses": {"201": response("The event's proposals, applied", OBJECT),
                  "400": response("An unreadable event"), "403": response("A proposal was refused"),
                  "412": response("A proposal's condition failed")}}}
DATAHUB_PATH = "/openapi/openlineage/api/v1/lineage"  # where DataHub's GMS takes them
OPENAPI_PATHS: dict[str, Any] = {"/api/v1/lineage": _INTAKE, DATAHUB_PATH: _INTAKE}


def add_routes(app: web.Application) -> None:
    app.router.add_post("/api/v1/lineage", lineage)
    app.router.add_post(DATAHUB_PATH, lineage)
