"""DataHub's Rest.li relationships route, `GET /relationships?urn=&direction=INCOMING|OUTGOING&types=
[&start=&count=]` (`types` repeated or `List(a,b)`): the answer of the OpenAPI relationships route
(`datahub_reads.related_entities`: the same reads, authorization and refusals), in Rest.li's
shape `{"start", "count", "total", "relationships": [{"type", "entity"}]}`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from yarl import URL

from lodestar.api import datahub_reads
from lodestar.api.limits import MAX_COUNT, MAX_START
from lodestar.api.openapi import OBJECT, query_param, response

_RENAMED = {"types": "relationshipTypes"}  # Rest.li's parameter -> the OpenAPI route's


async def relationships(request: web.Request) -> web.Response:
    parts = []
    for part in request.rel_url.raw_query_string.split("&"):
        key, sep, value = part.partition("=")
        parts.append(f"{_RENAMED.get(unquote(key), key)}{sep}{value}")
    if request.query.get("direction") is None:
        raise datahub_reads.refuse(400, "invalid_request", "direction: INCOMING or OUTGOING is required")
    renamed = URL.build(path=request.rel_url.raw_path, query_string="&".join(parts), encoded=True)
    answer = await datahub_reads.related_entities(request.clone(rel_url=renamed))
    found: dict[str, Any] = json.loads(answer.text or "{}")
    return web.json_response({
        "start": found["start"], "count": found["count"], "total": found["total"],
        "relationships": [{"type": item["relationshipType"], "entity": item["urn"]} for item in found["entities"]]})


OPENAPI_PATHS: dict[str, Any] = {
    "/relationships": {"get": {
        "summary": "DataHub Rest.li: the entities related to one, {\"relationships\": [{\"type\", \"entity\"}]}",
        "parameters": [query_param("urn", required=True),
                       query_param("direction", required=True, enum=["INCOMING", "OUTGOING"]),
                       query_param("types", "Repeated, or List(a,b)"),
                       query_param("start", kind="integer", minimum=0, maximum=MAX_START),
                       query_param("count", kind="integer", minimum=1, maximum=MAX_COUNT)],
        "responses": {"200": response("The related entities", OBJECT), "400": response("Invalid parameter"),
                      "403": response("The caller may not read it")}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/relationships", relationships)
