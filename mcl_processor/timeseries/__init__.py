"""The timeseries port: points of timeseries aspects (profiles, run events), in time order.

A point is identified by (urn, aspect, timestampMillis, partition, messageId); appending the
same point again replaces it, so replaying the timeseries topic doubles nothing. A timeseries
delete (a DELETE MCL on the timeseries topic, `changes.TimeseriesDeletion`) removes the points
of one aspect of one entity in a time window; the MCL processor applies it like any other
record, so the processor stays the only writer of the store and a replay of the topic deletes
again what was deleted (`changes.in_log_order` keeps points that came after the deletion).

A rebuild (`lodestar replay --into NAME`) writes a staging model beside the live one and then
switches readers to it in one atomic step (see mcl_processor/staging.py); a rebuild of some
aspects replaces only their points.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

from mcl_processor.changes import TimeseriesDeletion, TimeseriesPoint
from mcl_processor.staging import Rebuildable


class TimeseriesStore(Rebuildable):
    @abstractmethod
    def append(self, points: Sequence[TimeseriesPoint]) -> None:
        """Add (or replace) points inside the read models' current transaction."""

    @abstractmethod
    def remove_entities(self, urns: Sequence[str]) -> None:
        """Forget every point of these entities (they were deleted)."""

    @abstractmethod
    def remove_points(self, deletions: Sequence[TimeseriesDeletion]) -> None:
        """Forget the points each deletion covers (its entity and aspect, start <= timestampMillis
        <= end), inside the read models' current transaction."""

    @abstractmethod
    def count(self, urn: str, aspect: str | None = None, start: int | None = None, end: int | None = None) -> int:
        """How many points the entity has (of `aspect`, or of every aspect), in the window."""

    @abstractmethod
    def query(self, urn: str, aspect: str, start: int | None = None, end: int | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        """Values with start <= timestampMillis <= end (bounds optional), oldest first."""

    @abstractmethod
    def clear(self) -> None: ...

    @abstractmethod
    def switch_to(self, name: str, aspects: Collection[str] | None = None) -> None:
        """Make staging model `name` the live one, atomically for readers: the points of
        `aspects` (None: of every aspect) are then exactly the staging ones. The staging name
        is gone afterwards; writers of the live store write to the new model."""
