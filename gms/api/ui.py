"""The web UI: the bundle built from `gms/ui` (bin/setup runs `npm ci` and `npm run build`)
served as static files at `/` and `/ui/`. The pages call the REST API with the token the user
enters; the files themselves need no token."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

DIST = Path(__file__).resolve().parent.parent / "ui" / "dist"
PUBLIC_PREFIX = "/ui/"
NOT_BUILT = ("<!doctype html><title>Lodestar</title><p>The web UI is not built: run <code>bin/setup</code> "
             "(it runs <code>npm ci &amp;&amp; npm run build</code> in <code>gms/ui</code>).</p>")


def is_public(path: str) -> bool:
    """Whether a path is one of the UI's files, served without a token."""
    return path == "/" or path.startswith(PUBLIC_PREFIX)


async def index(request: web.Request) -> web.StreamResponse:
    page = DIST / "index.html"
    if not page.is_file():
        return web.Response(text=NOT_BUILT, content_type="text/html", status=503)
    return web.FileResponse(page, headers={"Cache-Control": "no-cache"})


async def asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    path = (DIST / name).resolve()
    if path.parent != DIST.resolve() or not path.is_file():
        raise web.HTTPNotFound(text=f"no UI file {name!r}")
    return web.FileResponse(path, headers={"Cache-Control": "no-cache"})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/", index)
    app.router.add_get(PUBLIC_PREFIX + "{name}", asset)
