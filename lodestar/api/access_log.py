"""The access log: one JSON line per request, written after its response went out.

Fields: `time` (UTC, ISO 8601, when the response was done), `method`, `path` (with the values
of query parameters that may carry secrets replaced by `***`: `is_secret_parameter`), `status`, `bytes` (sent,
headers included), `duration_ms`, `principal` (who the bearer token names; null when the request
had none or a bad one), `trace_id` (as echoed in X-Trace-Id), `user_agent` and `remote`.
Headers are never logged, so neither is a bearer token. Lines go to stderr (`-`, the
default), to a file (appended; each line is one write, so the processes of
`serve --workers` can share one file), or nowhere (`off`).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from gms.tracing import TRACE_HEADER
from lodestar.api.context import PRINCIPAL_KEY

STDERR, OFF = "-", "off"
# A parameter is secret-looking when its name, lowercased and without - and _, contains one of these
# (`api-key`, `access_token`, `client_secret`, `X-Auth`, `sessionId`, ...) or is one of SECRET_NAMES.
SECRET_WORDS = ("token", "secret", "password", "passwd", "pwd", "key", "auth", "credential", "signature",
                "session")
SECRET_NAMES = frozenset({"sig", "code", "pass"})


def is_secret_parameter(name: str) -> bool:
    """Whether a query parameter's value is masked in the access log."""
    normalized = name.lower().replace("-", "").replace("_", "")
    return normalized in SECRET_NAMES or any(word in normalized for word in SECRET_WORDS)


def loggable_path(request: web.BaseRequest) -> str:
    """The request's path and query, with the values of secret-looking parameters masked."""
    if not request.query_string:
        return request.path
    parts = []
    for name, value in request.query.items():
        shown = "***" if is_secret_parameter(name) else quote(value, safe="/:,()")
        parts.append(f"{quote(name, safe='')}={shown}")
    return f"{request.path}?{'&'.join(parts)}"


def access_line(request: web.BaseRequest, response: web.StreamResponse, seconds: float) -> dict[str, Any]:
    """What the access log says of one request."""
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "method": request.method,
        "path": loggable_path(request),
        "status": response.status,
        "bytes": response.body_length,
        "duration_ms": round(seconds * 1000, 3),
        "principal": request.get(PRINCIPAL_KEY),
        "trace_id": response.headers.get(TRACE_HEADER),
        "user_agent": request.headers.get("User-Agent"),
        "remote": request.remote,
    }


def _open(where: str) -> int:
    """A file descriptor to write lines to: stderr's, or the file's, opened for appending (made
    readable by its owner only)."""
    if where == STDERR:
        return 2
    return os.open(where, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


class JsonAccessLogger(AbstractAccessLogger):
    """aiohttp's access-logger hook, writing `access_line` as JSON. aiohttp hands it a
    `logging.Logger` it does not use here: the destination is set by `access_log_options`."""

    fd: int | None = None

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if self.fd is not None:
            os.write(self.fd, orjson.dumps(access_line(request, response, time)) + b"\n")

    @property
    def enabled(self) -> bool:
        return self.fd is not None


def access_log_options(where: str) -> dict[str, Any]:
    """Keyword arguments for `web.run_app` / `web.AppRunner`: the JSON access log to `where`
    (`-` stderr, `off`, or a file path). Raises OSError if the file cannot be opened."""
    if where == OFF:
        return {"access_log": None}
    bound = type("BoundJsonAccessLogger", (JsonAccessLogger,), {"fd": _open(where)})
    return {"access_log_class": bound, "access_log": logging.getLogger("lodestar.access")}


NO_ACCESS_LOG: dict[str, Any] = access_log_options(OFF)
