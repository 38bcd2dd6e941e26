"""The read models the MCL processor maintains, written together in one transaction per batch."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager

from mcl_processor.changes import ChangeBatch, TimeseriesPoint
from mcl_processor.lineage import LineageGraph
from mcl_processor.search import SearchIndex
from mcl_processor.timeseries import TimeseriesStore


class ReadModels(ABC):
    """Search index, lineage graph and timeseries store behind one write transaction.

    Adapters without a shared transaction (OpenSearch, Cassandra) rely on the models'
    version checks instead: a batch applied twice changes nothing."""

    search: SearchIndex
    lineage: LineageGraph
    timeseries: TimeseriesStore

    @abstractmethod
    def transaction(self) -> AbstractContextManager[object]:
        """Everything written inside commits together (nested uses join the outer one)."""

    def apply(self, batch: ChangeBatch, points: Sequence[TimeseriesPoint] = ()) -> None:
        with self.transaction():
            if batch:
                self.search.apply(batch)
                self.lineage.apply(batch)
                if batch.resets:
                    self.timeseries.remove_entities(batch.resets)
            if points:
                self.timeseries.append(points)

    def clear(self) -> None:
        """Forget everything, e.g. before a full restore."""
        with self.transaction():
            self.search.clear()
            self.lineage.clear()
            self.timeseries.clear()

    @abstractmethod
    def close(self) -> None: ...
