"""CDAP's lineage query parameters: times (seconds since the epoch, or `now` with offsets:
`now-1h`, `now-1d+4h`; units s, m, h, d), the checks of a start/end pair, and levels."""

from __future__ import annotations

import re
import time

from lodestar.api.limits import MAX_HOPS, MAX_MILLIS
from lodestar.api.openapi import query_param
from mcl_processor.runs.model import Window

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_SECONDS = MAX_MILLIS // 1000
_OFFSET = re.compile(r"([+-])(\d+)([smhd])")


# the window's query parameters, as /openapi.json describes them
WINDOW_PARAMETERS = [query_param("start", "Seconds since the epoch, or now, now-1h, now-1d+4h", required=True),
                     query_param("end", "Seconds since the epoch, or now[+-offset]", required=True)]


class ParameterError(ValueError):
    """A missing, malformed or inconsistent parameter; the message says which."""


def parse_time(name: str, text: str | None, now: int | None = None) -> int:
    """Seconds since the epoch for `text`; raises ParameterError naming the parameter."""
    if text is None or text == "":
        raise ParameterError(f"{name}: is required (seconds since the epoch, or now, now-1h, now-1d+4h)")
    now = int(time.time()) if now is None else now
    if text.startswith("now"):
        rest, seconds = text[3:], now
        while rest:
            match = _OFFSET.match(rest)
            if match is None:
                raise ParameterError(f"{name}: cannot parse {text!r} (expected now, now-1h, now-1d+4h, ...)")
            sign, amount, unit = match.groups()
            seconds += (1 if sign == "+" else -1) * int(amount) * _UNITS[unit]
            rest = rest[match.end():]
    else:
        seconds = _integer(name, text, "neither seconds since the epoch nor now[+-offset]")
    if seconds < 0:
        raise ParameterError(f"{name}: invalid time ({text} -> {seconds}); it must be at least 0")
    if seconds > MAX_SECONDS:
        raise ParameterError(f"{name}: invalid time ({text} -> {seconds}); it must be at most {MAX_SECONDS}")
    return seconds


def parse_window(start: str | None, end: str | None, now: int | None = None) -> tuple[int, int, Window]:
    """(start s, end s, the window in ms); start must not be after end."""
    now = int(time.time()) if now is None else now
    start_s, end_s = parse_time("start", start, now), parse_time("end", end, now)
    if start_s > end_s:
        raise ParameterError(f"start ({start} -> {start_s}) must not be after end ({end} -> {end_s})")
    return start_s, end_s, Window(start_s * 1000, end_s * 1000)


def parse_levels(name: str, text: str | None, default: int) -> int:
    """A number of levels (hops), at least 1; `default` when absent."""
    if text is None:
        return default
    levels = _integer(name, text, "not an integer")
    if not 1 <= levels <= MAX_HOPS:
        raise ParameterError(f"{name}: invalid {name} ({levels}); it must be between 1 and {MAX_HOPS}")
    return levels


def _integer(name: str, text: str, otherwise: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ParameterError(f"{name}: {text!r} is {otherwise}") from None
