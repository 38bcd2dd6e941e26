"""Webhook registrations: entities `urn:li:webhook:<id>` whose `webhookInfo` aspect holds the URL,
the signing secret and the filters, written as MCPs (so they are versioned, and every change to
them is itself an MCL). Managing them needs ADMIN on the instance. The changes a webhook's URL
did not accept are its `webhookDeadLetter` points (timeseries), read from the read models.
"""

from __future__ import annotations

import re
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from gms.access import ADMIN
from gms.access.admin import AccessAdmin
from gms.service import Gms
from ingest.proposal import Proposal
from ingest.subscribe import Change, ChangeFilter
from mcl_processor.timeseries import TimeseriesStore
from schemas.registry import load_named_types

PREFIX = "urn:li:webhook:"
INFO, DEAD_LETTER = "webhookInfo", "webhookDeadLetter"
_ID = re.compile(r"[a-z0-9]{1,64}")


class WebhookError(ValueError):
    """A registration request refused; `status` is its HTTP status (400 or 404)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Webhook:
    id: str
    url: str
    secret: str
    filter: ChangeFilter
    description: str | None = None
    registered_ms: int = 0

    def wants(self, change: Change) -> bool:
        """Whether the change goes to this webhook: logged after it was registered, past its filters."""
        return change.timestamp_ms >= self.registered_ms and self.filter.admits(change)

    @property
    def urn(self) -> str:
        return PREFIX + self.id

    @classmethod
    def of(cls, urn: str, info: dict[str, Any]) -> Webhook:
        return cls(urn.removeprefix(PREFIX), info["url"], info["secret"],
                   ChangeFilter.of(info.get("entityTypes") or (), info.get("aspects") or (),
                                   info.get("changeTypes") or (), info.get("urnPattern")), info.get("description"),
                   info.get("registeredAt") or 0)

    def to_json(self, with_secret: bool = False) -> dict[str, Any]:
        out = {"id": self.id, "urn": self.urn, "url": self.url, "description": self.description,
               **self.filter.to_json()}
        return {**out, "secret": self.secret} if with_secret else out


class Webhooks:
    """Registers, lists and removes webhooks (as the acting principal), and reads dead letters."""

    def __init__(self, gms: Gms):
        self.gms = gms

    def register(self, actor: str, body: Any) -> Webhook:
        """A new webhook from a request body {url, secret?, entityTypes?, aspects?, changeTypes?,
        urnPattern?, description?}; its secret is made when none is given."""
        AccessAdmin(self.gms).require_admin(actor)
        info = self._info(body)
        urn = PREFIX + uuid.uuid4().hex[:16]
        self._apply(actor, Proposal("webhook", urn, "CREATE", INFO, info))
        return Webhook.of(urn, info)

    def _info(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise WebhookError("body must be a JSON object with a url")
        unknown = sorted(set(body) - {"url", "secret", "entityTypes", "aspects", "changeTypes", "urnPattern",
                                      "description"})
        if unknown:
            raise WebhookError(f"unknown field(s) {', '.join(unknown)}")
        url = body.get("url")
        try:
            parsed = urlparse(url) if isinstance(url, str) else None
        except ValueError:  # e.g. an unclosed [IPv6 address
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise WebhookError(f"url: {url!r} is not an http(s) URL")
        registry = self.gms.registry
        change_types = load_named_types()["com.linkedin.events.metadata.ChangeType"]["symbols"]
        checks = {"entityTypes": lambda n: registry.entity(n) is not None,
                  "aspects": lambda n: registry.aspect(n) is not None,
                  "changeTypes": lambda n: n in change_types}
        for field, known in checks.items():
            names = body.get(field) or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise WebhookError(f"{field} must be a list of names")
            for name in names:
                if not known(name):
                    raise WebhookError(f"{field}: unknown {field[:-1]} {name!r}")
        for field in ("secret", "urnPattern", "description"):
            if body.get(field) is not None and not isinstance(body[field], str):
                raise WebhookError(f"{field} must be a string")
        return {"url": url, "secret": body.get("secret") or secrets.token_urlsafe(32),
                **{field: body.get(field) or [] for field in checks},
                "urnPattern": body.get("urnPattern") or None, "description": body.get("description"),
                "registeredAt": int(time.time() * 1000)}

    def all(self) -> list[Webhook]:
        """Every registered webhook (the store's entities under urn:li:webhook:)."""
        found: list[Webhook] = []
        after: tuple[str, str] | None = (PREFIX, "")
        while True:
            page = list(self.gms.store.scan_latest(after, 500))
            found += [Webhook.of(row.urn, row.value) for row in page
                      if row.urn.startswith(PREFIX) and row.aspect == INFO and row.exists]
            if len(page) < 500 or not page[-1].urn.startswith(PREFIX):
                return found
            after = (page[-1].urn, page[-1].aspect)

    def get(self, webhook_id: str) -> Webhook:
        row = self.gms.store.get(PREFIX + webhook_id, INFO) if _ID.fullmatch(webhook_id) else None
        if row is None or not row.exists:
            raise WebhookError(f"webhook {webhook_id!r} not found", 404)
        return Webhook.of(row.urn, row.value)

    def remove(self, actor: str, webhook_id: str) -> None:
        AccessAdmin(self.gms).require_admin(actor)
        hook = self.get(webhook_id)
        self._apply(actor, Proposal("webhook", hook.urn, "DELETE", "webhookKey"))

    def dead_letters(self, timeseries: TimeseriesStore, webhook_id: str, limit: int = 1000) -> list[dict[str, Any]]:
        return timeseries.query(self.get(webhook_id).urn, DEAD_LETTER, limit=limit)

    def _apply(self, actor: str, proposal: Proposal) -> None:
        for result in self.gms.apply([proposal], actor, authorize=True, privileges=ADMIN):
            if result.failure is not None:
                raise result.failure
