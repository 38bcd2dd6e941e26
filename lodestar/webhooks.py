"""Webhook registrations: entities `urn:li:webhook:<id>` whose `webhookInfo` aspect holds the URL,
the filters and the fingerprints of the signing secrets, written as MCPs (so they are versioned,
and every change to them is itself an MCL). Managing them needs ADMIN on the instance. The changes
a webhook's URL did not accept are its `webhookDeadLetter` points (timeseries), read from the read
models.

Secrets are no metadata. Each is kept in the secret store (lodestar.secrets) under the webhook's
URN, and the aspect names it by its fingerprint only, so no MCL, version, subscription, replay or
restore carries it; a secret is shown once, in the answer of the request that set it (`register`,
`rotate`). A rotation makes a new secret the current one; the secrets valid until then stay valid
for the grace period the caller gives at most, and the dispatcher signs each delivery with every
valid secret, so a receiver can switch to the new secret at its own pace within that period.

Webhooks registered before secrets left the aspect hold theirs in `webhookInfo`: `upgrade` (run
when the dispatcher or the API starts) moves each such secret into the secret store and writes a
version without it. The earlier versions still hold the secret (so does the upgrade's MCL, as its
previous value): rotate it after upgrading.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from gms.access import ADMIN, SUPERUSER
from gms.access.admin import AccessAdmin
from gms.errors import ProposalFailed
from gms.service import Gms
from gms.store import StoredAspect
from ingest.like import MAX_PATTERN_LENGTH
from ingest.proposal import Proposal
from ingest.subscribe import Change, ChangeFilter
from lodestar.secrets import SecretStore, fingerprint
from lodestar.secrets.beside import secret_store_of
from lodestar.webhook_addresses import AddressRefused, AddressRules
from mcl_processor.timeseries import TimeseriesStore
from schemas.registry import load_named_types

PREFIX = "urn:li:webhook:"
INFO, DEAD_LETTER = "webhookInfo", "webhookDeadLetter"
MAX_GRACE_SECONDS = 30 * 24 * 3600  # the longest grace period a rotation may give the secrets it replaces
_ID = re.compile(r"[a-z0-9]{1,64}")


def _now_ms() -> int:
    return int(time.time() * 1000)


class WebhookError(ValueError):
    """A registration request refused; `status` is its HTTP status (400 or 404)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PreviousSecret:
    """A secret a rotation replaced, still signing deliveries until `valid_until_ms`."""

    fingerprint: str
    valid_until_ms: int


@dataclass(frozen=True)
class Webhook:
    id: str
    url: str
    filter: ChangeFilter
    fingerprint: str  # of the current secret
    previous: tuple[PreviousSecret, ...] = ()
    description: str | None = None
    registered_ms: int = 0
    version: int = 0  # of the webhookInfo aspect this was read from (0: unknown)
    secret: str | None = None  # only in what register and rotate return: shown once, never read back

    def wants(self, change: Change) -> bool:
        """Whether the change goes to this webhook: logged after it was registered, past its filters."""
        return change.timestamp_ms >= self.registered_ms and self.filter.admits(change)

    def fingerprints(self, now_ms: int) -> list[str]:
        """The secrets that sign a delivery at `now_ms`: the current one, then those whose grace
        period has not ended."""
        return [self.fingerprint, *(p.fingerprint for p in self.previous if p.valid_until_ms > now_ms)]

    @property
    def urn(self) -> str:
        return PREFIX + self.id

    @classmethod
    def of(cls, urn: str, info: dict[str, Any], version: int = 0) -> Webhook:
        """The webhook a `webhookInfo` value (of that version) describes (also one of before
        secrets left the aspect: its fingerprint is then computed from the secret it holds)."""
        legacy = info.get("secret")
        current = info.get("secretFingerprint") or (fingerprint(legacy) if isinstance(legacy, str) else "")
        previous = tuple(PreviousSecret(p["fingerprint"], p["validUntil"]) for p in info.get("previousSecrets") or ())
        return cls(urn.removeprefix(PREFIX), info["url"],
                   ChangeFilter.of(info.get("entityTypes") or (), info.get("aspects") or (),
                                   info.get("changeTypes") or (), info.get("urnPattern")),
                   current, previous, info.get("description"), info.get("registeredAt") or 0, version)

    def to_json(self) -> dict[str, Any]:
        """What the API shows: no secret, but its fingerprint (and those of the previous secrets
        still in their grace period), except right after it was set (`secret`)."""
        now = _now_ms()
        out = {"id": self.id, "urn": self.urn, "url": self.url, "description": self.description,
               **self.filter.to_json(), "secretFingerprint": self.fingerprint,
               "previousSecrets": [{"fingerprint": p.fingerprint, "validUntil": p.valid_until_ms}
                                   for p in self.previous if p.valid_until_ms > now]}
        return {**out, "secret": self.secret} if self.secret is not None else out


class Webhooks:
    """Registers, rotates, lists and removes webhooks (as the acting principal), and reads dead
    letters. `secrets`: the secret store (by default the one beside GMS's aspect store);
    `addresses`: where a webhook's URL may point (lodestar.webhook_addresses; by default public
    addresses only)."""

    def __init__(self, gms: Gms, secrets: SecretStore | None = None, addresses: AddressRules | None = None):
        self.gms = gms
        self.addresses = addresses or AddressRules()
        self.secrets = secrets if secrets is not None else secret_store_of(gms.store)

    def register(self, actor: str, body: Any) -> Webhook:
        """A new webhook from a request body {url, secret?, entityTypes?, aspects?, changeTypes?,
        urnPattern?, description?}; its secret is made when none is given. The secret goes into
        the secret store first, then the registration (with its fingerprint) is written; the
        webhook returned carries the secret, as nothing else will."""
        AccessAdmin(self.gms).require_admin(actor)
        info, secret = self._info(body)
        urn = PREFIX + uuid.uuid4().hex[:16]
        info["secretFingerprint"] = self.secrets.put(urn, secret)
        try:
            self._apply(actor, Proposal("webhook", urn, "CREATE", INFO, info))
        except BaseException:
            with contextlib.suppress(Exception):
                self.secrets.remove(urn)
            raise
        return replace(Webhook.of(urn, info), secret=secret)

    def _info(self, body: Any) -> tuple[dict[str, Any], str]:
        if not isinstance(body, dict):
            raise WebhookError("body must be a JSON object with a url")
        unknown = sorted(set(body) - {"url", "secret", "entityTypes", "aspects", "changeTypes", "urnPattern",
                                      "description"})
        if unknown:
            raise WebhookError(f"unknown field(s) {', '.join(unknown)}")
        url = body.get("url")
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
        if len(body.get("urnPattern") or "") > MAX_PATTERN_LENGTH:
            raise WebhookError(f"urnPattern: {len(body['urnPattern'])} characters, over the limit of"
                               f" {MAX_PATTERN_LENGTH}")
        try:  # last: it resolves the host
            self.addresses.check_url(url)
        except AddressRefused as err:
            raise WebhookError(f"url: {err}") from None
        info = {"url": url, "previousSecrets": [], **{field: body.get(field) or [] for field in checks},
                "urnPattern": body.get("urnPattern") or None, "description": body.get("description"),
                "registeredAt": _now_ms()}
        return info, body.get("secret") or secrets.token_urlsafe(32)

    def rotate(self, actor: str, webhook_id: str, body: Any) -> Webhook:
        """Give the webhook a new secret (the body's `secret`, else one made here) from a body
        {graceSeconds, secret?}: the secrets valid until now stay valid for `graceSeconds` more at
        most (0 ends them at once), signing deliveries beside the new one. The new secret goes
        into the secret store first; the version naming it is written on the condition that the
        webhook did not change meanwhile (else 412, and the new secret is dropped again); then
        the replaced secrets get their deadlines in the store. The webhook returned carries the
        new secret."""
        AccessAdmin(self.gms).require_admin(actor)
        grace_ms, given = _rotation(body)
        row = self._row(webhook_id)
        hook = Webhook.of(row.urn, row.value)
        legacy = row.value.get("secret")
        if isinstance(legacy, str):  # not upgraded yet: its secret is to sign through the grace period too
            self.secrets.put(row.urn, legacy)
        secret = given or secrets.token_urlsafe(32)
        now = _now_ms()
        until = now + grace_ms
        new = self.secrets.put(row.urn, secret)
        previous: dict[str, int] = {}
        for name, deadline in [(hook.fingerprint, until), *((p.fingerprint, min(p.valid_until_ms, until))
                                                             for p in hook.previous)]:
            if name != new and deadline > now and name not in previous:
                previous[name] = deadline
        value = {**{k: v for k, v in row.value.items() if k != "secret"}, "secretFingerprint": new,
                 "previousSecrets": [{"fingerprint": name, "validUntil": t} for name, t in previous.items()]}
        proposal = Proposal("webhook", row.urn, "UPSERT", INFO, value, headers={"If-Version-Match": str(row.version)})
        try:
            self._apply(actor, proposal)
        except BaseException:
            with contextlib.suppress(Exception):  # the secret store as it was: `new` unused, or as before
                if new != hook.fingerprint:
                    was = {p.fingerprint: p.valid_until_ms for p in hook.previous}
                    self.secrets.expire(row.urn, new, was.get(new, 0))
            raise
        for name in {hook.fingerprint, *(p.fingerprint for p in hook.previous)} - {new}:
            self.secrets.expire(row.urn, name, previous.get(name, 0))
        return replace(Webhook.of(row.urn, value), secret=secret)

    def all(self) -> list[Webhook]:
        """Every registered webhook: those the secret store holds secrets of (every webhook has
        one, so it indexes them on any aspect store), and those the aspect store's scan finds
        under urn:li:webhook: (all of them on SQLite, which scans in URN order)."""
        urns = {urn for urn in self.secrets.owners() if urn.startswith(PREFIX)}
        rows = {row.urn: row for row in self._scanned()}
        for urn in urns - rows.keys():
            row = self.gms.store.get(urn, INFO)
            if row is not None and row.exists:
                rows[urn] = row
        return [Webhook.of(urn, rows[urn].value, rows[urn].version) for urn in sorted(rows)]

    def _scanned(self) -> list[StoredAspect]:
        """The live webhookInfo versions the aspect store's scan yields from urn:li:webhook: on."""
        found: list[StoredAspect] = []
        after: tuple[str, str] | None = (PREFIX, "")
        while True:
            page = list(self.gms.store.scan_latest(after, 500))
            found += [row for row in page if row.urn.startswith(PREFIX) and row.aspect == INFO and row.exists]
            if len(page) < 500 or not page[-1].urn.startswith(PREFIX):
                return found
            after = (page[-1].urn, page[-1].aspect)

    def upgrade(self) -> int:
        """Move the secret out of every webhook's latest `webhookInfo` that still holds one (as
        written before secrets left the aspect) into the secret store, and write a version
        without it; how many were moved. Each version is written on the condition that the
        webhook did not change meanwhile, so processes upgrading at once write it once."""
        moved = 0
        for urn in sorted({row.urn for row in self._scanned()} | self.secrets.owners()):
            row = self.gms.store.get(urn, INFO) if urn.startswith(PREFIX) else None
            legacy = row.value.get("secret") if row is not None and row.exists else None
            if row is None or not isinstance(legacy, str):
                continue
            value = {**{k: v for k, v in row.value.items() if k != "secret"},
                     "secretFingerprint": self.secrets.put(urn, legacy),
                     "previousSecrets": row.value.get("previousSecrets") or []}
            try:
                self._apply(SUPERUSER, Proposal("webhook", urn, "UPSERT", INFO, value,
                                                headers={"If-Version-Match": str(row.version)}))
            except ProposalFailed as failure:
                if failure.http_status != 412:  # 412: another process moved it first
                    raise
                continue
            moved += 1
        return moved

    def get(self, webhook_id: str) -> Webhook:
        row = self._row(webhook_id)
        return Webhook.of(row.urn, row.value, row.version)

    def _row(self, webhook_id: str) -> StoredAspect:
        row = self.gms.store.get(PREFIX + webhook_id, INFO) if _ID.fullmatch(webhook_id) else None
        if row is None or not row.exists:
            raise WebhookError(f"webhook {webhook_id!r} not found", 404)
        return row

    def remove(self, actor: str, webhook_id: str, hard: bool = False) -> None:
        """Remove the webhook (with `hard`, its versions are purged too), then its secrets."""
        AccessAdmin(self.gms).require_admin(actor)
        hook = self.get(webhook_id)
        if hard:
            result = self.gms.delete_entity(hook.urn, True, actor)
            if result is not None and result.failure is not None:
                raise result.failure
        else:
            self._apply(actor, Proposal("webhook", hook.urn, "DELETE", "webhookKey"))
        self.secrets.remove(hook.urn)

    def dead_letters(self, timeseries: TimeseriesStore, webhook_id: str, limit: int = 1000) -> list[dict[str, Any]]:
        return timeseries.query(self.get(webhook_id).urn, DEAD_LETTER, limit=limit)

    def _apply(self, actor: str, proposal: Proposal) -> None:
        for result in self.gms.apply([proposal], actor, authorize=True, privileges=ADMIN):
            if result.failure is not None:
                raise result.failure


def _rotation(body: Any) -> tuple[int, str | None]:
    """The grace period (milliseconds) and the secret, if given, of a rotation's body."""
    if not isinstance(body, dict):
        raise WebhookError("body must be a JSON object with graceSeconds")
    unknown = sorted(set(body) - {"graceSeconds", "secret"})
    if unknown:
        raise WebhookError(f"unknown field(s) {', '.join(unknown)}")
    grace = body.get("graceSeconds")
    if isinstance(grace, bool) or not isinstance(grace, int | float) or not 0 <= grace <= MAX_GRACE_SECONDS:
        raise WebhookError(f"graceSeconds must be a number of seconds from 0 to {MAX_GRACE_SECONDS}: how long"
                           " the secrets valid until now keep signing deliveries beside the new one (0: not at all)")
    secret = body.get("secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise WebhookError("secret must be a non-empty string")
    return round(grace * 1000), secret
