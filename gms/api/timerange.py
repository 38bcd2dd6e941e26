"""CDAP's time parameters: seconds since the epoch, or `now` with offsets (`now-1h`,
`now-1d+4h`; units s, m, h, d), and the checks of a start/end pair."""

from __future__ import annotations

import re
import time

from mcl_processor.runs.model import Window

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_OFFSET = re.compile(r"([+-])(\d+)([smhd])")


class TimeRangeError(ValueError):
    """A missing, malformed or inconsistent time parameter; the message says which."""


def parse_time(name: str, text: str | None, now: int | None = None) -> int:
    """Seconds since the epoch for `text`; raises TimeRangeError naming the parameter."""
    if text is None or text == "":
        raise TimeRangeError(f"{name}: is required (seconds since the epoch, or now, now-1h, now-1d+4h)")
    now = int(time.time()) if now is None else now
    if text.startswith("now"):
        rest, seconds = text[3:], now
        while rest:
            match = _OFFSET.match(rest)
            if match is None:
                raise TimeRangeError(f"{name}: cannot parse {text!r} (expected now, now-1h, now-1d+4h, ...)")
            sign, amount, unit = match.groups()
            seconds += (1 if sign == "+" else -1) * int(amount) * _UNITS[unit]
            rest = rest[match.end():]
    else:
        try:
            seconds = int(text)
        except ValueError:
            raise TimeRangeError(f"{name}: {text!r} is neither seconds since the epoch nor now[+-offset]") from None
    if seconds < 0:
        raise TimeRangeError(f"{name}: invalid time ({text} -> {seconds}); it must be at least 0")
    return seconds


def parse_window(start: str | None, end: str | None, now: int | None = None) -> tuple[int, int, Window]:
    """(start s, end s, the window in ms); start must not be after end."""
    now = int(time.time()) if now is None else now
    start_s, end_s = parse_time("start", start, now), parse_time("end", end, now)
    if start_s > end_s:
        raise TimeRangeError(f"start ({start} -> {start_s}) must not be after end ({end} -> {end_s})")
    return start_s, end_s, Window(start_s * 1000, end_s * 1000)
