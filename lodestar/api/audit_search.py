"""Searching the security audit log (gms/access/audit.py) the way DataHub's
`POST /openapi/v1/events/audit/search` does: events of a time window, newest first, filtered
by event type, entity type, aspect and actor, a page at a time."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gms.access.audit import AUDIT_LOG, EVENT_ASPECT
from mcl_processor.timeseries import TimeseriesStore

DAY_MS = 24 * 3600 * 1000
MAX_SIZE = 1000
MAX_SCANNED = 100_000  # events of one window read at most; a busier window must be narrowed
FILTERS = {"eventTypes": "eventType", "entityTypes": "entityType", "aspectTypes": "aspectName",
           "actorUrns": "actorUrn"}
SHOWN = ("eventType", "timestamp", "actorUrn", "entityUrn", "entityType", "aspectName", "loginSource")

INT64_MAX = 2**63 - 1


class AuditQueryError(ValueError):
    """A search refused: `status` 400 (bad input) or 403 (another principal's events)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """A search: the window [start, end] in epoch ms, the page (`offset`, `size`) and, per
    event field, the values any of which an event must have (an empty list: any)."""

    start: int
    end: int
    size: int
    offset: int
    filters: Mapping[str, frozenset[str]]

    @classmethod
    def parse(cls, params: Mapping[str, str], body: Any) -> AuditQuery:
        """From the query string (startTime, endTime, size, scrollId; -1 or absent: the default,
        the last day) and the JSON body ({eventTypes, entityTypes, aspectTypes, actorUrns})."""
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise AuditQueryError("body: must be a JSON object")
        filters: dict[str, frozenset[str]] = {}
        for name, field in FILTERS.items():
            given = body.get(name) or []
            if not isinstance(given, list) or not all(isinstance(v, str) for v in given):
                raise AuditQueryError(f"body.{name}: must be a list of strings")
            filters[field] = frozenset(given)
        now = int(time.time() * 1000)
        end = _time(params, "endTime")
        offset = 0
        if scroll := params.get("scrollId"):
            frozen, _, skip = scroll.partition(":")
            if not (frozen.isdigit() and skip.isdigit()):
                raise AuditQueryError(f"scrollId: {scroll!r} is not one this search returned")
            end, offset = int(frozen), int(skip)
        end = now if end < 0 else end
        start = _time(params, "startTime")
        size = _number(params, "size", 10)
        if not 0 <= size <= MAX_SIZE:
            raise AuditQueryError(f"size: {size} is not between 0 and {MAX_SIZE}")
        return cls(end - DAY_MS if start < 0 else start, end, size, offset, filters)

    def only(self, actor: str) -> AuditQuery:
        """This search limited to the actor's own events (a non-admin sees no one else's)."""
        others = self.filters["actorUrn"] - {actor}
        if others:
            raise AuditQueryError(f"body.actorUrns: {actor} may read its own events only, not those of "
                                  f"{', '.join(sorted(others))} (that needs ADMIN on the instance)", 403)
        mine = {**self.filters, "actorUrn": frozenset({actor})}
        return AuditQuery(self.start, self.end, self.size, self.offset, mine)

    def matches(self, event: Mapping[str, Any]) -> bool:
        return all(not wanted or event.get(field) in wanted for field, wanted in self.filters.items())


def search(timeseries: TimeseriesStore, query: AuditQuery) -> dict[str, Any]:
    """DataHub's answer: {usageEvents (newest first), count, total, nextScrollId (more to come)}."""
    if timeseries.count(AUDIT_LOG, EVENT_ASPECT, query.start, query.end) > MAX_SCANNED:
        raise AuditQueryError(f"startTime, endTime: more than {MAX_SCANNED} events in this window; narrow it")
    points = timeseries.query(AUDIT_LOG, EVENT_ASPECT, query.start, query.end, limit=MAX_SCANNED)
    found = [point for point in reversed(points) if query.matches(point)]
    page = found[query.offset:query.offset + query.size]
    answer: dict[str, Any] = {"count": len(page), "total": len(found), "usageEvents": [_shown(p) for p in page]}
    if query.offset + len(page) < len(found):
        answer["nextScrollId"] = f"{query.end}:{query.offset + len(page)}"
    return answer


def _shown(point: Mapping[str, Any]) -> dict[str, Any]:
    event = {**point, "timestamp": point.get("timestampMillis")}
    return {field: event[field] for field in SHOWN if event.get(field) is not None}


def _time(params: Mapping[str, str], name: str) -> int:
    """A time parameter: epoch milliseconds (int64), or -1 (absent: -1) for its default."""
    value = _number(params, name, -1)
    if not -1 <= value <= INT64_MAX:
        raise AuditQueryError(f"{name}: {value} is neither -1 nor epoch milliseconds (0 to {INT64_MAX})")
    return value


def _number(params: Mapping[str, str], name: str, default: int) -> int:
    text = params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise AuditQueryError(f"{name}: {text!r} is not an integer") from None
