"""The timeseries port: points of timeseries aspects (profiles, run events), in time order.

A point is identified by (urn, aspect, timestampMillis, partition, messageId); appending the
same point again replaces it, so replaying the timeseries topic doubles nothing.

A rebuild (`lodestar replay --into NAME`) writes a staging model beside the live one and then
switches readers to it in one atomic step, so they never see a half-built model.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

from mcl_processor.changes import TimeseriesPoint

_STAGING_NAME = re.compile(r"[a-z0-9]{1,40}")


def staging_name(name: str) -> str:
    """A staging model's name, checked: lowercase letters and digits (it becomes part of a
    table or index name); raises ValueError."""
    if not _STAGING_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a read-model name: use 1 to 40 lowercase letters and digits")
    return name


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

    @abstractmethod
    def staging(self, name: str, fresh: bool) -> TimeseriesStore:
        """A store over the staging model `name` (lowercase letters and digits), beside the live
        one; `fresh` empties it first, else a build left unfinished goes on."""

    @abstractmethod
    def switch_to(self, name: str, aspects: Collection[str] | None = None) -> None:
        """Make staging model `name` the live one, atomically for readers: the points of
        `aspects` (None: of every aspect) are then exactly the staging ones. The staging name
        is gone afterwards; writers of the live store write to the new model."""

    @abstractmethod
    def switched(self, name: str) -> bool:
        """Whether staging model `name` was made the live one (a build that existed is gone from
        the staging names), so a resumed rebuild knows not to switch twice."""
