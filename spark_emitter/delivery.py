"""A bounded queue and the worker thread that turns its items into proposals and emits them in
batches, so the thread that offers them never waits for Lodestar."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ingest.emitters import Emitter
from ingest.proposal import Proposal

log = logging.getLogger(__name__)
_STOP = object()


@dataclass
class Counts:
    """What happened to the items offered: delivered, dropped (queue full), failed (not delivered)."""

    delivered: int = 0
    dropped: int = 0
    failed: int = 0


class Delivery:
    """`offer` never blocks: past `capacity` waiting items, an item is dropped with a warning."""

    def __init__(self, connect: Callable[[], Emitter], build: Callable[[Any], Sequence[Proposal]],
                 capacity: int = 1000, batch: int = 50, name: str = "lodestar-emitter"):
        self._connect, self._build, self._batch = connect, build, batch
        self._queue: queue.Queue = queue.Queue(capacity)
        self._emitter: Emitter | None = None
        self.counts = Counts()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def offer(self, item: Any) -> bool:
        try:
            self._queue.put_nowait(item)
            return True
        except queue.Full:
            self.counts.dropped += 1
            if self.counts.dropped == 1 or self.counts.dropped % 100 == 0:
                log.warning("Lodestar is behind: %d events dropped so far (queue of %d full)",
                            self.counts.dropped, self._queue.maxsize)
            return False

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every item offered so far is delivered or failed; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                done.wait(remaining)
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Deliver what is queued (within `timeout`), then stop the worker."""
        flushed = self.flush(timeout)
        try:
            self._queue.put(_STOP, timeout=1)
            self._thread.join(1 if not flushed else timeout)
        except queue.Full:
            pass
        return flushed

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            while len(items) < self._batch:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in items)
            work = [item for item in items if item is not _STOP]
            try:
                self._deliver(work)
            finally:
                for _ in items:
                    self._queue.task_done()
            if stop:
                if self._emitter is not None:
                    self._emitter.close()
                return

    def _deliver(self, items: list[Any]) -> None:
        proposals: list[Proposal] = []
        built = 0
        for item in items:
            try:
                proposals.extend(self._build(item))
                built += 1
            except Exception:
                log.exception("could not turn a Spark event into metadata; it is skipped")
                self.counts.failed += 1
        if not proposals:
            self.counts.delivered += built
            return
        try:
            if self._emitter is None:
                self._emitter = self._connect()
            self._emitter.emit(proposals)
            self.counts.delivered += built
        except Exception as err:
            self.counts.failed += built
            log.warning("could not deliver %d proposals to Lodestar (%d events): %s", len(proposals), built, err)
            if self._emitter is not None:
                self._emitter.close()
                self._emitter = None
