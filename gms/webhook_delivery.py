"""Delivering changes to webhooks: a subscription (consumer group `webhooks`) on the MCL topics
POSTs each change to the URL of every registered webhook whose filters it passes.

The body is JSON: {"webhook": id, "delivery": "<topic>/<partition>/<offset>", "change": the
change as `Change.to_json` gives it}; headers `X-Lodestar-Webhook`, `X-Lodestar-Delivery` and
`X-Lodestar-Signature: sha256=<hex HMAC-SHA256 of the body, keyed by the webhook's secret>`.
A webhook gets the changes logged after it was registered.
A 2xx answer is a delivery; anything else (or no answer within `timeout`) is retried after
`backoff`, doubling, up to `attempts` sends; after the last, the change becomes a dead letter
of the webhook (a `webhookDeadLetter` point, listed by the API). Deliveries are at least once
and, per URN, in order: the next change waits until this one is delivered or dead.

Registrations are read when the dispatcher starts and then followed through their own MCLs
(changes of webhook entities are never delivered, so a dead letter cannot cause another).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
import urllib.error
import urllib.request

import orjson

from gms.access import SUPERUSER
from gms.service import Gms
from gms.webhooks import DEAD_LETTER, INFO, PREFIX, Webhook, Webhooks
from ingest.proposal import Proposal
from ingest.subscribe import Change, subscribe

log = logging.getLogger(__name__)
GROUP = "webhooks"
WEBHOOK = "webhook"  # the entity type of webhooks
SIGNATURE = "X-Lodestar-Signature"


def signature(secret: str, body: bytes) -> str:
    """The X-Lodestar-Signature value of a body: a receiver computes it again and compares."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookDispatcher:
    def __init__(self, gms: Gms, attempts: int = 5, backoff: float = 0.5, timeout: float = 10.0,
                 group: str = GROUP):
        self.gms = gms
        self.attempts, self.backoff, self.timeout = attempts, backoff, timeout
        self.group = group
        self.hooks = {hook.urn: hook for hook in Webhooks(gms).all()}
        self.delivered = 0
        self.dead = 0
        self._subscription = None
        self._stopped = threading.Event()

    def run(self, handle_signals: bool = True) -> None:
        """Deliver until stop() (or SIGINT/SIGTERM, in the main thread)."""
        with subscribe(self.gms.log, self.group, handle_signals=handle_signals, poll_timeout=0.2) as subscription:
            self._subscription = subscription
            if self._stopped.is_set():
                subscription.stop()
            self._narrow()
            for change in subscription:
                if change.urn.startswith(PREFIX):
                    self._follow(change)
                    self._narrow()
                    continue
                for hook in list(self.hooks.values()):
                    if hook.wants(change):
                        self.deliver(hook, change)

    def _narrow(self) -> None:
        """With no webhook registered, decode only the changes of webhooks (the records of
        other entities are skipped by their key): an idle dispatcher costs the write path nothing."""
        assert self._subscription is not None
        self._subscription.refilter(() if self.hooks else (WEBHOOK,))

    def stop(self) -> None:
        self._stopped.set()
        if self._subscription is not None:
            self._subscription.stop()

    def _follow(self, change: Change) -> None:
        if change.aspect == INFO and change.value is not None:
            self.hooks[change.urn] = Webhook.of(change.urn, change.value)
        elif change.aspect in (INFO, "webhookKey") and change.value is None:
            self.hooks.pop(change.urn, None)

    def deliver(self, hook: Webhook, change: Change) -> None:
        delivery = f"{change.topic}/{change.partition}/{change.offset}"
        body = orjson.dumps({"webhook": hook.id, "delivery": delivery, "change": change.to_json()})
        headers = {"Content-Type": "application/json", "X-Lodestar-Webhook": hook.id,
                   "X-Lodestar-Delivery": delivery, SIGNATURE: signature(hook.secret, body)}
        error = ""
        for attempt in range(1, self.attempts + 1):
            error = self._post(hook.url, body, headers)
            if not error:
                self.delivered += 1
                return
            log.info("webhook %s: delivery %s, attempt %d: %s", hook.id, delivery, attempt, error)
            if attempt < self.attempts:
                time.sleep(self.backoff * 2 ** (attempt - 1))
        self.dead += 1
        point = {"timestampMillis": int(time.time() * 1000), "messageId": delivery, "body": body.decode(),
                 "attempts": self.attempts, "lastError": error}
        for result in self.gms.apply([Proposal("webhook", hook.urn, "UPSERT", DEAD_LETTER, point)], SUPERUSER):
            if result.failure is not None:
                log.error("webhook %s: dead letter of %s not stored: %s", hook.id, delivery, result.failure.message)

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> str:
        """'' once the URL accepted the body, else why not."""
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return "" if 200 <= response.status < 300 else f"HTTP {response.status}"
        except urllib.error.HTTPError as err:
            return f"HTTP {err.code}"
        except (urllib.error.URLError, OSError) as err:
            return f"{type(err).__name__}: {getattr(err, 'reason', err)}"
