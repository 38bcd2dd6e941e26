"""Managing principals, tokens and grants: each change is an MCP applied as the acting
principal, who needs ADMIN on the instance (the write path checks it again)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from gms.access import (
    ADMIN,
    INSTANCE,
    PRIVILEGES,
    SUPERUSER,
    grants_urn,
    new_token,
    principal_urn,
    token_hash,
)
from gms.access.controlled import checked_against
from gms.errors import ProposalFailed
from gms.service import Gms
from ingest.proposal import Proposal
from schemas.metadata_entity import EntityError, from_path, to_urn
from schemas.urns import Urn, UrnError

_NAME = re.compile(r"[A-Za-z0-9_.@-]+")


class AccessError(ValueError):
    """A request the access API refuses; `status` is its HTTP status (400 or 404)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class AccessAdmin:
    def __init__(self, gms: Gms):
        self.gms = gms

    def require_admin(self, actor: str) -> None:
        """Raises ProposalFailed (403) unless the actor holds ADMIN on the instance."""
        if actor != SUPERUSER and "ADMIN" not in self.gms.access.grants(actor).get(INSTANCE, frozenset()):
            raise ProposalFailed("forbidden", f"{actor} has no ADMIN privilege on the instance (needed to manage"
                                 " principals, tokens and grants)", 403)

    def add_principal(self, actor: str, name: str, display_name: str | None = None) -> str:
        self.require_admin(actor)  # first: what a refused caller learns must not depend on the input
        if not isinstance(name, str) or not _NAME.fullmatch(name.removeprefix("urn:li:corpuser:")):
            raise AccessError(f"principal name {name!r}: use letters, digits, _ . @ -")
        urn = principal_urn(name)
        info = {"active": True, "displayName": display_name or urn.removeprefix("urn:li:corpuser:")}
        self._apply(actor, [Proposal("corpuser", urn, "UPSERT", "corpUserInfo", info),
                            Proposal("corpuser", urn, "UPSERT", "status", {"removed": False})])
        return urn

    def remove_principal(self, actor: str, name: str) -> str:
        self.require_admin(actor)  # before looking the principal up: a 404 would tell who exists
        urn = self._existing_principal(name)
        self._apply(actor, [Proposal("corpuser", urn, "UPSERT", "status", {"removed": True})])
        return urn

    def create_token(self, actor: str, principal: str, label: str | None = None) -> dict[str, str]:
        """A new token for a principal: {"token" (shown once), "id", "principal"}."""
        self.require_admin(actor)
        urn = self._existing_principal(principal)
        token = new_token()
        hashed = token_hash(token)
        self._apply(actor, [Proposal("accessToken", f"urn:li:accessToken:{hashed}", "CREATE", "accessTokenInfo",
                                     {"principal": urn, "name": label, "revoked": False})])
        return {"token": token, "id": hashed, "principal": urn}

    def revoke_token(self, actor: str, token_id: str) -> None:
        self.require_admin(actor)
        urn = f"urn:li:accessToken:{token_id}"
        row = self.gms.store.get(urn, "accessTokenInfo") if re.fullmatch(r"[0-9a-f]{64}", token_id) else None
        if row is None or not row.exists:
            raise AccessError(f"token {token_id!r} not found", 404)
        self._apply(actor, [Proposal("accessToken", urn, "UPSERT", "accessTokenInfo", {**row.value, "revoked": True})])

    def grants(self, principal: str) -> list[dict[str, Any]]:
        held = self.gms.access.grants(principal_urn(principal))
        return [{"resource": r, "privileges": [p for p in PRIVILEGES if p in held[r]]} for r in sorted(held)]

    def grant(self, actor: str, principal: str, resource: str, privileges: Iterable[str]) -> list[dict[str, Any]]:
        self.require_admin(actor)
        wanted = _privileges(privileges)
        return self._change_grants(actor, principal, resource, lambda held: held | wanted)

    def revoke(self, actor: str, principal: str, resource: str, privileges: Iterable[str] | None
               ) -> list[dict[str, Any]]:
        """Take privileges (all with None) on a resource from a principal."""
        gone = frozenset(PRIVILEGES) if privileges is None else _privileges(privileges)
        return self._change_grants(actor, principal, resource, lambda held: held - gone)

    def _change_grants(self, actor: str, principal: str, resource: str, change: Any) -> list[dict[str, Any]]:
        self.require_admin(actor)
        urn = self._existing_principal(principal)
        target = resource_of(resource)
        for _ in range(5):
            row = self.gms.store.get(grants_urn(urn), "accessGrantsInfo")
            live = row if row is not None and row.exists else None
            held = {g["resource"]: frozenset(g["privileges"]) for g in (live.value["grants"] if live else [])}
            held[target] = change(held.get(target, frozenset()))
            value = {"grants": [{"resource": r, "privileges": [p for p in PRIVILEGES if p in held[r]]}
                                for r in sorted(held) if held[r]]}
            proposal = Proposal("accessGrants", grants_urn(urn), "UPSERT", "accessGrantsInfo", value,
                                headers={"If-Version-Match": str(live.version if live else -1)})
            (result,) = self.gms.apply([proposal], actor, authorize=True)
            if result.failure is None:
                return self.grants(urn)
            if result.failure.code != "precondition_failed":
                raise result.failure
        raise ProposalFailed("conflict", f"the grants of {urn} kept changing under concurrent writers; retry", 409)

    def _existing_principal(self, name: str) -> str:
        urn = principal_urn(name)
        try:
            Urn.parse(urn)
        except UrnError as err:
            raise AccessError(str(err)) from None
        if not self.gms.store.get(urn, "corpUserKey"):
            raise AccessError(f"principal {urn} not found", 404)
        return urn

    def _apply(self, actor: str, proposals: Sequence[Proposal]) -> None:
        self.require_admin(actor)
        for result in self.gms.apply(proposals, actor, authorize=True, privileges=ADMIN):
            if result.failure is not None:
                raise result.failure


def resource_of(text: str) -> str:
    """A grant's resource: `instance`, a URN, or a CDAP path (`ns/datasets/ds`); raises
    AccessError for anything else or for an entity checked against another one (a field)."""
    if text == INSTANCE:
        return INSTANCE
    try:
        urn = str(Urn.parse(text)) if text.startswith("urn:li:") else to_urn(from_path(text))
    except (UrnError, EntityError) as err:
        raise AccessError(f"resource {text!r}: {err}") from None
    checked = checked_against(urn)[0]
    if checked != urn:
        raise AccessError(f"resource {text!r}: its metadata is checked against {checked}; grant on that")
    return urn


def _privileges(privileges: Iterable[str]) -> frozenset[str]:
    if isinstance(privileges, str) or not all(isinstance(p, str) for p in privileges):
        raise AccessError("privileges must be a list of READ, WRITE, ADMIN")
    wanted = frozenset(p.upper() for p in privileges)
    if not wanted or wanted - set(PRIVILEGES):
        raise AccessError(f"privileges must be some of READ, WRITE, ADMIN, not {sorted(privileges)}")
    return wanted
