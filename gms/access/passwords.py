"""Password hashes: salted scrypt (hashlib), compared in constant time. Only the hash, its salt
and its cost parameters are ever stored."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Any

ALGORITHM = "scrypt"
COST = {"n": 2 ** 14, "r": 8, "p": 1}  # about 16 MiB and some 50 ms per hash
SALT_BYTES = 16
HASH_BYTES = 32
MIN_LENGTH = 8  # the default; LODESTAR_PASSWORD_MIN_LENGTH sets another (at least 1)
MIN_LENGTH_ENV = "LODESTAR_PASSWORD_MIN_LENGTH"
MAX_LENGTH = 1024  # longer passwords are refused rather than hashed at any cost


class PasswordError(ValueError):
    """A password that may not be set (too short, too long)."""


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=HASH_BYTES)


def min_length() -> int:
    """The shortest password that may be set: LODESTAR_PASSWORD_MIN_LENGTH, else MIN_LENGTH."""
    given = os.environ.get(MIN_LENGTH_ENV, "")
    return max(1, int(given)) if given.isdigit() else MIN_LENGTH


def check_strength(password: str) -> None:
    """Raises PasswordError unless the password may be set."""
    shortest = min_length()
    if not isinstance(password, str) or len(password) < shortest:
        raise PasswordError(f"a password needs at least {shortest} characters")
    if len(password) > MAX_LENGTH:
        raise PasswordError(f"a password may have at most {MAX_LENGTH} characters")


def hash_password(password: str) -> dict[str, Any]:
    """The stored form of a password: {algorithm, n, r, p, salt, hash} (hex)."""
    salt = secrets.token_bytes(SALT_BYTES)
    return {"algorithm": ALGORITHM, **COST, "salt": salt.hex(), "hash": _derive(password, salt, **COST).hex()}


_DECOY = hash_password(secrets.token_hex(16))  # checked for unknown users, so they take as long


def verify(password: str, stored: dict[str, Any] | None) -> bool:
    """Whether `password` matches the stored form; with None (no such user) a decoy is checked
    all the same, so the time taken does not tell whether the user exists."""
    form = stored if stored is not None and stored.get("algorithm") == ALGORITHM else _DECOY
    if not isinstance(password, str) or len(password) > MAX_LENGTH:
        password = ""
    digest = _derive(password, bytes.fromhex(form["salt"]), form["n"], form["r"], form["p"])
    return hmac.compare_digest(digest, bytes.fromhex(form["hash"])) and form is stored
