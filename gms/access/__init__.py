"""Authorization: principals, bearer tokens and grants, all kept as entities in the aspect store.

- A principal is a corpuser (`urn:li:corpuser:<name>`); `urn:li:corpuser:admin` (the data
  directory's admin token) may do everything.
- A token is `urn:li:accessToken:<SHA-256 of the token>` with `accessTokenInfo` naming its
  principal; the token itself is never stored. A revoked token authenticates no one; one of a
  removed, suspended or deleted principal is refused (`PrincipalDisabled`: 403, as DataHub).
- A principal's grants are the `accessGrantsInfo` aspect of `urn:li:accessGrants:<name>`:
  privileges (READ, WRITE, ADMIN) on resources. Each change is a version, so grants are audited.

A grant on a resource covers everything under it (`resource_chain`): the instance, then a
namespace, an application, its versions and programs, a dataset or stream. Metadata of a field,
a file or another custom entity is checked against its nearest real parent (a field against its
dataset), an external table outside any namespace against the instance. READ lets a principal
get an entity's metadata and see it in search, lineage and autocomplete; WRITE lets it add;
WRITE or ADMIN lets it remove; ADMIN on the instance lets it manage principals, tokens and grants,
and only it may write, delete, read or list the access-controlled entities (`controlled.py`).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterable

from gms.access.controlled import ACCESS_RESOURCE, checked_against, controls, is_controlled
from gms.errors import ProposalFailed
from gms.store import AspectStore
from schemas.metadata_entity import INSTANCE, resource_chain

SUPERUSER = "urn:li:corpuser:admin"
PRIVILEGES = ("READ", "WRITE", "ADMIN")
READ, WRITE, ADMIN = (frozenset({p}) for p in PRIVILEGES)
REMOVE = frozenset({"WRITE", "ADMIN"})


def new_token() -> str:
    """A new bearer token: 256 random bits as 64 hex digits, so it never starts with "-" (which
    a command line would take for an option: `--token -x...` failed for one token in 64)."""
    return secrets.token_hex(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def principal_urn(name: str) -> str:
    return name if name.startswith("urn:li:corpuser:") else f"urn:li:corpuser:{name}"


def grants_urn(principal: str) -> str:
    return f"urn:li:accessGrants:{principal.removeprefix('urn:li:corpuser:')}"


SYSTEM_SCOPE_ASPECT = "systemScopeMetadata"  # SYSTEM-scope tags and properties: the platform's and its programs'


def needed(entity_type: str, change_type: str, aspect: str | None = None) -> frozenset[str]:
    """The privileges (any one of them) a proposal needs: ADMIN for access-controlled entities
    and aspects (on the instance: `target`) and for SYSTEM-scope metadata (as the v3 API asks,
    so a raw proposal is no way around it), WRITE or ADMIN to delete, WRITE otherwise."""
    if controls(entity_type, (aspect,)) or aspect == SYSTEM_SCOPE_ASPECT:
        return ADMIN
    return REMOVE if change_type == "DELETE" else WRITE


def target(entity_type: str, urn: str, aspects: Iterable[str | None]) -> str:
    """What a change of these aspects of `urn` is checked against: the instance for an
    access-controlled entity or aspect, else the entity."""
    return INSTANCE if controls(entity_type, aspects) else urn


AUTHENTICATING_KINDS = (None, "PERSONAL", "GENERATED", "SESSION")  # INVITE and RESET tokens authenticate no one


def authenticates(info: dict) -> bool:
    """Whether a token of this accessTokenInfo authenticates its principal now: not revoked,
    not expired, and of a kind that signs in."""
    expires = info.get("expiresAt")
    return (not info.get("revoked") and info.get("kind") in AUTHENTICATING_KINDS
            and (expires is None or expires > time.time() * 1000))


class PrincipalDisabled(Exception):
    """A valid token of a principal that may not act (removed, suspended, deleted)."""


class AccessControl:
    """Answers who a token is and what a principal may do, from the aspect store."""

    def __init__(self, store: AspectStore):
        self.store = store

    def token_principal(self, hashed: str) -> str | None:
        """The principal of a token given by its SHA-256, or None (unknown, revoked, expired);
        raises PrincipalDisabled for a token of a principal removed, suspended or deleted."""
        row = self.store.get(f"urn:li:accessToken:{hashed}", "accessTokenInfo")
        if row is None or not row.exists or not authenticates(row.value):
            return None
        principal = row.value["principal"]
        status = self.store.get(principal, "status")
        if status is not None and status.exists and status.value.get("removed"):
            raise PrincipalDisabled(f"principal {principal} is removed")
        suspended = self.store.get(principal, "corpUserStatus")  # DataHub's suspension of a user
        if suspended is not None and suspended.exists and suspended.value.get("status") == "SUSPENDED":
            raise PrincipalDisabled(f"principal {principal} is suspended")
        key = self.store.get(principal, "corpUserKey")  # a deleted principal's tokens name no one
        if key is None or not key.exists:
            raise PrincipalDisabled(f"principal {principal} no longer exists")
        return principal

    def grants(self, principal: str) -> dict[str, frozenset[str]]:
        """resource -> privileges of a principal."""
        row = self.store.get(grants_urn(principal), "accessGrantsInfo")
        if row is None or not row.exists:
            return {}
        return {g["resource"]: frozenset(g["privileges"]) for g in row.value.get("grants", [])}

    def allowed(self, principal: str, privileges: Iterable[str], urn: str,
                grants: dict[str, frozenset[str]] | None = None) -> bool:
        """Whether the principal holds one of `privileges` on `urn` or a resource above it."""
        if principal == SUPERUSER:
            return True
        held = self.grants(principal) if grants is None else grants
        wanted = _wanted(privileges, urn)
        return any(held.get(resource, frozenset()) & wanted for resource in checked_against(urn))

    def require(self, principal: str, privileges: Iterable[str], urn: str, subject: str | None = None) -> None:
        """Raises ProposalFailed (403 forbidden) unless allowed (on an access-controlled entity
        only ADMIN on the instance is); `subject` is what the message says it is needed for
        (default: `urn`)."""
        wanted = _wanted(privileges, urn)
        if not self.allowed(principal, wanted, urn):
            names = " or ".join(p for p in PRIVILEGES if p in wanted)
            chain = checked_against(urn)
            raise ProposalFailed("forbidden", f"{principal} has no {names} privilege on {chain[0]}"
                                 f"{' or above it' if len(chain) > 1 else ''} (needed for {subject or urn})", 403)

    def readable(self, principal: str) -> frozenset[str] | None:
        """The resources under which the principal may read, or None for everything (READ and
        ADMIN on the instance); with ADMIN on the instance they hold ACCESS_RESOURCE."""
        if principal == SUPERUSER:
            return None
        held = self.grants(principal)
        on_instance = held.get(INSTANCE, frozenset())
        if {"READ", "ADMIN"} <= on_instance:
            return None
        resources = {resource for resource, privileges in held.items() if "READ" in privileges}
        return frozenset(resources | {ACCESS_RESOURCE} if "ADMIN" in on_instance else resources)


def _wanted(privileges: Iterable[str], urn: str) -> frozenset[str]:
    """What must be held to be allowed `privileges` on `urn`: ADMIN on an access-controlled entity."""
    return ADMIN if is_controlled(urn) else frozenset(privileges)



def can_read(readable: frozenset[str] | None, urn: str) -> bool:
    """Whether `urn` is under one of the `readable` resources (None: everything); an
    access-controlled entity only for those with ADMIN on the instance."""
    if readable is None:
        return True
    if is_controlled(urn):
        return ACCESS_RESOURCE in readable
    return any(resource in readable for resource in resource_chain(urn))
