"""Security headers on every response: the browser neither sniffs a content type, nor frames a
page of Lodestar's in another site, nor sends its address on as a referrer. The web UI's pages
and files (`/`, `/ui/`) get a Content-Security-Policy that lets them load scripts, styles,
images and API calls from Lodestar only (no inline script, no eval, no plug-ins, no forms or
frames elsewhere); every other response (JSON, errors) one that allows nothing at all, so an
answer opened in a browser runs nothing whatever it holds."""

from __future__ import annotations

from aiohttp import web

from lodestar.api.context import UI_FILES

UI_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:;"
             " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
API_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


def is_ui(request: web.BaseRequest) -> bool:
    return request.path == "/" or request.path.startswith(UI_FILES)


async def _add(request: web.BaseRequest, response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Content-Security-Policy", UI_POLICY if is_ui(request) else API_POLICY)


def install(app: web.Application) -> None:
    """Add the headers to every response of the app, errors included."""
    app.on_response_prepare.append(_add)
