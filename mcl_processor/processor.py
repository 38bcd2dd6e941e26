"""The MCL processor: consumes the MetadataChangeLog topics and maintains the read models.

Each polled batch is decoded, collapsed (see changes.collapse) and written to every read
model in one transaction; only then are the offsets committed (at least once). A crash in
between replays the batch, which the version checks make harmless. A record that cannot
be decoded, or names an aspect the registry does not know, is logged with its position
and skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import nullcontext
from functools import partial

from gms.store import AspectStore
from ingest import topics
from ingest.eventlog import EventLog, LogRecord
from ingest.eventlog.loop import ConsumeLoop, Pipeline, Retry
from ingest.faults import crash_point
from mcl_processor.annotations import annotations_of
from mcl_processor.changes import AspectChange, TimeseriesDeletion, TimeseriesPoint, collapse, in_log_order
from mcl_processor.check import CheckReport, check
from mcl_processor.decode import MclDecoder
from mcl_processor.metrics import INDEX_SECONDS, INDEXED
from mcl_processor.readmodels import ReadModels, collector_paused
from mcl_processor.restore import restore
from mcl_processor.workers import Decoded, decode, decode_in_worker, default_workers, pool, resolved
from schemas.events import EventCodec
from schemas.mcl_wire import MclReader
from schemas.registry import EntityRegistry

log = logging.getLogger(__name__)
GROUP = topics.MCL_GROUP
TOPICS = topics.MCL_TOPICS
BATCH = 10_000
POOLED = 1000  # batches this large are decoded in worker processes
LOOKAHEAD = 2  # batches in flight per worker
WRITE_BATCHES = 2  # decoded batches written in one transaction, when they are ready together
RETRY_AFTER = 1.0  # seconds before reading again from the committed offsets after a failed batch
Batch = tuple[list[LogRecord], list[Decoded]]  # records and what they decoded to


class MclProcessor:
    def __init__(self, registry: EntityRegistry, reader: MclReader | EventCodec, read_models: ReadModels):
        """`reader`: GMS's `mcl_reader` (or a codec, see MclDecoder)."""
        self.registry = registry
        self.decoder = MclDecoder(registry, reader)
        self.read_models = read_models
        self.key_aspects = annotations_of(registry).key_aspects
        self.skipped = 0  # poison records seen by this instance
        self._progress = threading.Condition()

    def process(self, records: Sequence[LogRecord], decoded: Sequence[Decoded] | None = None,
                read_models: ReadModels | None = None) -> None:
        """Apply records to every read model in one transaction (poison records are skipped);
        `decoded`: the records decoded ahead (see workers.decode); `read_models`: others than
        the processor's (a rebuild's staging models)."""
        values = [record.value for record in records]
        decoded = decode(self.decoder, None, values) if decoded is None else resolved(self.decoder, values, decoded)
        changes: list[AspectChange] = []
        series: list[TimeseriesPoint | TimeseriesDeletion] = []
        started = time.perf_counter()
        with collector_paused():
            for record, item in zip(records, decoded, strict=True):
                if isinstance(item, AspectChange):
                    changes.append(item)
                elif isinstance(item, TimeseriesPoint | TimeseriesDeletion):
                    series.append(item)
                else:
                    self.skipped += 1
                    log.warning("skipping MCL at %s/%d@%d: %s", record.topic, record.partition, record.offset, item)
            points, deletions = in_log_order(series)
            (read_models or self.read_models).apply(collapse(changes, self.key_aspects), points, deletions)
        INDEX_SECONDS.labels("write").observe(time.perf_counter() - started)
        INDEXED.labels("change").inc(len(changes))
        INDEXED.labels("point").inc(len(series) - len(deletions))
        INDEXED.labels("deletion").inc(len(deletions))
        INDEXED.labels("skipped").inc(len(records) - len(changes) - len(series))

    def run(self, log_: EventLog, stop: threading.Event, poll_timeout: float = 0.5,
            max_records: int = BATCH, workers: int | None = None) -> None:
        """Consume until stop is set, as consumer group "mcl-processor" (ingest.eventlog.loop);
        offsets are committed after the read models are written. A failing batch is retried from
        the committed offsets after RETRY_AFTER seconds.

        A batch is whatever has arrived, up to max_records: small when the log is quiet (little
        delay), large under load (each commit has a fixed cost, so fewer commits index faster).
        Batches of at least POOLED records are decoded and prepared by `workers` processes
        (default: a CPU each but one) while the batches before them are written; up to
        WRITE_BATCHES of them decoded by the time the writer takes the first are written in one
        transaction (bigger transactions write each index page fewer times)."""
        workers = default_workers() if workers is None else workers
        with pool(self.decoder, self.read_models.preparer(), workers) if workers else nullcontext() as pooled:
            loop = ConsumeLoop(log_, GROUP, TOPICS, max_records=max_records, poll_timeout=poll_timeout,
                               retry=Retry(RETRY_AFTER, _failed), on_commit=self._committed)
            loop.run(self._write, stop, _Lookahead(partial(self._decoding, pooled), LOOKAHEAD * workers))

    def _write(self, batch: Batch) -> None:
        self.process(*batch)
        crash_point("mcl-after-write")

    def _committed(self, _: Sequence[LogRecord]) -> None:
        with self._progress:
            self._progress.notify_all()

    def _decoding(self, pooled: ProcessPoolExecutor | None, records: Sequence[LogRecord]) -> Future[list[Decoded]]:
        values = [record.value for record in records]
        if pooled is not None and len(records) >= POOLED:
            return pooled.submit(decode_in_worker, values)
        done: Future[list[Decoded]] = Future()
        done.set_result(decode(self.decoder, None, values))
        return done

    def wait_until_caught_up(self, log_: EventLog, timeout: float) -> bool:
        """Whether every MCL appended before this call was indexed within timeout seconds."""
        return wait_until_caught_up(log_, timeout, self._progress)

    def restore(self, store: AspectStore, urn_like: str | None = None, aspect: str | None = None,
                progress: Callable[[int], None] | None = None, timeseries_log: EventLog | None = None,
                workers: int | None = None) -> int:
        """Rebuild the read models from the store's latest versions (see restore.restore)."""
        return restore(self.read_models, self.decoder, store, urn_like, aspect, progress, timeseries_log, workers)

    def check(self, store: AspectStore, examples: int = 10) -> CheckReport:
        """Compare the read models with the store (see check.check)."""
        return check(self.read_models, self.registry, store, examples)


class _Lookahead(Pipeline[Batch]):
    """Batches decoded ahead: while polls find records and at most `depth` batches are pending,
    the loop polls again (without waiting) instead of writing; then it writes the first pending
    batch, with those decoded after it by then (_ready)."""

    def __init__(self, decoding: Callable[[list[LogRecord]], Future[list[Decoded]]], depth: int):
        self.decoding = decoding
        self.depth = depth
        self.pending: deque[tuple[list[LogRecord], Future[list[Decoded]]]] = deque()

    def wait(self, poll_timeout: float) -> float:
        return 0 if self.pending else poll_timeout

    def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], Batch] | None:
        if polled:
            self.pending.append((polled, self.decoding(polled)))
        if not self.pending or (polled and len(self.pending) <= self.depth):
            return None
        batch = _ready(self.pending, WRITE_BATCHES)
        return batch[0], batch

    def clear(self) -> None:
        self.pending.clear()


def _failed(batch: list[LogRecord]) -> None:
    """The read models or the log failed: logged (the loop then reads again from the committed offsets)."""
    where = f"MCL batch at {batch[0].topic}/{batch[0].partition}@{batch[0].offset}" if batch \
        else "reading the MCL topics"
    log.exception("%s failed; retrying", where)


def _ready(pending: deque[tuple[list[LogRecord], Future[list[Decoded]]]], most: int) -> Batch:
    """The first pending batch (waited for) and those after it already decoded, up to `most`
    batches, joined in log order."""
    records, decoding = pending.popleft()
    decoded = decoding.result()
    while pending and most > 1 and pending[0][1].done():
        more, decoding = pending.popleft()
        records, decoded, most = records + more, decoded + decoding.result(), most - 1
    return records, decoded


def mcl_offsets(log_: EventLog, group: str = GROUP) -> dict[tuple[str, int], tuple[int, int]]:
    """(end, offset committed by group "mcl-processor") of each MCL topic partition, the end as
    `EventLog.end_bound` gives it: cheap, perhaps a transaction marker past the last record."""
    return {(topic, partition): (log_.end_bound(topic, partition), log_.committed(group, topic, partition))
            for topic in TOPICS for partition in range(log_.partitions(topic))}


def wait_until_caught_up(log_: EventLog, timeout: float, progress: threading.Condition | None = None,
                         group: str = GROUP) -> bool:
    """Whether group "mcl-processor" committed past every MCL appended before the call, within
    timeout seconds. A processor in this process wakes the waiter through `progress`; otherwise
    the committed offsets are polled."""
    deadline = time.monotonic() + timeout
    ends = {(topic, partition): log_.end_offset(topic, partition)
            for topic in TOPICS for partition in range(log_.partitions(topic))}
    pending = {key: end for key, end in ends.items() if log_.committed(group, *key) < end}
    while pending:
        pending = {key: end for key, end in pending.items() if log_.committed(group, *key) < end}
        remaining = deadline - time.monotonic()
        if not pending:
            break
        if remaining <= 0:
            return False
        if progress is None:
            time.sleep(min(remaining, 0.01))
        else:
            with progress:
                progress.wait(min(remaining, 0.01))
    return True
