"""Signing in with a password, and the tokens people make for themselves: sessions, personal
access tokens and sign-up invitations. They are the principals and tokens of gms/access seen
the way DataHub's frontend shows them (native users, personal access tokens, invite tokens).

- A password is set by an admin (or at first start for the `datahub` admin); only its salted
  scrypt hash is stored, as `accessCredentialsInfo` of `urn:li:accessCredentials:<name>`.
- A sign-in gives a SESSION token; a principal makes PERSONAL tokens for itself (an admin, for
  anyone), or GENERATED ones (DataHub's getAccessToken: never listed); all are ordinary tokens
  (`urn:li:accessToken:<SHA-256>`), revocable like any.
- An INVITE token (made by an admin) lets one person sign up once, a RESET token one user set a
  new password once; neither authenticates anyone.
- Removing a user revokes its tokens and deletes its grants, password and entity.
- Sign-ins (failed ones too) and sign-ups are in the audit log (gms/access/audit.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from gms.access import (
    ADMIN,
    INSTANCE,
    PRIVILEGES,
    SUPERUSER,
    authenticates,
    grants_urn,
    new_token,
    principal_urn,
    token_hash,
)
from gms.access.audit import sign_in_event
from gms.access.passwords import PasswordError, check_strength, hash_password, verify
from gms.errors import ProposalFailed
from gms.service import Gms
from ingest.proposal import Proposal

SESSION_TTL_MS = 24 * 3600 * 1000
INVITE_TTL_MS = 7 * 24 * 3600 * 1000
RESET_TTL_MS = 24 * 3600 * 1000
USERNAME = re.compile(r"[A-Za-z0-9_.@+-]{1,128}")
_TOKEN_ID = re.compile(r"[0-9a-f]{64}")


class AccountError(ValueError):
    """A request refused: `status` 400 (bad input), 401 (not signed in), 403 (not allowed), 404."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def credentials_urn(principal: str) -> str:
    return f"urn:li:accessCredentials:{principal.removeprefix('urn:li:corpuser:')}"


def _now_ms() -> int:
    return int(time.time() * 1000)


class Accounts:
    """Passwords, sessions, personal tokens and invitations, written through GMS."""

    def __init__(self, gms: Gms):
        self.gms = gms

    # -- who may ----------------------------------------------------------------------------

    def is_admin(self, principal: str) -> bool:
        return principal == SUPERUSER or "ADMIN" in self.gms.access.grants(principal).get(INSTANCE, frozenset())

    def _require_admin(self, actor: str, what: str) -> None:
        if not self.is_admin(actor):
            raise AccountError(f"{actor} has no ADMIN privilege on the instance (needed to {what})", 403)

    def exists(self, principal: str) -> bool:
        """Whether the principal exists and is neither removed nor suspended."""
        key = self.gms.store.get(principal, "corpUserKey")
        status = self.gms.store.get(principal, "status")
        suspended = self.gms.store.get(principal, "corpUserStatus")
        return key is not None and key.exists and not (status is not None and status.exists
                                                        and status.value.get("removed")) \
            and not (suspended is not None and suspended.exists and suspended.value.get("status") == "SUSPENDED")

    # -- passwords --------------------------------------------------------------------------

    def set_password(self, actor: str, name: str, password: str) -> str:
        """Sets a principal's password (the actor needs ADMIN on the instance); its URN."""
        self._require_admin(actor, "set passwords")
        principal = self._principal(name)
        if not self.exists(principal):
            raise AccountError(f"principal {principal} not found", 404)
        self._store_password(actor, principal, password, authorize=True)
        return principal

    def _store_password(self, actor: str, principal: str, password: str, authorize: bool) -> None:
        try:
            check_strength(password)
        except PasswordError as err:
            raise AccountError(str(err)) from None
        self._apply(actor, [Proposal("accessCredentials", credentials_urn(principal), "UPSERT",
                                     "accessCredentialsInfo", hash_password(password))], authorize)

    def sign_in(self, username: Any, password: Any) -> str | None:
        """The principal whose password this is, or None: unknown user, wrong password, no
        password set, removed principal all answer None, after the same hashing work. Each
        attempt with a well-formed username is in the audit log (LogInEvent, FailedLogInEvent)."""
        if not isinstance(username, str) or not USERNAME.fullmatch(username):
            verify("", None)
            return None
        principal = principal_urn(username)
        row = self.gms.store.get(credentials_urn(principal), "accessCredentialsInfo")
        stored = row.value if row is not None and row.exists else None
        signed_in = verify(password if isinstance(password, str) else "", stored) and self.exists(principal)
        self._apply(principal, sign_in_event(principal, signed_in, "PASSWORD_LOGIN"), authorize=False)
        return principal if signed_in else None

    # -- tokens -----------------------------------------------------------------------------

    def start_session(self, principal: str) -> str:
        """A new SESSION token for a principal who just signed in."""
        return self._issue(principal, principal, "SESSION", "session", None, SESSION_TTL_MS, authorize=False)["token"]

    def end_session(self, token: str) -> None:
        """Revokes a session token (unknown or already revoked: nothing to do)."""
        token_id = token_hash(token)
        info = self.token(token_id)
        if info is not None and info.get("kind") == "SESSION" and not info.get("revoked"):
            self._apply(info["principal"], [self._revoked(token_id, info)], authorize=False)

    def create_token(self, actor: str, principal: str, name: str | None, description: str | None,
                     ttl_ms: int | None, kind: str = "PERSONAL") -> dict[str, Any]:
        """A PERSONAL token (or GENERATED: DataHub's getAccessToken's, not listed) for
        `principal`, made by `actor` (itself, or an admin for anyone): {"token" (shown once),
        "id", "principal", ...}."""
        if principal != actor:
            self._require_admin(actor, "create tokens for other principals")
        if not self.exists(principal):
            raise AccountError(f"principal {principal} not found", 404)
        return self._issue(actor, principal, kind, name, description, ttl_ms, authorize=False)

    def revoke_token(self, actor: str, token_id: str) -> None:
        """Revokes a token: its principal or maker may, an admin may revoke any."""
        info = self.token(token_id) if isinstance(token_id, str) and _TOKEN_ID.fullmatch(token_id) else None
        if info is None or not (actor in (info["principal"], info.get("createdBy")) or self.is_admin(actor)):
            raise AccountError(f"token {token_id!r} not found", 404)  # the same answer for someone else's
        if not info.get("revoked"):
            self._apply(actor, [self._revoked(token_id, info)], authorize=False)

    def token(self, token_id: str) -> dict[str, Any] | None:
        """A token's accessTokenInfo by its id, or None."""
        row = self.gms.store.get(f"urn:li:accessToken:{token_id}", "accessTokenInfo")
        return row.value if row is not None and row.exists else None

    def visible(self, actor: str, token_id: str) -> dict[str, Any] | None:
        """A token's info if the actor may see it (its principal's, its maker's, an admin's)."""
        info = self.token(token_id)
        if info is None or not (actor in (info["principal"], info.get("createdBy")) or self.is_admin(actor)):
            return None
        return info

    def _issue(self, actor: str, principal: str, kind: str, name: str | None, description: str | None,
               ttl_ms: int | None, authorize: bool) -> dict[str, Any]:
        token = new_token()
        token_id = token_hash(token)
        now = _now_ms()
        info = {"principal": principal, "name": name, "revoked": False, "kind": kind, "description": description,
                "createdBy": actor, "createdAt": now, "expiresAt": None if ttl_ms is None else now + ttl_ms}
        self._apply(actor, [Proposal("accessToken", f"urn:li:accessToken:{token_id}", "CREATE", "accessTokenInfo",
                                     info)], authorize)
        return {"token": token, "id": token_id, **info}

    @staticmethod
    def _revoked(token_id: str, info: dict[str, Any]) -> Proposal:
        return Proposal("accessToken", f"urn:li:accessToken:{token_id}", "UPSERT", "accessTokenInfo",
                        {**info, "revoked": True})

    # -- sign-up ----------------------------------------------------------------------------

    def create_invite(self, actor: str) -> str:
        """A new invitation (the actor needs ADMIN): good for one sign-up within INVITE_TTL_MS."""
        self._require_admin(actor, "invite people")
        return self._issue(actor, actor, "INVITE", "invite", None, INVITE_TTL_MS, authorize=True)["token"]

    def sign_up(self, invite: Any, username: Any, password: Any, info: dict[str, Any]) -> str:
        """Creates a principal with a password, using up an invitation; its URN. A bad or used
        invitation is 401, a taken username 409: nothing is written then."""
        invite_id = token_hash(invite) if isinstance(invite, str) and invite else ""
        found = self.token(invite_id) if invite_id else None
        if found is None or found.get("kind") != "INVITE" or not authenticates({**found, "kind": None}):
            raise AccountError("the invite token is not valid (unknown, used or expired)", 401)
        if not isinstance(username, str) or not USERNAME.fullmatch(username):
            raise AccountError("username: use 1 to 128 letters, digits, _ . @ + -")
        principal = principal_urn(username)
        if self.gms.store.get(principal, "corpUserKey") is not None:
            raise AccountError(f"user {username!r} already exists", 409)
        try:
            check_strength(password)
        except PasswordError as err:
            raise AccountError(str(err)) from None
        user = {"active": True, **{k: v for k, v in info.items() if isinstance(v, str) and v}}
        inviter = found["createdBy"] or SUPERUSER
        self._apply(inviter, [self._revoked(invite_id, found),
                              Proposal("corpuser", principal, "UPSERT", "corpUserInfo", user),
                              Proposal("corpuser", principal, "UPSERT", "status", {"removed": False})], False)
        self._store_password(inviter, principal, password, authorize=False)
        self._apply(principal, sign_in_event(principal, True, "SIGN_UP_LINK_LOGIN"), authorize=False)
        return principal

    # -- password resets and removals ----------------------------------------------------------

    def create_reset_token(self, actor: str, user: str) -> str:
        """A RESET token (the actor needs ADMIN) with which `user`, who has a password, sets a
        new one once within RESET_TTL_MS."""
        self._require_admin(actor, "reset passwords")
        principal = self._principal(user)
        row = self.gms.store.get(credentials_urn(principal), "accessCredentialsInfo")
        if not self.exists(principal) or row is None or not row.exists:
            raise AccountError(f"{principal} is no user with a password", 404)
        return self._issue(actor, principal, "RESET", "password reset", None, RESET_TTL_MS, authorize=True)["token"]

    def reset_password(self, token: Any, username: Any, password: Any) -> str:
        """Sets a new password with a RESET token made for this user, using the token up; 401
        for a token that is unknown, used, expired or made for someone else."""
        token_id = token_hash(token) if isinstance(token, str) and token else ""
        found = self.token(token_id) if token_id else None
        principal = principal_urn(username) if isinstance(username, str) and USERNAME.fullmatch(username) else None
        if found is None or found.get("kind") != "RESET" or found["principal"] != principal \
                or not authenticates({**found, "kind": None}):
            raise AccountError("the reset token is not valid (unknown, used, expired or for another user)", 401)
        try:
            check_strength(password)
        except PasswordError as err:
            raise AccountError(str(err)) from None
        self._apply(found["createdBy"] or SUPERUSER, [self._revoked(token_id, found)], authorize=False)
        self._store_password(found["createdBy"] or SUPERUSER, principal, password, authorize=False)
        return principal

    def remove_user(self, actor: str, user: str, token_ids: Sequence[str]) -> bool:
        """Deletes a user (the actor needs ADMIN): revokes `token_ids` (its tokens), deletes its
        grants and password, then the user entity itself; False when there was no such user."""
        self._require_admin(actor, "remove users")
        principal = self._principal(user)
        if principal == actor:
            raise AccountError("a principal cannot remove itself")
        if self.gms.store.get(principal, "corpUserKey") is None:
            return False
        for token_id in token_ids:
            info = self.token(token_id)
            if info is not None and info["principal"] == principal and not info.get("revoked"):
                self._apply(actor, [self._revoked(token_id, info)], authorize=True)
        for urn in (grants_urn(principal), credentials_urn(principal), principal):
            result = self.gms.delete_entity(urn, True, actor)
            if result is not None and result.failure is not None:
                raise result.failure
        return True

    # -- the first admin --------------------------------------------------------------------

    def ensure_admin(self, name: str, password: str) -> bool:
        """Makes `name` a principal with every privilege on the instance and this password,
        unless it already has a password (then nothing changes: the operator changes it with
        `lodestar principal set-password`). Whether it was made."""
        principal = self._principal(name)
        row = self.gms.store.get(credentials_urn(principal), "accessCredentialsInfo")
        if row is not None and row.exists:
            return False
        try:
            check_strength(password)
        except PasswordError as err:
            raise AccountError(f"the admin password: {err}") from None
        grants = {"grants": [{"resource": INSTANCE, "privileges": list(PRIVILEGES)}]}
        self._apply(SUPERUSER, [
            Proposal("corpuser", principal, "UPSERT", "corpUserInfo",
                     {"active": True, "displayName": principal.removeprefix("urn:li:corpuser:")}),
            Proposal("corpuser", principal, "UPSERT", "status", {"removed": False}),
            Proposal("accessGrants", grants_urn(principal), "UPSERT", "accessGrantsInfo", grants)], False)
        self._store_password(SUPERUSER, principal, password, authorize=False)
        return True

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _principal(name: str) -> str:
        if not isinstance(name, str) or not USERNAME.fullmatch(name.removeprefix("urn:li:corpuser:")):
            raise AccountError(f"principal name {name!r}: use letters, digits, _ . @ + -")
        return principal_urn(name)

    def _apply(self, actor: str, proposals: Sequence[Proposal], authorize: bool) -> None:
        """Applies the proposals as `actor`; with `authorize`, the write path checks ADMIN again."""
        results = self.gms.apply(proposals, actor, authorize=authorize, privileges=ADMIN if authorize else None)
        for result in results:
            if result.failure is not None:
                raise result.failure if isinstance(result.failure, ProposalFailed) else AccountError(
                    str(result.failure))
