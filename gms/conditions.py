"""Conditional-write headers, from an MCP's `headers` map or from HTTP request headers.

- `If-Version-Match: N` — the aspect's current version must be N (`-1`: must not exist).
- `If-Unmodified-Since: T` — the aspect must not have changed after T.
- `If-Modified-Since: T` — the aspect must have changed after T (an absent aspect fails).
- `If-None-Match: *` — with CREATE / CREATE_ENTITY, drop the proposal silently instead of
  failing when the aspect / entity exists.
T is ISO-8601 (`2026-01-02T03:04:05Z`) or an HTTP date.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from gms.errors import ProposalFailed

NAMES = ("If-Version-Match", "If-Unmodified-Since", "If-Modified-Since", "If-None-Match")
_BY_LOWER = {name.lower(): name for name in NAMES}


@dataclass(frozen=True, slots=True)
class Conditions:
    version: int | None = None
    unmodified_since_ms: int | None = None
    modified_since_ms: int | None = None
    none_match_any: bool = False

    def check(self, current_version: int, modified_ms: int | None) -> None:
        """Raise ProposalFailed (412) unless the aspect's state meets every condition.

        current_version is -1 and modified_ms None for an absent aspect."""
        if self.version is not None and self.version != current_version:
            raise ProposalFailed(
                "precondition_failed",
                f"If-Version-Match: expected version {self.version}, the aspect is at {current_version}",
                412, expected=str(self.version), actual=str(current_version),
            )
        if self.unmodified_since_ms is not None and modified_ms is not None \
                and modified_ms > self.unmodified_since_ms:
            raise ProposalFailed(
                "precondition_failed", "If-Unmodified-Since: the aspect was modified after that time", 412,
                expected=f"<= {_iso(self.unmodified_since_ms)}", actual=_iso(modified_ms),
            )
        if self.modified_since_ms is not None and (modified_ms is None or modified_ms <= self.modified_since_ms):
            raise ProposalFailed(
                "precondition_failed", "If-Modified-Since: the aspect was not modified after that time", 412,
                expected=f"> {_iso(self.modified_since_ms)}",
                actual="absent" if modified_ms is None else _iso(modified_ms),
            )


NONE = Conditions()


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(name: str, text: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            raise ProposalFailed(
                "invalid_header", f"headers.{name}: {text!r} is not an ISO-8601 time", 400
            ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_conditions(*header_maps: Mapping[str, str]) -> Conditions:
    """Conditions from header maps; later maps win. Unrelated headers are ignored."""
    found: dict[str, str] = {}
    for headers in header_maps:
        for key, value in headers.items():
            name = _BY_LOWER.get(key.lower())
            if name:
                found[name] = value.strip()
    if not found:
        return NONE
    version = None
    if "If-Version-Match" in found:
        try:
            version = int(found["If-Version-Match"])
        except ValueError:
            raise ProposalFailed(
                "invalid_header", f"headers.If-Version-Match: {found['If-Version-Match']!r} is not an integer", 400
            ) from None
        if version < -1 or version == 0:  # versions start at 1: 0 could only ever fail
            raise ProposalFailed("invalid_header", "headers.If-Version-Match: must be -1 or a version >= 1", 400)
    none_match = found.get("If-None-Match")
    if none_match is not None and none_match != "*":
        raise ProposalFailed("invalid_header", "headers.If-None-Match: only '*' is supported", 400)
    return Conditions(
        version=version,
        unmodified_since_ms=_parse_time("If-Unmodified-Since", found["If-Unmodified-Since"])
        if "If-Unmodified-Since" in found else None,
        modified_since_ms=_parse_time("If-Modified-Since", found["If-Modified-Since"])
        if "If-Modified-Since" in found else None,
        none_match_any=none_match == "*",
    )
