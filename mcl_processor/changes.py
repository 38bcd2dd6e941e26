"""The changes the read models apply: aspect versions, entity deletions and timeseries points."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson


class AspectChange:
    """A version of one versioned aspect, its value given parsed or as JSON (parsed when first
    needed); no value means the aspect was deleted. `prepared` holds what the read models'
    preparer computed ahead for the search index, the one model that prepares (worker processes
    compute it, see workers.py)."""

    __slots__ = ("urn", "entity_type", "aspect", "version", "_value", "_json", "prepared")

    def __init__(self, urn: str, entity_type: str, aspect: str, version: int, value: Any = None,
                 value_json: str | None = None, prepared: Any = None):
        self.urn = urn
        self.entity_type = entity_type
        self.aspect = aspect
        self.version = version
        self._value = value
        self._json = value_json
        self.prepared = prepared

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its JSON only: smaller, and parsing it is cheap
        value = None if self._json is not None else self._value
        return AspectChange, (self.urn, self.entity_type, self.aspect, self.version, value, self._json, self.prepared)

    @property
    def value_json(self) -> str | None:
        return self._json if self._json is not None or self._value is None else orjson.dumps(self._value).decode()

    @property
    def value(self) -> Any:
        if self._value is None and self._json is not None:
            self._value = orjson.loads(self._json)
        return self._value

    @property
    def deleted(self) -> bool:
        return self._value is None and self._json is None

    def __repr__(self) -> str:
        return f"AspectChange({self.urn!r}, {self.aspect!r}, version {self.version})"


@dataclass(frozen=True, slots=True)
class TimeseriesPoint:
    """One value of a timeseries aspect, identified by (urn, aspect, timestamp, partition, message id)."""

    urn: str
    aspect: str
    timestamp_ms: int
    partition: str
    message_id: str
    value_json: str

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as its fields (a frozen dataclass's state pickles slowly)
        return TimeseriesPoint, (self.urn, self.aspect, self.timestamp_ms, self.partition, self.message_id,
                                 self.value_json)


@dataclass(frozen=True, slots=True)
class TimeseriesDeletion:
    """The points of one timeseries aspect of one entity with start <= timestampMillis <= end
    (a bound None is open) are deleted: a DELETE MCL on the timeseries topic, whose value is
    the window `{"startTimeMillis", "endTimeMillis"}`."""

    urn: str
    aspect: str
    start_ms: int | None = None
    end_ms: int | None = None

    def covers(self, point: TimeseriesPoint) -> bool:
        return (point.urn == self.urn and point.aspect == self.aspect
                and (self.start_ms is None or point.timestamp_ms >= self.start_ms)
                and (self.end_ms is None or point.timestamp_ms <= self.end_ms))


def in_log_order(items: Iterable[TimeseriesPoint | TimeseriesDeletion]
                 ) -> tuple[list[TimeseriesPoint], list[TimeseriesDeletion]]:
    """What timeseries records in log order do to a store, as (points to append, deletions to
    apply first): a deletion removes the points before it (stored ones, and those earlier in
    the same records, which are left out here), never those after it."""
    points: list[TimeseriesPoint] = []
    deletions: list[TimeseriesDeletion] = []
    for item in items:
        if isinstance(item, TimeseriesDeletion):
            deletions.append(item)
            points = [p for p in points if not item.covers(p)]
        else:
            points.append(item)
    return points, deletions


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """What one batch does: forget the `resets` entities entirely, then apply `changes`.

    A change applies when its version is above the one the read model reflects (or equal,
    with `replace_equal`, so a restore can repair a damaged entry without ever going back)."""

    resets: tuple[str, ...] = ()
    changes: tuple[AspectChange, ...] = ()
    replace_equal: bool = False

    def __bool__(self) -> bool:
        return bool(self.resets or self.changes)


def collapse(changes: Iterable[AspectChange], key_aspects: frozenset[str]) -> ChangeBatch:
    """One batch from changes in log order: deleting an entity's key aspect resets the entity
    (what came before it no longer matters), and of several versions of one aspect the
    highest wins."""
    resets: dict[str, None] = {}
    latest: dict[str, dict[str, AspectChange]] = {}
    for change in changes:
        if change.deleted and change.aspect in key_aspects:
            resets[change.urn] = None
            latest.pop(change.urn, None)
            continue
        aspects = latest.setdefault(change.urn, {})
        current = aspects.get(change.aspect)
        if current is None or change.version >= current.version:
            aspects[change.aspect] = change
    return ChangeBatch(tuple(resets), tuple(c for aspects in latest.values() for c in aspects.values()))


def chunks(items: Sequence[Any], size: int = 500) -> Iterable[Sequence[Any]]:
    """Slices of at most `size` items (SQL parameter lists stay under SQLite's limits)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]
