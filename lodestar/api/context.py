"""What every route module shares: what it offers the app (`RouteModule`), the `Api` held by
the app, the request's principal, JSON bodies in and JSON errors out."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import orjson
from aiohttp import web

from gms.service import Gms
from gms.tracing import in_context
from gms.write_path import Result
from ingest.proposal import Proposal, ProposalError
from lodestar.api.auth import TokenAuth
from lodestar.api.limits import MAX_JSON_ITEMS, json_items
from lodestar.api.writers import WriterThreads
from mcl_processor.processor import MclProcessor, wait_until_caught_up
from mcl_processor.readmodels import ReadModels

log = logging.getLogger(__name__)
PUBLIC_PATHS = frozenset({"/health", "/health/ready", "/metrics", "/config", "/openapi.json"})
UI_FILES = "/ui/"  # the web UI's files (lodestar/api/ui.py), and its page at /, need no token
GMS_KEY = web.AppKey("gms", "Api")
LIMIT_KEY = web.AppKey("max_request_bytes", int)
PRINCIPAL_KEY = web.RequestKey("principal", str)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


OFFSETS_GRACE_S = 5.0  # beyond a waitForIndex's wait, for reading where the MCL partitions end


class RouteModule(Protocol):
    """A route module as `create_app` assembles it: `add_routes` adds its routes (and any state
    they need) to the app, and `OPENAPI_PATHS` holds their path items for /openapi.json
    (`{template: {method: operation}}`), which `openapi.document` joins."""

    OPENAPI_PATHS: dict[str, Any]

    def add_routes(self, app: web.Application) -> None: ...


def error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None,
          **extra: Any) -> web.Response:
    """A JSON error response: {"error": code, "message": ..., "status": ..., **extra}."""
    return web.json_response({"error": code, "message": message, "status": status, **extra},
                             status=status, headers=headers)


class Api:
    """What the handlers share: GMS, the read models, the authenticator, and the writer
    threads (`writers.py`); `processor` is the MCL processor when it runs in this process."""

    def __init__(self, gms: Gms, auth: TokenAuth, read_models: ReadModels, processor: MclProcessor | None = None,
                 writers: WriterThreads | None = None, max_json_items: int = MAX_JSON_ITEMS):
        self.gms = gms
        self.max_json_items = max_json_items  # of one request body (lodestar.api.limits)
        self.auth = auth
        self.read_models = read_models
        self.processor = processor
        self.writers = writers or WriterThreads()

    async def wait_for_index(self, timeout: float = 30.0) -> bool:
        """Whether every MCL published so far is in the read models within timeout seconds. The
        answer comes by then (and OFFSETS_GRACE_S) however long the log takes to say where its
        partitions end (a broker just restarted): False, the check going on in the background."""
        if self.processor is not None:
            check = asyncio.to_thread(self.processor.wait_until_caught_up, self.gms.log, timeout)
        else:
            check = asyncio.to_thread(wait_until_caught_up, self.gms.log, timeout)
        try:
            return await asyncio.wait_for(check, timeout + OFFSETS_GRACE_S)
        except TimeoutError:
            return False

    async def apply(self, proposals: Sequence[Proposal | ProposalError], actor: str,
                    headers: Mapping[str, str], all_or_none: bool = False) -> list[Result]:
        """Apply proposals for the actor (authorized); see Gms.apply for `all_or_none`."""
        return await self.run(self.gms.apply, proposals, actor, headers, True, None, all_or_none)

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a write-side call on a writer thread (`WriterThreads.run`), in the caller's
        trace context."""
        return await self.writers.run(in_context(fn, *args))


def query_route(handler: Handler, when: Callable[[web.Request], bool] = lambda request: True) -> Handler:
    """Marks a handler of a method that is not GET as a query when `when(request)` holds (it may
    only look at the path and query string: the body is not read yet): the write guards
    (backpressure, the event-log ping, the in-flight budget) then leave the request alone."""
    handler.is_query = when  # type: ignore[attr-defined]
    return handler


def is_query(request: web.Request) -> bool:
    """Whether the request's handler was marked a query (`query_route`) for this request."""
    when = getattr(request.match_info.handler, "is_query", None)
    return when is not None and when(request)


def api_of(request: web.Request) -> Api:
    return request.app[GMS_KEY]


def principal_of(request: web.Request) -> str:
    return request[PRINCIPAL_KEY]


async def read_json(request: web.Request) -> Any:
    """The decoded JSON body. Decoding runs on the writer thread: in a process whose writer
    holds the store's write lock, the event loop must not compete with it for the GIL. Never
    on the yielding one: queries (GraphQL, DataHub's read actions) read their bodies here too."""
    body = await request.read()
    api = api_of(request)
    return await api.writers.run(in_context(decode_json, body, api.max_json_items), may_yield=False)


def json_text(value: Any) -> str:
    """JSON of an answer (`web.json_response(..., dumps=json_text)`), by orjson."""
    return orjson.dumps(value).decode()


def decode_json(raw: bytes, max_items: int = MAX_JSON_ITEMS) -> Any:
    """A request body's JSON; a 400 naming the problem when it is not JSON (or nests past 1,024
    levels, orjson's limit), 413 when it holds over max_items items (lodestar.api.limits.json_items,
    counted before parsing)."""
    if (items := json_items(raw, max_items)) > max_items:
        raise web.HTTPRequestEntityTooLarge(
            max_size=max_items, actual_size=items, content_type="application/json",
            text=json.dumps({"error": "too_large", "message": f"request body holds {items} JSON items (commas,"
                             f" colons, brackets), over the limit of {max_items}", "status": 413}))
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "invalid_json", "message": f"request body is not valid JSON: {err}",
                             "status": 400}),
            content_type="application/json",
        ) from None
