"""The timeseries port: points of timeseries aspects (profiles, run events), in time order.

A point is identified by (urn, aspect, timestampMillis, partition, messageId); appending the
same point again replaces it, so replaying the timeseries topic doubles nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from mcl_processor.changes import TimeseriesPoint


class TimeseriesStore(ABC):
    @abstractmethod
    def append(self, points: Sequence[TimeseriesPoint]) -> None:
        """Add (or replace) points inside the read models' current transaction."""

    @abstractmethod
    def remove_entities(self, urns: Sequence[str]) -> None:
        """Forget every point of these entities (they were deleted)."""

    @abstractmethod
    def query(self, urn: str, aspect: str, start: int | None = None, end: int | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        """Values with start <= timestampMillis <= end (bounds optional), oldest first."""

    @abstractmethod
    def clear(self) -> None: ...
