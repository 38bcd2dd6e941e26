"""Moves committed MCLs from the aspect store's outbox to the event log.

A version and its MCL commit together; the relay publishes afterwards and then forgets
the outbox entry. A crash in between leaves the entry to be published on restart; its
outbox id is its sequence number as the store's producer, so the log drops a second copy.
The outboxes of producers that died (their lease expired) are taken over and published as
those producers (`take_over`), so the log drops what they had published already.
"""

from __future__ import annotations

import threading
from itertools import groupby

from gms.store import AspectStore, Outbox
from ingest.eventlog import EventLog, LogMessage
from ingest.faults import crash_point


class OutboxRelay:
    def __init__(self, store: AspectStore, log: EventLog, batch_size: int = 2000):
        self.store = store
        self.log = log
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def publish_pending(self) -> int:
        """Publish everything committed so far, in commit order; returns the count."""
        with self._lock:
            return self._publish(self.store)

    def take_over(self) -> int:
        """Publish the outboxes of producers that died with events pending, each under its
        lease, taken for the time it takes (see AspectStore.take_over); returns the count."""
        published = 0
        for producer in self.store.orphaned_producers():
            taken = self.store.take_over(producer)
            if taken is None:  # another process took it first
                continue
            with taken as outbox:
                published += self._publish(outbox)
            self.log.release_producer(producer)
        return published

    def _publish(self, outbox: Outbox) -> int:
        published = 0
        while pending := outbox.pending_outbox(self.batch_size):
            crash_point("before-publish")
            for topic, entries in groupby(pending, key=lambda entry: entry[1].topic):
                self.log.append(topic, [LogMessage(m.key, m.value, seq) for seq, m in entries],
                                producer=outbox.producer_id)
            crash_point("after-publish")
            outbox.ack_outbox([entry_id for entry_id, _ in pending])
            published += len(pending)
        return published
