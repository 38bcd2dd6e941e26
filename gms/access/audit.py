"""The security audit log: who signed in (or failed to), made or revoked a token, created or
changed a user, a principal's grants, a policy or an ingestion source.

Each action is a point of the timeseries aspect `securityAuditEvent` of `urn:li:auditLog:security`
(an access-controlled entity: only ADMIN on the instance reads or writes it by the generic
routes), written through the ordinary write path, so the embedded and the distributed stack keep
it alike. Changes are recorded by `Gms.apply` from the proposals it applied (`change_events`),
whichever route they came through; sign-ins by the sign-in routes (`sign_in_event`). An event
names the actor, the entity, the aspect and DataHub's event type, never a value: no password
hash, no token (a token is named by its id, the SHA-256 of the token).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ingest.proposal import Proposal, ProposalError

AUDIT_LOG = "urn:li:auditLog:security"
EVENT_ASPECT = "securityAuditEvent"
TOKEN_KINDS = (None, "PERSONAL", "GENERATED")  # sessions are sign-ins; invitations and resets are not listed


@dataclass(frozen=True, slots=True)
class Kind:
    """The event types of changes to one entity type (an update, its creation, its deletion)."""

    update: str
    create: str
    delete: str = "DeleteEntityEvent"


AUDITED: dict[str, Kind] = {
    "corpuser": Kind("UpdateUserEvent", "CreateUserEvent"),
    "accessGrants": Kind("UpdateGrantsEvent", "CreateGrantsEvent"),
    "dataHubPolicy": Kind("UpdatePolicyEvent", "CreatePolicyEvent", "DeletePolicyEvent"),
    "dataHubIngestionSource": Kind("UpdateIngestionSourceEvent", "CreateIngestionSourceEvent"),
}
TOKEN_ENTITY, CREDENTIALS_ENTITY = "accessToken", "accessCredentials"
KeyOf = Callable[[str], str | None]  # entity type -> its key aspect


def watched(proposal: Proposal | ProposalError) -> bool:
    """Whether applying this proposal may make an audit event (so its entity's existence matters)."""
    return isinstance(proposal, Proposal) and proposal.entity_type in (*AUDITED, TOKEN_ENTITY, CREDENTIALS_ENTITY)


def change_events(proposals: Sequence[Proposal | ProposalError], statuses: Sequence[str], actor: str,
                  existed: set[str], key_of: KeyOf) -> list[Proposal]:
    """The audit events of the applied proposals of a batch, in their order; `existed` holds the
    URNs of watched entities that existed before the batch (the first write of another is its
    creation)."""
    events: list[dict[str, Any]] = []
    seen = set(existed)
    for proposal, status in zip(proposals, statuses, strict=True):
        if status != "applied" or not isinstance(proposal, Proposal) or not watched(proposal):
            continue
        event = _change_event(proposal, proposal.entity_urn in seen, key_of)
        seen.add(proposal.entity_urn)
        if event is not None:
            events.append({"actorUrn": actor, **event})
    return _points(events)


def _change_event(proposal: Proposal, existed: bool, key_of: KeyOf) -> dict[str, Any] | None:
    urn, kind_of, aspect = proposal.entity_urn, proposal.entity_type, proposal.aspect_name
    if kind_of == TOKEN_ENTITY:
        return _token_event(proposal)
    if kind_of == CREDENTIALS_ENTITY:  # a password set: a change of its user (never the hash)
        if aspect != "accessCredentialsInfo" or proposal.change_type == "DELETE":
            return None
        user = "urn:li:corpuser:" + urn.removeprefix("urn:li:accessCredentials:")
        return {"eventType": AUDITED["corpuser"].update, "entityUrn": user, "entityType": "corpuser",
                "aspectName": aspect}
    kind = AUDITED[kind_of]
    if proposal.change_type == "DELETE" and aspect == key_of(kind_of):
        event_type = kind.delete
    else:
        event_type = kind.update if existed else kind.create
    return {"eventType": event_type, "entityUrn": urn, "entityType": kind_of, "aspectName": aspect}


def _token_event(proposal: Proposal) -> dict[str, Any] | None:
    """A personal token made or revoked, named as DataHub names it (`dataHubAccessToken:<id>`)."""
    info = proposal.value if isinstance(proposal.value, dict) else {}
    if proposal.aspect_name != "accessTokenInfo" or info.get("kind") not in TOKEN_KINDS:
        return None
    token_id = proposal.entity_urn.removeprefix("urn:li:accessToken:")
    return {"eventType": "RevokeAccessTokenEvent" if info.get("revoked") else "CreateAccessTokenEvent",
            "entityUrn": f"urn:li:dataHubAccessToken:{token_id}", "entityType": "dataHubAccessToken",
            "aspectName": proposal.aspect_name}


def sign_in_event(principal: str, succeeded: bool, source: str) -> list[Proposal]:
    """The audit event of a sign-in (`principal`: who signed in, or whose name was given)."""
    return _points([{"eventType": "LogInEvent" if succeeded else "FailedLogInEvent", "actorUrn": principal,
                     "loginSource": source}])


def _points(events: Sequence[dict[str, Any]]) -> list[Proposal]:
    now_ms, now_ns, salt = int(time.time() * 1000), time.time_ns(), secrets.token_hex(4)
    return [Proposal("auditLog", AUDIT_LOG, "UPSERT", EVENT_ASPECT,
                     {"timestampMillis": now_ms, "messageId": f"{now_ns:020d}-{position:04d}-{salt}", **event})
            for position, event in enumerate(events)]
