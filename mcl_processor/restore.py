"""Rebuilding the read models from the aspect store (latest versions) and the timeseries topic.

Batch by batch: each batch is read from the store inside the read-model transaction, so an
entity deleted meanwhile cannot come back (its reset is applied after the batch), and
versions are applied "at or above what the model has", so a restore never moves a model
back and can run while ingestion goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from gms.store import AspectStore, StoredAspect
from ingest import topics
from ingest.eventlog import EventLog
from mcl_processor.annotations import entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch, TimeseriesPoint
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.readmodels import ReadModels

BATCH = 2000


def like(pattern: str) -> re.Pattern[str]:
    """An SQL LIKE pattern (% any run, _ one character; case-insensitive) as a regex."""
    parts = (".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def scan_pages(store: AspectStore, batch: int = BATCH) -> Iterator[list[StoredAspect]]:
    """The store's latest live versions, page by page, in (urn, aspect) order.

    A page of only deleted aspects comes back empty, so an empty page is retried with a
    larger limit before it is taken as the end."""
    after: tuple[str, str] | None = None
    limit = batch
    while True:
        page = list(store.scan_latest(after, limit))
        if page:
            yield page
            after, limit = (page[-1].urn, page[-1].aspect), batch
        elif limit >= batch * 1024:
            return
        else:
            limit *= 8


def restore(read_models: ReadModels, decoder: MclDecoder, store: AspectStore, urn_like: str | None = None,
            aspect: str | None = None, progress: Callable[[int], None] | None = None,
            timeseries_log: EventLog | None = None) -> int:
    """Re-apply the latest version of every stored aspect (optionally only URNs matching the
    LIKE pattern `urn_like`, only aspect `aspect`) and, given the event log, the timeseries
    topic. Returns how many aspects and points were applied; `progress` gets the running count."""
    registry = decoder.registry
    wanted = like(urn_like).fullmatch if urn_like else None
    done = 0
    pages = scan_pages(store)
    while True:
        with read_models.transaction():
            page = next(pages, None)
            if page is None:
                break
            changes = tuple(
                AspectChange(row.urn, entity_type_of(row.urn), row.aspect, row.version, row.value)
                for row in page
                if (aspect is None or row.aspect == aspect) and (wanted is None or wanted(row.urn))
                and registry.aspect(row.aspect) is not None)
            read_models.apply(ChangeBatch((), changes, replace_equal=True))
        done += len(changes)
        if progress:
            progress(done)
    spec = registry.aspect(aspect) if aspect else None
    if timeseries_log is not None and (aspect is None or (spec is not None and spec.is_timeseries)):
        done = _replay_timeseries(read_models, decoder, store, timeseries_log, wanted, aspect, done, progress)
    return done


def _replay_timeseries(read_models: ReadModels, decoder: MclDecoder, store: AspectStore, log: EventLog,
                       wanted: Callable[[str], object] | None, aspect: str | None, done: int,
                       progress: Callable[[int], None] | None) -> int:
    """Points of the timeseries topic, for entities that still exist."""
    exists: dict[str, bool] = {}
    for partition in range(log.partitions(topics.MCL_TIMESERIES)):
        offset = 0
        while records := log.read(topics.MCL_TIMESERIES, partition, offset, BATCH):
            offset = records[-1].offset + 1
            points = []
            for record in records:
                try:
                    point = decoder.decode(record.value)
                except PoisonRecord:
                    continue
                if not isinstance(point, TimeseriesPoint) or (aspect and point.aspect != aspect) \
                        or (wanted and not wanted(point.urn)):
                    continue
                if point.urn not in exists:
                    exists[point.urn] = bool(store.entity(point.urn))
                if exists[point.urn]:
                    points.append(point)
            read_models.apply(ChangeBatch(), points)
            done += len(points)
            if progress:
                progress(done)
    return done
