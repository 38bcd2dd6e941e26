"""Worker processes for the costly per-record part of indexing, beside the writing process.

Decoding MCLs and running the read models' preparer (the search analysis of each aspect)
take most of an indexing batch's time and need nothing but the record; writing the read
models needs the database. So a pool of forked workers decodes and prepares batches ahead
while the main process writes the batch before: the restore of the aspect store and the
live MCL processor both pipeline this way, and use every CPU.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from mcl_processor.annotations import entity_type_of
from mcl_processor.changes import AspectChange, TimeseriesDeletion, TimeseriesPoint
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.readmodels import Preparer, collector_paused
from schemas.mcl_wire import UnresolvedSchema

T = TypeVar("T")
# a PoisonRecord: why a record was skipped; UnresolvedSchema: a worker's, read again by its parent
Decoded = AspectChange | TimeseriesPoint | TimeseriesDeletion | PoisonRecord | UnresolvedSchema

PR_SET_PDEATHSIG = 1  # prctl(2)
_decoder: MclDecoder | None = None  # of a worker process
_preparer: Preparer | None = None


# A forked worker never collects the garbage it inherited: that garbage may hold SQLite
# connections, whose finalizers take a mutex another thread of the parent may have held at the
# fork, for good (a worker hung this way). Frozen right after the fork, the collector leaves it.
# (The hook runs in every child forked by a process that imported this module: serve's
# processes freeze what they inherit anyway, `lodestar.server.Node.run`.)
os.register_at_fork(after_in_child=gc.freeze)


def default_workers() -> int:
    """Worker processes: every CPU but the one the writing process uses."""
    return max(0, (os.cpu_count() or 1) - 1)


def pool(decoder: MclDecoder, preparer: Preparer | None, workers: int) -> ProcessPoolExecutor:
    """Workers forked on Linux (they only decode and prepare: no locks, files or threads of
    the parent are used, and nothing inherited is collected), else spawned (the caller's main
    module must then be import-safe)."""
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    return ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=(decoder, preparer))


def _start(decoder: MclDecoder, preparer: Preparer | None) -> None:
    global _decoder, _preparer
    _decoder, _preparer = decoder, preparer
    decoder.detach()  # schema ids it did not know at the fork are read by the parent
    _die_with_parent()


def _die_with_parent() -> None:
    """A forked worker holds copies of the parent's files and sockets (its listening socket,
    say): if the parent is killed, the worker must not outlive it and keep them open."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def decode(decoder: MclDecoder, preparer: Preparer | None, values: Sequence[bytes]) -> list[Decoded]:
    """The changes encoded MCLs make, aspect changes with their prepared contributions (a
    record a worker cannot read without looking up its schema: UnresolvedSchema)."""
    out: list[Decoded] = []
    for value in values:
        try:
            out.append(decoder.decode(value))
        except (PoisonRecord, UnresolvedSchema) as err:
            out.append(_bare(err))
    if preparer is not None:
        changes = [item for item in out if isinstance(item, AspectChange) and not item.deleted]
        # without the entities: documents merged here cost more CPU in all (their rows are pickled) than
        # they save the writer, and live indexing shares the CPUs with GMS (a restore has one to spare)
        for change, prepared in zip(changes, preparer([(c.aspect, c.value_json, c.value) for c in changes]),
                                    strict=True):
            change.prepared = prepared
    return out


def _bare(err: Exception) -> Exception:
    """err without its traceback and the exception it was raised during: kept in a batch's
    result, their frames (which hold the result) would make a garbage cycle."""
    err.__traceback__ = err.__context__ = err.__cause__ = None
    return err


def resolved(decoder: MclDecoder, values: Sequence[bytes], decoded: Sequence[Decoded]) -> list[Decoded]:
    """What workers decoded, with the records they could not resolve (UnresolvedSchema)
    decoded here, where the decoder may look their schemas up."""
    return [decode(decoder, None, [value])[0] if isinstance(item, UnresolvedSchema) else item
            for value, item in zip(values, decoded, strict=True)]


@contextmanager
def uncollected() -> Iterator[None]:
    """A worker's batch, decoded or prepared, makes some 100,000 containers and no garbage
    cycles: the cyclic collector is paused meanwhile (its scans took a tenth of a worker's
    time), and what the batch leaves alive (its result, until the pool has sent it back, and
    the readers' caches) is frozen before it runs again. Otherwise its first collection scanned
    the whole result (a quarter of a worker's time per MCL); freed by reference counts, frozen
    objects go as any other."""
    with collector_paused():
        try:
            yield
        finally:
            gc.freeze()


@uncollected()
def decode_in_worker(values: Sequence[bytes]) -> list[Decoded]:
    assert _decoder is not None
    return decode(_decoder, _preparer, values)


@uncollected()
def prepare_in_worker(items: Sequence[tuple[str, str, str | None]]) -> list[Any]:
    """What the worker's preparer makes of (URN, aspect, value JSON) items."""
    assert _preparer is not None
    return _preparer([(aspect, value_json, None) for _, aspect, value_json in items],
                     [(urn, entity_type_of(urn)) for urn, _, _ in items])


def ahead(items: Iterator[T], start: Callable[[T], Future[Any]], lookahead: int) -> Iterator[tuple[T, Any]]:
    """Each item with the result of the work `start` began for it, up to `lookahead` items
    before the caller takes it, in order."""
    pending: deque[tuple[T, Future[Any]]] = deque()
    for item in items:
        pending.append((item, start(item)))
        if len(pending) > lookahead:
            head, future = pending.popleft()
            yield head, future.result()
    while pending:
        head, future = pending.popleft()
        yield head, future.result()


@contextmanager
def in_thread(items: Iterator[T], depth: int) -> Iterator[Iterator[T]]:
    """The items, taken from `items` by a thread of their own up to `depth` ahead of the caller:
    reading a batch (the log's client waits on the network) and decoding it overlap with the
    caller writing the one before. An exception of `items` is raised to the caller in its
    place; leaving the context stops the thread (after the item it is taking)."""
    handoff: queue.Queue[tuple[bool, Any]] = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def offer(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer((True, item)):
                    return
            offer((True, end))
        except BaseException as err:  # noqa: BLE001  (raised to the consumer)
            offer((False, err))

    def consume() -> Iterator[T]:
        while True:
            ok, item = handoff.get()
            if not ok:
                raise item
            if item is end:
                return
            yield item

    thread = threading.Thread(target=produce, name="lodestar-prefetch", daemon=True)
    thread.start()
    try:
        yield consume()
    finally:
        stop.set()
        thread.join()
