"""Fields GMS fills in on write, as DataHub's GMS does with its mutation hooks: the value
stored (and sent in the MCL) is the proposed value with these fields derived from the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Mutation = Callable[[dict[str, Any]], dict[str, Any]]
SYSTEM_OWNERSHIP_TYPE = "urn:li:ownershipType:__system__"


def _owner_types(value: dict[str, Any]) -> dict[str, Any]:
    """`ownership.ownerTypes`: each ownership type's owners, in order; an owner's type is its
    `typeUrn`, else the system type of its `type` (TECHNICAL_OWNER: __system__technical_owner)."""
    types: dict[str, list[str]] = {}
    for owner in value.get("owners") or []:
        kind = owner.get("typeUrn") or f"{SYSTEM_OWNERSHIP_TYPE}{str(owner.get('type') or 'none').lower()}"
        owners = types.setdefault(kind, [])
        if owner["owner"] not in owners:
            owners.append(owner["owner"])
    return {**value, "ownerTypes": types}


MUTATIONS: Mapping[str, Mutation] = {"ownership": _owner_types}
