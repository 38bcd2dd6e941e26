"""Trace ids and structured logs.

Every HTTP request gets a trace id (the caller's `X-Trace-Id`, or the trace id of a W3C
`traceparent` header, else a new one), echoed in the response's `X-Trace-Id`; a batch from the
MCP topic gets `<topic>/<partition>@<offset>` of its first record. The id lives in a context
variable, so every log line written while the request or batch is handled carries it, also
from the writer thread (`in_context` carries it there). `configure_logging` writes one JSON
object per line (`ts`, `level`, `logger`, `msg`, `trace_id`, and `urn` when the call passed
`extra={"urn": ...}`); `LODESTAR_LOG_FORMAT=text` keeps plain lines.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson

TRACE_HEADER = "X-Trace-Id"
_TRACE_ID = contextvars.ContextVar[str | None]("trace_id", default=None)
_SAFE = re.compile(r"^[A-Za-z0-9._:/@-]{1,128}$")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def current() -> str | None:
    return _TRACE_ID.get()


def begin(trace_id: str | None = None) -> str:
    """Set the trace id of what runs from here in this context (a new one if none is given)."""
    trace_id = trace_id or uuid.uuid4().hex
    _TRACE_ID.set(trace_id)
    return trace_id


def from_headers(headers: Any) -> str | None:
    """The caller's trace id, if it sent a well-formed one."""
    given = headers.get(TRACE_HEADER)
    if given and _SAFE.match(given):
        return given
    parent = _TRACEPARENT.match(headers.get("traceparent", ""))
    return parent.group(1) if parent else None


def in_context(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """fn(*args) to run in another thread with this context (its trace id)."""
    context = contextvars.copy_context()
    return lambda: context.run(fn, *args)


_base_factory = logging.getLogRecordFactory()


def _record_with_trace_id(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _base_factory(*args, **kwargs)
    record.trace_id = _TRACE_ID.get()
    return record


logging.setLogRecordFactory(_record_with_trace_id)  # every record carries the trace id of its context


class JsonFormatter(logging.Formatter):
    converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
                                "level": record.levelname, "logger": record.name, "msg": record.getMessage(),
                                "trace_id": getattr(record, "trace_id", None)}
        for key in ("urn", "aspect"):
            if key in record.__dict__:
                line[key] = record.__dict__[key]
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(level: int = logging.WARNING) -> None:
    """JSON lines on stderr (plain lines with LODESTAR_LOG_FORMAT=text)."""
    handler = logging.StreamHandler()
    if os.environ.get("LODESTAR_LOG_FORMAT", "json") == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
