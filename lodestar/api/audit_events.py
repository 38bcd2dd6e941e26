"""DataHub's `POST /openapi/v1/events/audit/search`: the security audit log (gms/access/audit.py),
newest first. A principal with ADMIN on the instance reads every event; any other principal its
own (those it is the actor of: its sign-ins, failed ones included, and its tokens), and asking
for someone else's is 403."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from gms.access.accounts import Accounts
from lodestar.api.audit_search import AuditQuery, AuditQueryError, search
from lodestar.api.context import api_of, error, principal_of, query_route, read_json

PATH = "/openapi/v1/events/audit/search"


async def audit_search(request: web.Request) -> web.Response:
    api, actor = api_of(request), principal_of(request)
    body = await read_json(request) if request.can_read_body else None

    def answer() -> dict[str, Any]:
        query = AuditQuery.parse(request.query, body)
        if not Accounts(api.gms).is_admin(actor):
            query = query.only(actor)
        return search(api.read_models.timeseries, query)

    try:
        return web.json_response(await asyncio.to_thread(answer))
    except AuditQueryError as err:
        return error(err.status, "forbidden" if err.status == 403 else "invalid_request", str(err))


_TIME = {"type": "integer", "format": "int64", "minimum": -1}
OPENAPI_PATHS: dict[str, Any] = {PATH: {"post": {
    "summary": "DataHub: search the security audit log (sign-ins, tokens, users, grants, policies, ingestion"
               " sources), newest first; ADMIN reads every event, others their own",
    "parameters": [
        {"name": "startTime", "in": "query", "schema": _TIME, "description": "Epoch ms; -1: a day before endTime"},
        {"name": "endTime", "in": "query", "schema": _TIME, "description": "Epoch ms; -1: now"},
        {"name": "size", "in": "query", "schema": {"type": "integer", "default": 10, "maximum": 1000}},
        {"name": "scrollId", "in": "query", "schema": {"type": "string"},
         "description": "The nextScrollId of the previous page"}],
    "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
        name: {"type": "array", "items": {"type": "string"}}
        for name in ("eventTypes", "entityTypes", "aspectTypes", "actorUrns")}}}}},
    "responses": {"200": {"description": "{usageEvents, count, total, nextScrollId}"},
                  "400": {"description": "A bad parameter or body"},
                  "403": {"description": "Another principal's events, without ADMIN on the instance"}}}}}


def add_routes(app: web.Application) -> None:
    app.router.add_post(PATH, query_route(audit_search))
