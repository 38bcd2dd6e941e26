"""Subscribing to metadata changes: the MetadataChangeLog topics as typed, decoded changes.

    log = SqliteEventLog(Path(".lodestar/lodestar.db"))      # or KafkaEventLog("127.0.0.1:9092")
    for change in subscribe(log, "my-app", entity_types=["dataset"], aspects=["globalTags"]):
        print(change.urn, change.aspect, change.version, change.value)

A subscription is a member of consumer group `group` on the MCL topics (both, or those given).
It yields the changes that pass its filters, in log order per partition, so the changes of one
URN come in version order. Delivery is at least once: a change counts as processed when the
caller's code for it returns (the loop asks for the next one), and processed positions are
committed every `commit_interval` seconds and when the subscription ends; a crash redelivers
what was processed but not committed yet, never less. With `auto_commit=False` nothing is
committed unless the caller calls `commit`. SIGINT and SIGTERM (when iterating in the main
thread) end the iteration cleanly: the change being handled finishes, what was processed is
committed, and nothing committed is delivered again to the group.

Iterating a subscription again goes on where the last iteration ended, with nothing skipped:
after stop() (or a signal), with the change after the one being handled; after the loop was
left otherwise (break, return, an exception), with the change in hand, which did not count as
processed (unless it was committed explicitly). The rest of the batch already read from the
log is kept for that, and handed out before the log is polled again.

`start` chooses where the group starts reading: "committed" (its committed offsets, else the
oldest record held), "earliest", "latest", or a time (a datetime, or epoch milliseconds): the
first record appended at or after it. Any start but "committed" overrides the group's offsets.

MCLs of both wire formats are read (schemas.mcl_wire): Lodestar's own (every writer schema
ever used, see schemas.events) and DataHub's schema in Confluent's framing, whose writer schema
is looked up by id in `schema_registry` (a registry's URL, e.g. Lodestar's
`http://<host>:<port>/schema-registry/api`, or a function id -> schema text; without one, the
id Lodestar's registry gives DataHub's MCL schema is read as it). A record that is no readable
MCL is logged with its position and skipped; a registry that does not answer raises
BackendUnavailable out of the iteration (nothing is skipped, nothing committed past it).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from ingest import topics as topic_names
from ingest.eventlog import EventLog, LogRecord
from ingest.eventlog.loop import ConsumeLoop, Pipeline
from ingest.like import LikePattern
from ingest.schema_lookup import registry_lookup
from schemas.events import EventCodec, EventDecodeError
from schemas.mcl_wire import Lookup, MclReader

log = logging.getLogger(__name__)
MCL_TOPICS = (topic_names.MCL_VERSIONED, topic_names.MCL_TIMESERIES)
START_NAMES = ("committed", "earliest", "latest")
_PEEKED = ("entityType", "entityUrn", "changeType", "aspectName")
Start = str | datetime | int


class SubscriptionError(ValueError):
    """A subscription asked for something that cannot be (an unknown start, a bad pattern)."""


def like(pattern: str) -> LikePattern:
    """An SQL LIKE pattern (% any run, _ one character) as subscriptions match URNs: case-insensitive."""
    return LikePattern(pattern, ignore_case=True)


def entity_type_of(urn: str) -> str:
    """The entity type an URN names (`urn:li:<type>:...`)."""
    return urn.split(":", 3)[2] if urn.count(":") >= 3 else ""


@dataclass(frozen=True, slots=True)
class Change:
    """One decoded MetadataChangeLog: the new and previous value (parsed JSON; None when absent
    or deleted), their system metadata, the proposal's headers, who made it and when, and
    where it sits in the log."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int  # when the log took it
    entity_type: str
    urn: str
    aspect: str | None
    change_type: str
    value: Any
    previous_value: Any
    system_metadata: dict[str, Any] | None
    previous_system_metadata: dict[str, Any] | None
    headers: dict[str, str] | None
    created: dict[str, Any] | None

    @property
    def version(self) -> int | None:
        """The aspect's version after the change (None for timeseries aspects)."""
        raw = (self.system_metadata or {}).get("version")
        return int(raw) if raw else None

    def to_json(self) -> dict[str, Any]:
        """The change as a JSON-ready dict (camelCase keys, as on the wire)."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset,
                "timestampMillis": self.timestamp_ms, "entityType": self.entity_type, "entityUrn": self.urn,
                "aspectName": self.aspect, "changeType": self.change_type, "version": self.version,
                "aspect": self.value, "previousAspectValue": self.previous_value,
                "systemMetadata": self.system_metadata, "previousSystemMetadata": self.previous_system_metadata,
                "headers": self.headers, "created": self.created}


def decode_change(reader: MclReader | EventCodec, record: LogRecord) -> Change:
    """The Change an MCL record (of either wire format) carries; raises EventDecodeError when it
    is none. Given an EventCodec: see MclReader without a lookup."""
    mcl = (reader if isinstance(reader, MclReader) else MclReader(reader)).decode(record.value)
    try:
        value = _json(mcl.get("aspect"))
        previous = _json(mcl.get("previousAspectValue"))
    except (UnicodeDecodeError, orjson.JSONDecodeError) as err:
        raise EventDecodeError(f"unreadable aspect value: {err}") from None
    return Change(record.topic, record.partition, record.offset, record.timestamp_ms, mcl["entityType"],
                  mcl.get("entityUrn") or record.key, mcl.get("aspectName"), mcl["changeType"], value, previous,
                  mcl.get("systemMetadata"), mcl.get("previousSystemMetadata"), mcl.get("headers"),
                  mcl.get("created"))


def _json(aspect: dict[str, Any] | None) -> Any:
    return None if aspect is None else orjson.loads(aspect["value"])


@dataclass(frozen=True)
class ChangeFilter:
    """Which changes a subscriber wants; an empty set allows any. `urn_pattern` is an SQL LIKE
    pattern (`%` any run, `_` one character, case-insensitive) the whole URN must match."""

    entity_types: frozenset[str] = frozenset()
    aspects: frozenset[str] = frozenset()
    change_types: frozenset[str] = frozenset()
    urn_pattern: str | None = None
    _urn: LikePattern | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_urn", like(self.urn_pattern) if self.urn_pattern else None)

    @classmethod
    def of(cls, entity_types: Iterable[str] = (), aspects: Iterable[str] = (), change_types: Iterable[str] = (),
           urn_pattern: str | None = None) -> ChangeFilter:
        return cls(frozenset(entity_types), frozenset(aspects), frozenset(c.upper() for c in change_types),
                   urn_pattern or None)

    def admits_key(self, urn: str) -> bool:
        """Whether a record keyed by `urn` may pass (checked before decoding it)."""
        return (not self.entity_types or entity_type_of(urn) in self.entity_types) and \
            (self._urn is None or self._urn.matches(urn))

    def admits(self, change: Change) -> bool:
        return self.admits_fields(change.entity_type, change.urn, change.aspect, change.change_type)

    def admits_fields(self, entity_type: str, urn: str, aspect: str | None, change_type: str) -> bool:
        return (not self.entity_types or entity_type in self.entity_types) \
            and (not self.aspects or aspect in self.aspects) \
            and (not self.change_types or change_type in self.change_types) \
            and (self._urn is None or self._urn.matches(urn))

    @property
    def needs_body(self) -> bool:
        """Whether the filter looks past a record's key (at its aspect or change type)."""
        return bool(self.aspects or self.change_types)

    def to_json(self) -> dict[str, Any]:
        return {"entityTypes": sorted(self.entity_types), "aspects": sorted(self.aspects),
                "changeTypes": sorted(self.change_types), "urnPattern": self.urn_pattern}


class Peek:
    """The four fields a filter decides on (entity type, URN, change type, aspect), read from
    the start of an MCL of Lodestar's current writer schema or DataHub's without decoding the
    rest (values, previous values, metadata): a filtered subscription fully decodes only what
    passes."""

    def __init__(self, reader: MclReader):
        self._project = reader.projector({name: True for name in _PEEKED})

    def admits(self, change_filter: ChangeFilter, record: LogRecord) -> bool:
        """False when the record surely does not pass the filter; True when it may (also when
        it is of an older writer schema, or unreadable: the full decode decides and says why)."""
        try:
            mcl = self._project(record.value)
        except (IndexError, UnicodeDecodeError, EventDecodeError):
            return True
        if mcl is None:
            return True
        return change_filter.admits_fields(mcl["entityType"], mcl["entityUrn"] or record.key, mcl["aspectName"],
                                           mcl["changeType"])


def start_positions(log_: EventLog, topics: Sequence[str], start: Start) -> dict[tuple[str, int], int] | None:
    """The offsets a start names, per (topic, partition); None for "committed"."""
    if start == "committed":
        return None
    if isinstance(start, str) and start not in START_NAMES:
        raise SubscriptionError(f"start must be one of {', '.join(START_NAMES)}, a datetime or epoch"
                                f" milliseconds, not {start!r}")
    parts = [(topic, part) for topic in topics for part in range(log_.partitions(topic))]
    if start == "earliest":
        return {key: log_.first_offset(*key) for key in parts}
    if start == "latest":
        return {key: log_.end_offset(*key) for key in parts}
    millis = int(start.timestamp() * 1000) if isinstance(start, datetime) else int(start)
    return {key: log_.offset_for_time(*key, millis) for key in parts}


class _Reader(Pipeline[list[LogRecord]]):
    """What both subscription flavours share: the group's consume loop (ingest.eventlog.loop,
    which commits the processed positions), decoding and filtering, and the batch being handed
    out (the loop's pipeline)."""

    def __init__(self, log_: EventLog, group: str, topics: Sequence[str], change_filter: ChangeFilter,
                 start: Start, max_records: int, poll_timeout: float, codec: EventCodec | None,
                 schema_registry: str | Lookup | None, commit_interval: float | None):
        self.group = group
        self.filter = change_filter
        lookup = registry_lookup(schema_registry) if isinstance(schema_registry, str) else schema_registry
        self.reader = MclReader(codec, lookup)
        self.loop = ConsumeLoop(log_, group, topics, start=start_positions(log_, topics, start),
                                max_records=max_records, poll_timeout=poll_timeout, commit_interval=commit_interval,
                                on_commit=self._committed)
        self.loop.consumer()  # a member of the group from now on
        self.peek: Peek | None = None
        self.delivered: dict[tuple[str, int], LogRecord] = {}  # latest record handed out (or skipped)
        self.committed: dict[tuple[str, int], int] = {}  # offset of the last record committed here
        # The last batch polled and where handing it out got to: the consumer has moved past all
        # of it, so what an iteration ended before (stop, break, an exception) is handed out by
        # the next one before anything is polled again. `at` is the record in hand while its
        # change is yielded: it advances only once the caller asks for the next one.
        self.batch: list[tuple[LogRecord, Change | None]] = []
        self.at = 0
        self.turn = 0  # the iteration that owns the batch (a newer one takes it over)
        self.refilter(change_filter)

    def refilter(self, change_filter: ChangeFilter) -> None:
        self.filter = change_filter
        self.peek = (self.peek or Peek(self.reader)) if change_filter.needs_body else None
        if self.at < len(self.batch):  # held, not processed yet: judged again by this filter
            self.batch[self.at:] = [(record, self._change(record)) for record, _ in self.batch[self.at:]]

    def wait(self, poll_timeout: float) -> float | None:
        """No poll while records of the last batch are still to be handed out."""
        return None if self.at < len(self.batch) else poll_timeout

    def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], list[LogRecord]]:
        """Every turn is handed out (also one that polled nothing, for on_poll)."""
        if self.at >= len(self.batch):
            self.batch = [(record, self._change(record)) for record in polled]
            self.at = 0
        return polled, polled

    def turns(self, stop: threading.Event) -> Iterator[list[LogRecord]]:
        """The loop's turns until stop is set: after each, the batch is handed out (current,
        advance); what was processed is committed when due as the next turn begins."""
        return self.loop.batches(stop, self)

    def _change(self, record: LogRecord) -> Change | None:
        """The record's change, or None when it is filtered out or unreadable."""
        if not self.filter.admits_key(record.key) or (self.peek is not None and not self.peek.admits(self.filter,
                                                                                                      record)):
            return None
        try:
            change = decode_change(self.reader, record)
        except EventDecodeError as err:
            log.warning("skipping record at %s/%d@%d: %s", record.topic, record.partition, record.offset, err)
            return None
        return change if self.filter.admits(change) else None

    def begin(self) -> int:
        """A new iteration: it owns the batch from now on (an older one, left suspended, stops
        touching it); its turn."""
        self.turn += 1
        return self.turn

    def current(self) -> tuple[LogRecord, Change | None] | None:
        """The next record of the batch to hand out, marked delivered (None at the batch's end).
        Records committed already (an explicit commit of the change in hand, before the loop
        was left) are passed over."""
        while self.at < len(self.batch):
            record, change = self.batch[self.at]
            if record.offset > self.committed.get((record.topic, record.partition), -1):
                self.delivered[(record.topic, record.partition)] = record
                return record, change
            self.at += 1
        return None

    def advance(self, record: LogRecord, auto_commit: bool) -> None:
        """The record in hand was processed (the caller asked for the next one)."""
        if auto_commit:
            self.loop.done((record,))
        self.at += 1

    def done(self, record: LogRecord) -> None:
        self.loop.done((record,))

    def commit(self, through: Change | None = None) -> None:
        """Commit the processed positions; or, given a change, its partition through it."""
        if through is None:
            self.loop.commit()
        else:
            self.loop.commit([LogRecord(through.topic, through.partition, through.offset, through.urn, b"",
                                        through.timestamp_ms)])

    def _committed(self, records: Sequence[LogRecord]) -> None:
        for record in records:
            key = (record.topic, record.partition)
            self.committed[key] = max(self.committed.get(key, -1), record.offset)

    def close(self) -> None:
        self.loop.close()


class _Base:
    """Options (keywords): entity_types, aspects, change_types (empty: any), urn_pattern (SQL
    LIKE); start ("committed", "earliest", "latest", a datetime or epoch milliseconds); topics
    (default both MCL topics); auto_commit and commit_interval (seconds); max_records and
    poll_timeout of each poll; handle_signals (SIGINT/SIGTERM stop the iteration when it runs in
    the main thread); codec (default: every known writer schema of Lodestar's MCLs);
    schema_registry (a registry URL or a function id -> schema text, for Confluent-framed MCLs:
    see the module docstring); on_poll, a function called
    with no arguments by the iterating thread (or event loop) after the records of each poll were
    handed out, also when a poll found none (e.g. to commit work other threads finished)."""

    def __init__(self, log_: EventLog, group: str, *, entity_types: Iterable[str] = (), aspects: Iterable[str] = (),
                 change_types: Iterable[str] = (), urn_pattern: str | None = None, start: Start = "committed",
                 topics: Sequence[str] = MCL_TOPICS, auto_commit: bool = True, commit_interval: float = 1.0,
                 max_records: int = 1000, poll_timeout: float = 0.5, handle_signals: bool = True,
                 codec: EventCodec | None = None, schema_registry: str | Lookup | None = None,
                 on_poll: Callable[[], object] | None = None):
        self.filter = ChangeFilter.of(entity_types, aspects, change_types, urn_pattern)
        self.on_poll = on_poll
        self.auto_commit = auto_commit
        self.handle_signals = handle_signals
        self._stop = threading.Event()
        self._reader = _Reader(log_, group, topics, self.filter, start, max_records, poll_timeout, codec,
                               schema_registry, commit_interval if auto_commit else None)

    def refilter(self, entity_types: Iterable[str] = (), aspects: Iterable[str] = (),
                 change_types: Iterable[str] = (), urn_pattern: str | None = None) -> None:
        """Filter the records handed out from now on (those of the last batch not processed yet
        too) by these options instead (same meanings as the constructor's); what is filtered out
        is skipped and committed all the same."""
        self.filter = ChangeFilter.of(entity_types, aspects, change_types, urn_pattern)
        self._reader.refilter(self.filter)

    @property
    def positions(self) -> dict[tuple[str, int], int]:
        """Per (topic, partition) read so far: the offset after the last record delivered
        (or skipped by the filters)."""
        return {key: record.offset + 1 for key, record in list(self._reader.delivered.items())}

    def stop(self) -> None:
        """End the iteration (the current one, else the next) after the change being handled;
        safe from any thread or a signal handler. Iterating again goes on from there."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()


class Subscription(_Base):
    """A blocking subscription: iterate it (see the module docstring); use it as a context
    manager, or call close(), to leave the group."""

    def __iter__(self) -> Iterator[Change]:
        reader = self._reader
        turn = reader.begin()
        with self._signals(turn):
            for _ in reader.turns(self._stop):  # the end of the turns commits (auto_commit)
                while not self._stop.is_set() and (item := reader.current()) is not None:
                    record, change = item
                    if change is not None:
                        yield change  # resumes once the caller's code for it has returned
                        if reader.turn != turn:  # a newer iteration took the batch over
                            return
                    reader.advance(record, self.auto_commit)
                if self.on_poll is not None:
                    self.on_poll()
            self._stop.clear()

    def run(self, callback: Callable[[Change], object]) -> None:
        """Call callback(change) for each change until stopped."""
        for change in self:
            callback(change)

    def commit(self, through: Change | None = None) -> None:
        """Commit what was processed (with auto_commit=False: what was delivered, or given a
        change, its partition through it)."""
        if through is None and not self.auto_commit:
            for record in list(self._reader.delivered.values()):
                self._reader.done(record)
        self._reader.commit(through)

    @contextmanager
    def _signals(self, turn: int) -> Iterator[None]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, lambda *_: self.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            if self._reader.turn == turn:  # else a newer iteration's handlers are in place
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def close(self) -> None:
        """Commit what was processed (auto_commit) and leave the group."""
        if self.auto_commit:
            self.commit()
        self._reader.close()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSubscription(_Base):
    """The asyncio flavour: `async for change in subscription`; polls and commits run in a
    thread of the subscription's own, so the event loop never blocks on the log."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="subscription")

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def __aiter__(self) -> AsyncIterator[Change]:
        # An async generator left by `break` is closed later by the event loop, perhaps after
        # the next iteration began: what the batch needs is kept in the reader, not here.
        reader = self._reader
        turn = reader.begin()
        loop = asyncio.get_running_loop()
        signals = [sig for sig in (signal.SIGINT, signal.SIGTERM) if self.handle_signals
                   and threading.current_thread() is threading.main_thread()]
        for sig in signals:
            loop.add_signal_handler(sig, self.stop)
        try:
            turns = reader.turns(self._stop)  # stepped in the subscription's thread: it polls and commits
            while await self._call(next, turns, None) is not None:
                while not self._stop.is_set() and (item := reader.current()) is not None:
                    record, change = item
                    if change is not None:
                        yield change
                        if reader.turn != turn:
                            return
                    reader.advance(record, self.auto_commit)
                if self.on_poll is not None:
                    self.on_poll()
            self._stop.clear()
        finally:
            if reader.turn == turn:  # else the handlers are a newer iteration's
                for sig in signals:
                    loop.remove_signal_handler(sig)

    async def commit(self, through: Change | None = None) -> None:
        """As Subscription.commit."""
        if through is None and not self.auto_commit:
            for record in list(self._reader.delivered.values()):
                self._reader.done(record)
        await self._call(self._reader.commit, through)

    async def close(self) -> None:
        """As Subscription.close."""
        if self.auto_commit:
            await self.commit()
        await self._call(self._reader.close)
        self._thread.shutdown()

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def subscribe(log_: EventLog, group: str, **options: Any) -> Subscription:
    """A blocking subscription of consumer group `group` on `log_` (options: see _Base)."""
    return Subscription(log_, group, **options)


def subscribe_async(log_: EventLog, group: str, **options: Any) -> AsyncSubscription:
    """An asyncio subscription of `group` (options as for subscribe)."""
    return AsyncSubscription(log_, group, **options)
