"""Bearer-token authentication. Tokens are kept as SHA-256 hashes; the admin token is also
written, readable by its owner only, to the data directory so the CLI can find it.

Comparisons are constant-time: a presented token is hashed, and its digest compared with each
token held here by `hmac.compare_digest`, all of them every time; stored tokens are found by
their digest, so timing could tell at most how much of a digest of the caller's own guess
matched, which says nothing of any token."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from pathlib import Path

from gms.access import new_token

ADMIN = "urn:li:corpuser:admin"
TOKEN_FILE = "admin.token"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenAuth:
    """Maps bearer tokens to principals: those added here (the admin token), then, through
    `lookup` (given a token's SHA-256), those stored as accessToken entities."""

    def __init__(self, lookup: Callable[[str], str | None] | None = None) -> None:
        self._held: list[tuple[str, str]] = []  # (digest, principal)
        self.lookup = lookup

    def add(self, token: str, principal: str) -> None:
        self._held.append((_hash(token), principal))

    def principal(self, authorization: str | None) -> str | None:
        """The principal of an `Authorization: Bearer <token>` header, or None; `lookup` may
        raise for a valid token of a principal that may not act."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        hashed = _hash(token.strip())
        found = None
        for digest, principal in self._held:  # every one, so the time does not depend on which matched
            if hmac.compare_digest(digest, hashed):
                found = principal
        return found if found is not None or self.lookup is None else self.lookup(hashed)


def admin_token(data_dir: Path, given: str | None = None) -> tuple[str, bool]:
    """The admin token: `given`, else the one stored in data_dir, else a new one.
    Returns (token, created) and stores it in data_dir."""
    path = data_dir / TOKEN_FILE
    if given is None and path.exists():
        return path.read_text().strip(), False
    token = given or new_token()
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token, given is None
