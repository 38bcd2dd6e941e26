"""Rebuilding the read models from the aspect store (latest versions) and the timeseries topic.

Page by page. While the main process writes one page, worker processes run the read models'
preparer on the next pages: the costly per-aspect analysis, and the merging of each entity's
search document (`search/sqlite_rows.py`). Pages are written a few to a transaction (each commit
flushes the full-text indexes' pending terms). Versions are applied "at or above what the model
has", so a restore never moves a model back, and just before a page is written the store is
asked, in one query per few hundred entities (`live_keys`), which of its entities still exist:
an entity deleted meanwhile (whose reset the processor may already have applied) is not brought
back. So a restore can run while ingestion goes on. At the end, fields' upstream tags are
derived again wherever a document differs from what the models give (`upstream_tags.rederive`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack
from itertools import chain, islice
from typing import Any, TypeVar

from gms.store import AspectStore, StoredAspect
from ingest import topics
from ingest.eventlog import EventLog
from ingest.subscribe import like
from mcl_processor import upstream_tags
from mcl_processor.annotations import entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch, TimeseriesDeletion, TimeseriesPoint, in_log_order
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.readmodels import ReadModels, collector_paused
from mcl_processor.workers import ahead, default_workers, pool, prepare_in_worker

T = TypeVar("T")
BATCH = 10000
PAGES_PER_TRANSACTION = 4  # fewer commits, while the live processor waits at most a few seconds


def scan_pages(store: AspectStore, batch: int = BATCH) -> Iterator[list[StoredAspect]]:
    """The store's latest live versions, page by page, in its scan order (a page is short only
    at the end: the port's promise)."""
    after: tuple[str, str] | None = None
    while page := list(store.scan_latest(after, batch)):
        yield page
        if len(page) < batch:
            return
        after = (page[-1].urn, page[-1].aspect)


def restore(read_models: ReadModels, decoder: MclDecoder, store: AspectStore, urn_like: str | None = None,
            aspect: str | None = None, progress: Callable[[int], None] | None = None,
            timeseries_log: EventLog | None = None, workers: int | None = None) -> int:
    """Re-apply the latest version of every stored aspect (optionally only URNs matching the
    LIKE pattern `urn_like`, only aspect `aspect`) and, given the event log, the timeseries
    topic. Returns how many aspects and points were applied; `progress` gets the running count.
    `workers` processes prepare pages ahead (default: one per CPU but one; 0: none)."""
    registry = decoder.registry
    wanted = like(urn_like).matches if urn_like else None
    pages = ([row for row in page if (aspect is None or row.aspect == aspect) and registry.aspect(row.aspect)
              and (wanted is None or wanted(row.urn))] for page in scan_pages(store, BATCH))
    done = 0
    with collector_paused(), ExitStack() as stack:
        preparer = read_models.preparer()
        workers = default_workers() if workers is None else workers
        if preparer and workers > 0:
            workers_pool = stack.enter_context(pool(decoder, preparer, workers))

            def start(page: list[StoredAspect]) -> Future[Any]:
                return workers_pool.submit(prepare_in_worker, [(row.urn, row.aspect, row.value_json) for row in page])
            prepared_pages = ahead(pages, start, lookahead=2 * workers)
        else:
            prepared_pages = ((page, None) for page in pages)
        for group in _groups(prepared_pages, PAGES_PER_TRANSACTION):
            with read_models.transaction():
                for page, prepared in group:
                    done += _write(read_models, decoder, store, page, prepared)
                    if progress:
                        progress(done)
        with read_models.transaction():
            upstream_tags.rederive(read_models.search, read_models.lineage)
        spec = registry.aspect(aspect) if aspect else None
        if timeseries_log is not None and (aspect is None or (spec is not None and spec.is_timeseries)):
            done = _replay_timeseries(read_models, decoder, store, timeseries_log, wanted, aspect, done, progress)
    return done


def _groups(items: Iterator[T], size: int) -> Iterator[Iterator[T]]:
    """Consecutive groups of up to `size` items, each taken lazily as the caller iterates it
    (which it must do to its end before asking for the next group)."""
    for first in items:
        yield chain((first,), islice(items, size - 1))


def _write(read_models: ReadModels, decoder: MclDecoder, store: AspectStore, page: list[StoredAspect],
           prepared: list[Any] | None) -> int:
    registry = decoder.registry
    with read_models.transaction():
        entities = {urn: registry.entity(entity_type_of(urn)) for urn in {row.urn for row in page}}
        existing = store.live_keys({urn: entity.key_aspect for urn, entity in entities.items() if entity})
        changes = tuple(
            AspectChange(row.urn, entity_type_of(row.urn), row.aspect, row.version, value_json=row.value_json,
                         prepared=prepared[i] if prepared else None)
            for i, row in enumerate(page) if row.urn in existing)
        read_models.apply(ChangeBatch((), changes, replace_equal=True))
    return len(changes)


def _replay_timeseries(read_models: ReadModels, decoder: MclDecoder, store: AspectStore, log: EventLog,
                       wanted: Callable[[str], object] | None, aspect: str | None, done: int,
                       progress: Callable[[int], None] | None) -> int:
    """Points of the timeseries topic, for entities that still exist."""
    exists: dict[str, bool] = {}
    for partition in range(log.partitions(topics.MCL_TIMESERIES)):
        offset = 0
        while records := log.read(topics.MCL_TIMESERIES, partition, offset, BATCH):
            offset = records[-1].offset + 1
            series: list[TimeseriesPoint | TimeseriesDeletion] = []
            for record in records:
                try:
                    item = decoder.decode(record.value)
                except PoisonRecord:
                    continue
                if not isinstance(item, TimeseriesPoint | TimeseriesDeletion) or (aspect and item.aspect != aspect) \
                        or (wanted and not wanted(item.urn)):
                    continue
                if item.urn not in exists:
                    exists[item.urn] = bool(store.entity(item.urn))
                if exists[item.urn]:
                    series.append(item)
            points, deletions = in_log_order(series)  # the topic's deletions delete again
            read_models.apply(ChangeBatch(), points, deletions)
            done += len(points)
            if progress:
                progress(done)
    return done
