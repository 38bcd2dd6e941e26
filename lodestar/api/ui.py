"""The web UI: the bundle built from `lodestar/ui` (bin/setup runs `npm ci` and `npm run build`)
served as static files at `/` and `/ui/`. The pages call the REST API with the token the user
enters; the files themselves need no token. `GET /v1/ui/privileges[?urn=]` tells the pages who
the caller is and what it may do to an entity (or the instance), so they offer only the
controls that work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web

from gms.access import INSTANCE, PRIVILEGES
from lodestar.api.context import UI_FILES, api_of, error, principal_of

DIST = Path(__file__).resolve().parent.parent / "ui" / "dist"
NOT_BUILT = ("<!doctype html><title>Lodestar</title><p>The web UI is not built: run <code>bin/setup</code> "
             "(it runs <code>npm ci &amp;&amp; npm run build</code> in <code>lodestar/ui</code>).</p>")


async def index(request: web.Request) -> web.StreamResponse:
    page = DIST / "index.html"
    if not page.is_file():
        return web.Response(text=NOT_BUILT, content_type="text/html", status=503)
    return web.FileResponse(page, headers={"Cache-Control": "no-cache"})


async def asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if "\x00" in name or "/" in name or "\\" in name:  # no file has such a name
        raise web.HTTPNotFound(text=f"no UI file {name!r}")
    path = (DIST / name).resolve()
    if path.parent != DIST.resolve() or not path.is_file():
        raise web.HTTPNotFound(text=f"no UI file {name!r}")
    return web.FileResponse(path, headers={"Cache-Control": "no-cache"})


async def privileges(request: web.Request) -> web.Response:
    urn = request.query.get("urn", INSTANCE)
    if not urn:
        return error(400, "invalid_request", "urn: must not be empty")
    principal = principal_of(request)
    access = api_of(request).gms.access
    held = [p for p in PRIVILEGES if access.allowed(principal, [p], urn)]
    return web.json_response({"principal": principal, "urn": urn, "privileges": held})


OPENAPI_PATHS: dict[str, Any] = {"/v1/ui/privileges": {"get": {
    "summary": "The caller's principal and which of READ, WRITE, ADMIN it holds on an entity (default: the instance)",
    "parameters": [{"name": "urn", "in": "query", "schema": {"type": "string"}}],
    "responses": {"200": {"description": "{principal, urn, privileges}"}, "400": {"description": "An empty urn"}}}}}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/ui/privileges", privileges)
    app.router.add_get("/", index)
    app.router.add_get(UI_FILES + "{name}", asset)
