"""Delivering changes to webhooks: a subscription (consumer group `webhooks`) on the MCL topics
POSTs each change to the URL of every registered webhook whose filters it passes.

The body is JSON: {"webhook": id, "delivery": "<topic>/<partition>/<offset>", "change": the
change as `Change.to_json` gives it, and for a change of tags or properties (`userScopeMetadata`,
`systemScopeMetadata`) "metadataChange": CDAP's change record of it (lodestar/metadata/changes.py:
what was added and removed, so a receiver needs no diff)}; headers `X-Lodestar-Webhook`, `X-Lodestar-Delivery` and
`X-Lodestar-Signature: sha256=<hex HMAC-SHA256 of the body, keyed by the webhook's secret>`; while
the secrets a rotation replaced are in their grace period, one `sha256=<hex>` per valid secret,
the current one first, separated by ", " (a receiver accepts the body when one matches: `verify`).
The secrets come from the secret store (lodestar.secrets), each read once by its fingerprint; which
ones sign is decided at each attempt, from the latest registration the dispatcher has read.
A webhook gets the changes logged after it was registered.
A 2xx answer is a delivery; anything else (no answer within `timeout`, no secret to sign with,
a redirect, which is never followed, a URL or address lodestar.webhook_addresses refuses, any
error) is retried after
`backoff`, doubling, up to `attempts` sends; after the last, the change becomes a dead letter
of the webhook (a `webhookDeadLetter` point, listed by the API).

Each webhook has a queue and a thread of its own (an outlet) that sends its changes in log
order, so per URN in order: a change waits until the one before it is delivered or dead, but
only for that webhook; a failing URL holds no other webhook up, unless its queue is full
(`max_pending` changes), when reading waits for it. Deliveries are at least once: a change's
position is committed once every webhook it was for is done with it and with everything
before it in its partition. stop() (or SIGINT/SIGTERM) ends the backoff waits at once; a
delivery cut short is neither dead-lettered nor committed, so it is sent again after a restart.

Registrations are read when the dispatcher starts (after moving any secret still held by a
registration into the secret store: lodestar.webhooks.Webhooks.upgrade) and then followed through
their own MCLs (changes of webhook entities are never delivered, so a dead letter cannot cause another).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import queue
import threading
import time
from collections import deque

import orjson

from gms.access import SUPERUSER
from gms.service import Gms
from ingest.backends.errors import BackendError
from ingest.proposal import Proposal
from ingest.subscribe import Change, Subscription, subscribe
from lodestar.metadata.changes import record_of_change
from lodestar.metadata.service import MetadataService
from lodestar.secrets import SecretStore
from lodestar.webhook_addresses import AddressRules
from lodestar.webhook_post import post
from lodestar.webhooks import DEAD_LETTER, INFO, PREFIX, Webhook, Webhooks

log = logging.getLogger(__name__)
GROUP = "webhooks"
WEBHOOK = "webhook"  # the entity type of webhooks
SIGNATURE = "X-Lodestar-Signature"


def signature(secret: str, body: bytes) -> str:
    """The X-Lodestar-Signature value of a body signed with one secret: a receiver computes it
    again and compares (see `verify`)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """A receiver's check: whether an X-Lodestar-Signature header (one `sha256=<hex>` per secret
    signing, separated by commas) holds the signature of `body` with `secret`."""
    expected = signature(secret, body)
    return any(hmac.compare_digest(expected, part.strip()) for part in header.split(","))


class _Ticket:
    """A change handed to outlets, with how many of them still have to finish it."""

    __slots__ = ("change", "pending")

    def __init__(self, change: Change, pending: int):
        self.change, self.pending = change, pending


class _Outlet:
    """One webhook's queue of changes and the thread sending them, in order."""

    def __init__(self, dispatcher: WebhookDispatcher, hook: Webhook):
        self.dispatcher = dispatcher
        self.queue: queue.Queue[tuple[Webhook, Change, _Ticket] | None] = queue.Queue(dispatcher.max_pending)
        self.removed = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"webhook-{hook.id}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        dispatcher = self.dispatcher
        while not dispatcher.stopping.is_set():
            try:
                item = self.queue.get(timeout=0.5)
            except queue.Empty:
                if self.removed.is_set():
                    return
                continue
            if item is None:
                return
            hook, change, ticket = item
            try:
                done = self.removed.is_set() or dispatcher.deliver(hook, change, self.removed)
            except Exception:  # e.g. the dead letter not stored: the change is given up, the group goes on
                log.exception("webhook %s: change at %s/%s/%s given up", hook.id, change.topic, change.partition,
                              change.offset)
                done = True
            if not done:
                return  # stopping: neither delivered nor dead, so not finished (sent again after a restart)
            dispatcher._finished(ticket)

    def put(self, item: tuple[Webhook, Change, _Ticket] | None) -> bool:
        """Queue an item (waiting while the queue is full); False when the dispatcher stopped first."""
        while not self.dispatcher.stopped():
            try:
                self.queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                pass
        return False

    def close(self) -> None:
        """Stop after what is queued (a removed webhook's queued changes are finished unsent)."""
        with contextlib.suppress(queue.Full):  # full: it sees `stopping` or `removed` on its own
            self.queue.put_nowait(None)


class WebhookDispatcher:
    def __init__(self, gms: Gms, attempts: int = 5, backoff: float = 0.5, timeout: float = 10.0,
                 group: str = GROUP, max_pending: int = 10_000, commit_interval: float = 1.0,
                 secrets: SecretStore | None = None, addresses: AddressRules | None = None):
        """`secrets`: the secret store (by default the one beside GMS's aspect store);
        `addresses`: which addresses deliveries may go to (by default public ones only)."""
        self.gms = gms
        self.addresses = addresses or AddressRules()
        self._metadata = MetadataService(gms)  # what a URN does not say of its CDAP entity
        self.attempts, self.backoff, self.timeout = attempts, backoff, timeout
        self.group = group
        self.max_pending, self.commit_interval = max_pending, commit_interval
        webhooks = Webhooks(gms, secrets)
        self.secrets = webhooks.secrets
        if moved := webhooks.upgrade():
            log.warning("moved the secrets of %d webhook(s) out of their webhookInfo aspect into the secret store;"
                        " their earlier versions still hold them: rotate them (docs/subscriptions.md)", moved)
        self.hooks = {hook.urn: hook for hook in webhooks.all()}
        self._keys: dict[tuple[str, str], str] = {}  # (webhook URN, fingerprint) -> secret, read once
        self.delivered = 0
        self.dead = 0
        self.stopping = threading.Event()
        self._subscription: Subscription | None = None
        self._outlets: dict[str, _Outlet] = {}
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, int], deque[_Ticket]] = {}  # per partition, in log order
        self._last_commit = time.monotonic()

    def run(self, handle_signals: bool = True) -> None:
        """Deliver until stop() (or SIGINT/SIGTERM, in the main thread)."""
        with subscribe(self.gms.log, self.group, handle_signals=handle_signals, poll_timeout=0.2,
                       auto_commit=False, on_poll=self._commit, schema_registry=self.gms.schema_text) as subscription:
            self._subscription = subscription
            try:
                if self.stopping.is_set():
                    subscription.stop()
                self._narrow()
                for change in subscription:
                    if change.urn.startswith(PREFIX):
                        self._follow(change)
                        self._narrow()
                    elif not self._hand_out(change):
                        break
                    self._commit()
            finally:
                self.stopping.set()  # a signal ended the loop: the outlets stop too
                outlets = list(self._outlets.values())
                for outlet in outlets:
                    outlet.close()
                deadline = time.monotonic() + 1.0  # a POST in flight is not waited for longer
                for outlet in outlets:
                    outlet.thread.join(max(0.0, deadline - time.monotonic()))
                self._commit(force=True)

    def _hand_out(self, change: Change) -> bool:
        """Queue the change for each webhook that wants it; False when stopped meanwhile."""
        targets = [hook for hook in self.hooks.values() if hook.wants(change)]
        ticket = _Ticket(change, len(targets))
        with self._lock:
            tickets = self._inflight.setdefault((change.topic, change.partition), deque())
            if not targets and tickets and tickets[-1].pending == 0:
                tickets[-1] = ticket  # only the last of a run of finished ones matters for commits
            else:
                tickets.append(ticket)
        for hook in targets:
            outlet = self._outlets.get(hook.urn)
            if outlet is None:
                outlet = self._outlets[hook.urn] = _Outlet(self, hook)
            if not outlet.put((hook, change, ticket)):
                return False
        return True

    def _finished(self, ticket: _Ticket) -> None:
        with self._lock:
            ticket.pending -= 1

    def _commit(self, force: bool = False) -> None:
        """Commit, per partition, through the last change finished with everything before it."""
        subscription = self._subscription
        if subscription is None or not force and time.monotonic() - self._last_commit < self.commit_interval:
            return
        self._last_commit = time.monotonic()
        through: list[Change] = []
        with self._lock:
            for tickets in self._inflight.values():
                last = None
                while tickets and tickets[0].pending == 0:
                    last = tickets.popleft()
                if last is not None:
                    through.append(last.change)
            idle = not any(self._inflight.values())
        if idle:  # everything read was finished: commit it all (records the filters skipped too)
            subscription.commit()
        else:
            for change in through:
                subscription.commit(change)

    def _narrow(self) -> None:
        """With no webhook registered, decode only the changes of webhooks (the records of
        other entities are skipped by their key): an idle dispatcher costs the write path nothing."""
        assert self._subscription is not None
        self._subscription.refilter(() if self.hooks else (WEBHOOK,))

    def stopped(self) -> bool:
        """Whether stop() was called or a signal stopped the subscription."""
        return self.stopping.is_set() or self._subscription is not None and self._subscription.stopped

    def stop(self) -> None:
        """Stop reading, end the backoff waits, and leave (safe from any thread)."""
        self.stopping.set()
        if self._subscription is not None:
            self._subscription.stop()

    def _follow(self, change: Change) -> None:
        if change.aspect == INFO and change.value is not None:
            known, version = self.hooks.get(change.urn), change.version or 0
            if known is not None and version < known.version:
                return  # an older version, read again (a group reading from its start): the newer one stays
            hook = self.hooks[change.urn] = Webhook.of(change.urn, change.value, version)
            self._forget_keys(change.urn, {hook.fingerprint, *(p.fingerprint for p in hook.previous)})
        elif change.aspect in (INFO, "webhookKey") and change.value is None:
            self.hooks.pop(change.urn, None)
            self._forget_keys(change.urn, set())
            outlet = self._outlets.pop(change.urn, None)
            if outlet is not None:
                outlet.removed.set()
                outlet.close()

    def deliver(self, hook: Webhook, change: Change, removed: threading.Event | None = None) -> bool:
        """Send the change until the URL accepts it or the attempts are spent (then a dead
        letter); True once either happened, False when stop() (or `removed`) cut it short."""
        delivery = f"{change.topic}/{change.partition}/{change.offset}"
        payload = {"webhook": hook.id, "delivery": delivery, "change": change.to_json()}
        record = record_of_change(change, self._metadata.hint)
        if record is not None:  # tags and properties: what was added and removed, as CDAP says it
            payload["metadataChange"] = record
        body = orjson.dumps(payload)
        headers = {"Content-Type": "application/json", "X-Lodestar-Webhook": hook.id,
                   "X-Lodestar-Delivery": delivery}
        error = ""
        for attempt in range(1, self.attempts + 1):
            error = self._attempt(hook, body, headers)
            if not error:
                with self._lock:
                    self.delivered += 1
                return True
            log.info("webhook %s: delivery %s, attempt %d: %s", hook.id, delivery, attempt, error)
            if attempt < self.attempts and self.stopping.wait(self.backoff * 2 ** (attempt - 1)):
                return False
            if removed is not None and removed.is_set():
                return True  # nothing more for a removed webhook, and no dead letter
        if self.stopping.is_set():
            return False
        with self._lock:
            self.dead += 1
        point = {"timestampMillis": int(time.time() * 1000), "messageId": delivery, "body": body.decode(),
                 "attempts": self.attempts, "lastError": error}
        for result in self.gms.apply([Proposal("webhook", hook.urn, "UPSERT", DEAD_LETTER, point)], SUPERUSER):
            if result.failure is not None:
                log.error("webhook %s: dead letter of %s not stored: %s", hook.id, delivery, result.failure.message)
        return True

    def _attempt(self, hook: Webhook, body: bytes, headers: dict[str, str]) -> str:
        """One send: '' once the URL accepted it, else why not; whatever fails (a URL or address
        the rules refuse, an error of any kind) is this attempt's failure, never the outlet's end."""
        try:
            signed, error = self._sign(self.hooks.get(hook.urn, hook), body)  # as registered now: rotations count
            if not signed:
                return error
            return post(hook.url, body, {**headers, SIGNATURE: signed}, self.addresses, self.timeout)
        except Exception as err:
            return f"{type(err).__name__}: {err}"

    def _sign(self, hook: Webhook, body: bytes) -> tuple[str, str]:
        """(the X-Lodestar-Signature value, '') with every secret valid now, or ('', why not)."""
        keys = []
        try:
            for name in hook.fingerprints(int(time.time() * 1000)):
                key = self._keys.get((hook.urn, name))
                if key is None and (key := self.secrets.get(hook.urn, name)) is not None:
                    self._keys[(hook.urn, name)] = key
                if key is not None:
                    keys.append(key)
        except BackendError as err:
            return "", f"secret store: {err}"
        if not keys:
            return "", "no secret to sign with in the secret store (rotate the webhook's secret)"
        return ", ".join(signature(key, body) for key in keys), ""

    def _forget_keys(self, urn: str, keep: set[str]) -> None:
        """Drop the secrets read for a webhook but those named in `keep`."""
        for key in [key for key in list(self._keys) if key[0] == urn and key[1] not in keep]:  # outlets add meanwhile
            self._keys.pop(key, None)
