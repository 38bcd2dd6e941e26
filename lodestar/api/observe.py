"""Trace ids on every request and the Prometheus endpoint /metrics (see lodestar.metrics, gms.tracing)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import hdrs, web

from gms import tracing
from ingest.eventlog.sqlite import SqliteEventLog
from lodestar import metrics
from lodestar.api.context import Handler, api_of


@web.middleware
async def traced(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give the request a trace id (echoed as X-Trace-Id) and count its response."""
    trace_id = tracing.begin(tracing.from_headers(request.headers))
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers[tracing.TRACE_HEADER] = trace_id
        metrics.HTTP_RESPONSES.labels(_method_label(request.method), str(exc.status)).inc()
        raise
    response.headers[tracing.TRACE_HEADER] = trace_id
    metrics.HTTP_RESPONSES.labels(_method_label(request.method), str(response.status)).inc()
    return response


def _method_label(method: str) -> str:
    """HTTP's own methods as they are, any other token a client sends as "other": a label
    value per made-up method would grow the metrics without bound."""
    return method if method in hdrs.METH_ALL else "other"


async def prometheus(request: web.Request) -> web.Response:
    log_ = api_of(request).gms.log
    groups = metrics.default_groups(platform_events=not isinstance(log_, SqliteEventLog))  # (published on Kafka)
    body = await asyncio.to_thread(metrics.render, log_, groups)
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})


OPENAPI_PATHS: dict[str, Any] = {
    "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {"200": {
        "description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/metrics", prometheus)
