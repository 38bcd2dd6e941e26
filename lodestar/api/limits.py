"""Bounds of the numeric and boolean query parameters of every route, and their parsing: a value
out of its bounds or not of its type is 400 naming the parameter (never an overflow deeper down);
and how many JSON items a request body may hold (`json_items`), counted before it is parsed:
parsed, each value costs some 50 to 100 bytes, so a body of 60 MiB of `{},` would take gigabytes."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from aiohttp import web

MAX_COUNT = 10_000  # results of one page, suggestions
MAX_START = 1_000_000  # results skipped
MAX_HOPS = 100  # lineage hops
MAX_POINTS = 100_000  # timeseries points of one answer
MAX_VERSION = 2**31 - 1
MAX_MILLIS = 2**62  # timestamps
MAX_JSON_ITEMS = 2_000_000  # items of one JSON body (see json_items), by default (LODESTAR_MAX_JSON_ITEMS)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def max_json_items(env: Mapping[str, str] = os.environ) -> int:
    """The limit on the items of a JSON body: LODESTAR_MAX_JSON_ITEMS, else MAX_JSON_ITEMS."""
    text = env.get("LODESTAR_MAX_JSON_ITEMS")
    if not text:
        return MAX_JSON_ITEMS
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"LODESTAR_MAX_JSON_ITEMS: {text!r} is not a positive whole number")
    return int(text)


def json_items(raw: bytes, limit: int) -> int:
    """The JSON text's items: its commas, colons and opening brackets outside strings, plus one
    (at least its values and keys, at most twice as many). Exact once over the limit, a bound
    below it: counted at the speed of bytes.count, strings stripped only when that passes the limit."""
    def counted(text: bytes) -> int:
        return text.count(b",") + text.count(b":") + text.count(b"[") + text.count(b"{") + 1

    bound = counted(raw)
    return bound if bound <= limit or b'"' not in raw else counted(_STRING.sub(b"", raw))


def int_param(request: web.Request, name: str, default: int | None, minimum: int = 0,
              maximum: int = 2**62) -> int | None:
    """Query parameter `name` as an integer in [minimum, maximum], or default when absent."""
    text = request.query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name}: {text[:100]!r} is not an integer") from None
    if not minimum <= value <= maximum:
        raise web.HTTPBadRequest(text=f"{name}: must be between {minimum} and {maximum}")
    return value


def bool_param(request: web.Request, name: str, default: bool = False) -> bool:
    """Query parameter `name` as true/false (also 1/0, yes/no; any case), or default when absent."""
    text = request.query.get(name)
    if text is None:
        return default
    value = text.lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise web.HTTPBadRequest(text=f"{name}: {text[:100]!r} is not true or false")
