"""Replaying an MCL topic into the read models, for backfill (`lodestar replay`).

A replay reads a range of each partition of one topic (a plan: from a time or an offset, to a
time, an offset or the end as it was when the plan was made), decodes and filters the MCLs and
applies them as the MCL processor would. The read models are idempotent per (urn, aspect)
version and per timeseries point, so replaying twice, or beside the live processor, changes
nothing already current and doubles nothing.

Resumable: after each batch the position reached in every partition is saved in a checkpoint
file (JSON, written atomically); a replay started again with the same request goes on from it.

Into a fresh model (see rebuild.py: the timeseries store, or search for the versioned topic):
it is written as a staging model; once the plan's range is done, the replay catches up with
what was appended meanwhile, switches readers to the staging model (atomically:
Rebuildable.switch_to), then applies what arrived between its last read and the switch to the
now-live model, so nothing the live processor wrote to the old model is lost.

Retention: a plan notes the partitions whose requested start is older than the oldest record the
log still holds (`truncated`); the caller decides (restore versioned aspects from the store).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gms.store import AspectStore
from ingest import topics
from ingest.eventlog import EventLog, LogRecord
from ingest.subscribe import entity_type_of, like
from mcl_processor.changes import AspectChange, TimeseriesDeletion, TimeseriesPoint
from mcl_processor.processor import MclProcessor
from mcl_processor.readmodels import ReadModels
from mcl_processor.rebuild import Rebuild
from mcl_processor.workers import Decoded, ahead, decode, decode_in_worker, in_thread, pool, resolved

BATCH = 5000
PREFETCH = 2  # batches read (and decoded) ahead of the one being applied
CATCH_UP_ROUNDS = 3  # passes after the plan to follow what was appended meanwhile, before a switch
TOPICS = {"versioned": topics.MCL_VERSIONED, "timeseries": topics.MCL_TIMESERIES}


@dataclass
class Plan:
    """What to replay: per partition, offsets start (first read) to end (not read)."""

    topic: str
    starts: dict[int, int]
    ends: dict[int, int]
    truncated: dict[int, int] = field(default_factory=dict)  # partition -> oldest offset held, where
    # the requested start was older (retention dropped what lay between)

    @property
    def total(self) -> int:
        return sum(max(0, self.ends[p] - self.starts[p]) for p in self.starts)


def make_plan(log_: EventLog, topic: str, from_ms: int | None = None, from_offset: int | None = None,
              to_ms: int | None = None, to_offset: int | None = None) -> Plan:
    """The plan of a request: start at the first record at or after from_ms, or at from_offset
    (else the oldest held); end before the first record at or after to_ms, or at to_offset (else
    at the end now)."""
    plan = Plan(topic, {}, {})
    for part in range(log_.partitions(topic)):
        first, end = log_.first_offset(topic, part), log_.end_offset(topic, part)
        if from_offset is not None:
            start = from_offset
        elif from_ms is not None:
            start = log_.offset_for_time(topic, part, from_ms)
            if start == first and first > 0 and _older_than_held(log_, topic, part, first, from_ms):
                plan.truncated[part] = first
        else:
            start = 0
        if start < first:
            plan.truncated[part] = first
            start = first
        if to_offset is not None:
            end = min(end, to_offset)
        elif to_ms is not None:
            end = min(end, log_.offset_for_time(topic, part, to_ms))
        plan.starts[part], plan.ends[part] = start, max(start, end)
    return plan


def _older_than_held(log_: EventLog, topic: str, part: int, first: int, from_ms: int) -> bool:
    """Whether records appended after from_ms may have been dropped: the oldest held is newer."""
    held = log_.read(topic, part, first, 1)
    return bool(held) and held[0].timestamp_ms > from_ms


def remaining(plan: Plan, positions: dict[int, int]) -> int:
    return sum(max(0, plan.ends[p] - positions[p]) for p in plan.ends)


def extend(plan: Plan, log_: EventLog, positions: dict[int, int]) -> bool:
    """Move the plan's ends to the log's ends now; whether there is anything new to read."""
    for part in plan.ends:
        plan.ends[part] = max(plan.ends[part], log_.end_offset(plan.topic, part))
    return remaining(plan, positions) > 0


class Checkpoint:
    """A replay's plan and positions, saved after every batch so a killed replay resumes."""

    def __init__(self, path: Path):
        self.path = path

    def load(self) -> tuple[Plan, dict[int, int]] | None:
        if not self.path.exists():
            return None
        saved = json.loads(self.path.read_text())
        plan = saved["plan"]
        ints = lambda d: {int(k): v for k, v in d.items()}  # noqa: E731  (JSON keys are strings)
        return (Plan(plan["topic"], ints(plan["starts"]), ints(plan["ends"]), ints(plan["truncated"])),
                ints(saved["positions"]))

    def save(self, plan: Plan, positions: dict[int, int]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"plan": asdict(plan), "positions": positions}))
        os.replace(temporary, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass
class Filters:
    aspect: str | None = None
    urn_like: str | None = None

    def __post_init__(self) -> None:
        self._urn = like(self.urn_like) if self.urn_like else None

    def keeps_key(self, urn: str) -> bool:
        return self._urn is None or self._urn.matches(urn)

    def keeps(self, item: Decoded) -> bool:
        return isinstance(item, AspectChange | TimeseriesPoint | TimeseriesDeletion) and (
            self.aspect is None or item.aspect == self.aspect)


class Replay:
    """Applies a plan's records to the read models of `processor` (or to `target`, the read
    models of a rebuild: Rebuild.staging); `store` tells which entities were deleted, whose
    points a replay must not bring back; `workers` processes decode ahead (0: none)."""

    def __init__(self, log_: EventLog, processor: MclProcessor, store: AspectStore, filters: Filters,
                 target: ReadModels | None = None, batch: int = BATCH, workers: int = 0):
        self.log = log_
        self.processor = processor
        self.store = store
        self.filters = filters
        self.target = target
        self.batch = batch
        self.workers = workers
        self._deleted: dict[str, bool] = {}

    def run(self, plan: Plan, positions: dict[int, int], progress: Callable[[dict[int, int], int], None]) -> int:
        """Replay from positions (partition -> next offset) to the plan's ends; after each batch
        progress(positions, records read) is called. Returns the changes applied. A thread
        reads and decodes the next batches (with `workers`, worker processes decode them and
        run the read models' preparer, the search analysis) while this one applies."""
        applied = 0
        starts = dict(positions)
        batches = ((part, records) for part, end in plan.ends.items()
                   for records in self._batches(plan.topic, part, starts[part], end))
        with ExitStack() as stack:
            models = self.target or self.processor.read_models
            pooled = stack.enter_context(pool(self.processor.decoder, models.preparer(), self.workers)) \
                if self.workers else None
            if pooled is None:
                decoded: Iterator[tuple[tuple[int, list[LogRecord]], list[Decoded]]] = (
                    (batch, self._decode(batch[1])) for batch in batches)
            else:
                decoded = ahead(batches, lambda batch: pooled.submit(
                    decode_in_worker, [r.value for r in batch[1] if self.filters.keeps_key(r.key)]),
                    lookahead=2 * self.workers)
            for (part, records), items in stack.enter_context(in_thread(decoded, PREFETCH)):
                applied += self.apply(records, items)
                positions[part] = records[-1].offset + 1
                progress(positions, len(records))
        return applied

    def _batches(self, topic: str, part: int, offset: int, end: int) -> Iterator[list[LogRecord]]:
        while offset < end:
            records = [r for r in self.log.read(topic, part, offset, min(self.batch, end - offset)) if r.offset < end]
            if not records:
                return  # retention removed the rest of the range meanwhile
            yield records
            offset = records[-1].offset + 1

    def _decode(self, records: Sequence[LogRecord]) -> list[Decoded]:
        return decode(self.processor.decoder, None, [r.value for r in records if self.filters.keeps_key(r.key)])

    def rebuild(self, plan: Plan, positions: dict[int, int], progress: Callable[[dict[int, int], int], None],
                rebuild: Rebuild) -> int:
        """Into the staging model of `rebuild` (self.target, None when a resumed rebuild had
        switched already): the plan, then what was appended meanwhile; the switch; then what
        arrived since the last read, into the models readers now use."""
        applied = 0
        if self.target is not None:
            applied += self.run(plan, positions, progress)
            for _ in range(CATCH_UP_ROUNDS):
                if not extend(plan, self.log, positions):
                    break
                applied += self.run(plan, positions, progress)
            rebuild.switch(self.target)
            self.target = None
        extend(plan, self.log, positions)
        applied += self.run(plan, positions, progress)
        rebuild.settle()
        return applied

    def apply(self, records: Sequence[LogRecord], decoded: Sequence[Decoded]) -> int:
        """Apply a batch; `decoded`: its records that pass the key filter, decoded."""
        kept = [r for r in records if self.filters.keeps_key(r.key)]
        decoded = resolved(self.processor.decoder, [r.value for r in kept], decoded)
        pairs = [(r, item) for r, item in zip(kept, decoded, strict=True) if self.filters.keeps(item)]
        pairs = [(r, item) for r, item in pairs if not isinstance(item, TimeseriesPoint) or not self._gone(item.urn)]
        self.processor.process([r for r, _ in pairs], [item for _, item in pairs], self.target)
        return len(pairs)

    def _gone(self, urn: str) -> bool:
        """Whether the entity was deleted (its key aspect's newest version is a deletion): the
        live processor removed its points, so a replay leaves them out."""
        if urn not in self._deleted:
            entity = self.processor.registry.entity(entity_type_of(urn))
            key = self.store.get(urn, entity.key_aspect) if entity else None
            self._deleted[urn] = key is not None and not key.exists
        return self._deleted[urn]
