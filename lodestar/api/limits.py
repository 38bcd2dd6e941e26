"""Bounds of the numeric and boolean query parameters of every route, and their parsing: a value
out of its bounds or not of its type is 400 naming the parameter (never an overflow deeper down)."""

from __future__ import annotations

from aiohttp import web

MAX_COUNT = 10_000  # results of one page, suggestions
MAX_START = 1_000_000  # results skipped
MAX_HOPS = 100  # lineage hops
MAX_POINTS = 100_000  # timeseries points of one answer
MAX_VERSION = 2**31 - 1
MAX_MILLIS = 2**62  # timestamps


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
