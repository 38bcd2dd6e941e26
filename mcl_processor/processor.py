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
from collections.abc import Callable, Sequence
from typing import Protocol

from gms.faults import crash_point
from gms.store import AspectStore
from ingest import topics
from ingest.eventlog import EventLog, LogRecord
from mcl_processor.annotations import annotations_of
from mcl_processor.changes import AspectChange, TimeseriesPoint, collapse
from mcl_processor.check import CheckReport, check
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.readmodels import ReadModels, collector_paused
from mcl_processor.restore import restore
from schemas.events import EventCodec
from schemas.registry import EntityRegistry

log = logging.getLogger(__name__)
GROUP = "mcl-processor"
TOPICS = (topics.MCL_VERSIONED, topics.MCL_TIMESERIES)
BATCH = 10_000


class CommittedOffsets(Protocol):
    """An event log that can tell a group's committed offsets (SqliteEventLog; Kafka's admin API)."""

    def committed(self, group: str, topic: str, partition: int) -> int: ...

    def read(self, topic: str, partition: int = 0, offset: int = 0, limit: int = 1000) -> list[LogRecord]: ...

    def partitions(self, topic: str) -> int: ...


class MclProcessor:
    def __init__(self, registry: EntityRegistry, codec: EventCodec, read_models: ReadModels):
        self.registry = registry
        self.decoder = MclDecoder(registry, codec)
        self.read_models = read_models
        self.key_aspects = annotations_of(registry).key_aspects
        self.skipped = 0  # poison records seen by this instance
        self._progress = threading.Condition()

    def process(self, records: Sequence[LogRecord]) -> None:
        """Apply records to every read model in one transaction (poison records are skipped)."""
        changes: list[AspectChange] = []
        points: list[TimeseriesPoint] = []
        with collector_paused():
            for record in records:
                decoded = self._decode(record)
                if isinstance(decoded, AspectChange):
                    changes.append(decoded)
                elif decoded is not None:
                    points.append(decoded)
            self.read_models.apply(collapse(changes, self.key_aspects), points)

    def _decode(self, record: LogRecord) -> AspectChange | TimeseriesPoint | None:
        try:
            return self.decoder.decode(record.value)
        except PoisonRecord as err:
            self.skipped += 1
            log.warning("skipping MCL at %s/%d@%d: %s", record.topic, record.partition, record.offset, err)
            return None

    def run(self, log_: EventLog, stop: threading.Event, poll_timeout: float = 0.5,
            max_records: int = BATCH) -> None:
        """Consume until stop is set, as consumer group "mcl-processor"; offsets are committed
        after the read models are written. A failing batch is retried from the committed offsets.
        A batch is whatever has arrived, up to max_records: small when the log is quiet (little
        delay), large under load (each commit has a fixed cost, so fewer commits index faster)."""
        consumer = log_.consumer(GROUP, TOPICS)
        try:
            while not stop.is_set():
                records = consumer.poll(max_records, poll_timeout)
                if not records:
                    continue
                try:
                    self.process(records)
                except Exception:
                    log.exception("MCL batch at %s/%d@%d failed; retrying", records[0].topic,
                                  records[0].partition, records[0].offset)
                    consumer.close()
                    stop.wait(1.0)
                    consumer = log_.consumer(GROUP, TOPICS)
                    continue
                crash_point("mcl-after-write")
                consumer.commit(records)
                with self._progress:
                    self._progress.notify_all()
        finally:
            consumer.close()

    def wait_until_caught_up(self, log_: CommittedOffsets, timeout: float) -> bool:
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


def end_offset(log_: CommittedOffsets, topic: str, partition: int, known: int = 0) -> int:
    """The next offset to be written in a partition, found by galloping reads from `known`."""
    if not log_.read(topic, partition, known, 1):
        return known
    low, step = known, 1  # offset `low` exists
    while log_.read(topic, partition, low + step, 1):
        low, step = low + step, step * 2
    high = low + step  # offset `high` does not exist
    while high - low > 1:
        middle = (low + high) // 2
        if log_.read(topic, partition, middle, 1):
            low = middle
        else:
            high = middle
    return high


def wait_until_caught_up(log_: CommittedOffsets, timeout: float, progress: threading.Condition | None = None,
                         group: str = GROUP) -> bool:
    """Whether group "mcl-processor" committed past every MCL appended before the call, within
    timeout seconds. A processor in this process wakes the waiter through `progress`; otherwise
    the committed offsets are polled."""
    deadline = time.monotonic() + timeout
    targets = {}
    for topic in TOPICS:
        for partition in range(log_.partitions(topic)):
            committed = log_.committed(group, topic, partition)
            targets[(topic, partition)] = (end_offset(log_, topic, partition, committed), committed)
    pending = {key: end for key, (end, committed) in targets.items() if committed < end}
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
