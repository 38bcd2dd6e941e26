"""The read models the MCL processor maintains, written together in one transaction per batch."""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from mcl_processor import upstream_tags
from mcl_processor.changes import ChangeBatch, TimeseriesDeletion, TimeseriesPoint
from mcl_processor.lineage import LineageGraph
from mcl_processor.runs import RunLineageStore
from mcl_processor.search import SearchIndex
from mcl_processor.timeseries import TimeseriesStore


class Preparer(Protocol):
    """Prepares (aspect, value JSON, parsed value or None) items for `AspectChange.prepared`,
    in any process (the preparer parses the JSON when it needs the value and was not given
    it). `entities`, each item's (URN, entity type) when the caller knows them, lets a model
    also prepare per entity, from consecutive items of one entity (a search document, say)."""

    def __call__(self, items: Sequence[tuple[str, str | None, Any]],
                 entities: Sequence[tuple[str, str]] | None = None) -> list[Any]: ...


class ReadModels(ABC):
    """Search index, lineage graph, run lineage and timeseries store behind one write transaction.

    Adapters without a shared transaction (OpenSearch, Cassandra) rely on the models'
    version checks instead: a batch applied twice changes nothing. Every adapter raises its
    backend's errors as ingest.backends.errors (BackendUnavailable while it does not answer)."""

    search: SearchIndex
    lineage: LineageGraph
    runs: RunLineageStore
    timeseries: TimeseriesStore

    def transaction(self) -> AbstractContextManager[object]:
        """Everything written inside commits together (nested uses join the outer one). Without
        a shared transaction (the default) it does nothing: each model's writes are its own,
        and its version checks make applying a batch again harmless."""
        return nullcontext()

    def apply(self, batch: ChangeBatch, points: Sequence[TimeseriesPoint] = (),
              deletions: Sequence[TimeseriesDeletion] = ()) -> None:
        """Apply a batch: its entity resets and aspect changes, then the timeseries `deletions`,
        then `points` (changes.in_log_order makes the two from timeseries records in log order)."""
        with self.transaction(), collector_paused():
            if batch:
                moved = self.apply_changes(batch)
                upstream_tags.refresh(self.search, self.lineage, batch, moved)
                if batch.resets:
                    self.timeseries.remove_entities(batch.resets)
            if deletions:
                self.timeseries.remove_points(deletions)
            if points:
                self.timeseries.append(points)
                self.runs.append_events(points)

    def apply_changes(self, batch: ChangeBatch) -> set[str]:
        """A batch's resets and changes applied to search, lineage and run lineage (each
        independent of the others); the fields whose lineage moved (see LineageGraph.apply)."""
        self.search.apply(batch)
        moved = self.lineage.apply(batch)
        self.runs.apply(batch)
        return moved

    def preparer(self) -> Preparer | None:
        """A picklable function that computes ahead, in any process, what `apply` would compute
        per change from its aspect and value, for `AspectChange.prepared` (restore runs it
        in worker processes while it writes); None when there is nothing worth preparing."""
        return None

    def clear(self) -> None:
        """Forget everything, e.g. before a full restore."""
        with self.transaction():
            self.search.clear()
            self.lineage.clear()
            self.runs.clear()
            self.timeseries.clear()

    @abstractmethod
    def close(self) -> None: ...


@contextmanager
def collector_paused() -> Iterator[None]:
    """Batches allocate many containers but no garbage cycles; the cyclic garbage collector,
    run during them, scans every live object again and again (half the time of a restore).
    It runs, if it must, afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

