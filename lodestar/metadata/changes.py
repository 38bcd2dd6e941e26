"""CDAP-style change records of tags and properties, so a subscriber can react to "tag PII
added to field ssn of dataset customers" without diffing aspects itself.

Every change of `userScopeMetadata` or `systemScopeMetadata` is an MCL carrying the previous
and the new value; `record_of_change` turns such a change of a subscription (`ingest.subscribe`),
and `record_of_mcl` such an MCL as `schemas.events` decodes it, into

    {"metadataEntity": {"details": {...}, "type": ...}, "urn": ..., "scope": "USER" | "SYSTEM",
     "previous": {"properties": {...}, "tags": [...]}, "updated": {...},
     "changes": {"additions": {"properties", "tags"}, "deletions": {"properties", "tags"}},
     "updateTime": <ms>, "updater": <actor URN>}

A property whose value changed is in both: its old value under deletions, its new one under
additions (as CDAP does). `GET /v3/urns/{urn}/metadata/changes` answers the same records from
the aspect store's history.
"""

from __future__ import annotations

import json
from typing import Any

from gms.store import StoredAspect
from ingest.subscribe import Change
from schemas.metadata_entity import EntityError, Hint, from_urn

SCOPE_OF_ASPECT = {"userScopeMetadata": "USER", "systemScopeMetadata": "SYSTEM"}


def _state(value: Any) -> dict[str, Any]:
    value = value or {}
    return {"properties": dict(value.get("properties") or {}), "tags": list(value.get("tags") or [])}


def change_record(urn: str, scope: str, previous: Any, updated: Any, time_ms: int, actor: str | None,
                  hint: Hint | None = None) -> dict[str, Any]:
    """The change record between two values of a scope's aspect (None: absent or deleted)."""
    before, after = _state(previous), _state(updated)
    old_props, new_props = before["properties"], after["properties"]
    try:
        entity: dict[str, Any] | None = from_urn(urn, hint).to_json()
    except EntityError:
        entity = None
    return {
        "metadataEntity": entity, "urn": urn, "scope": scope, "previous": before, "updated": after,
        "changes": {
            "additions": {"properties": {k: v for k, v in new_props.items() if old_props.get(k) != v},
                          "tags": [t for t in after["tags"] if t not in before["tags"]]},
            "deletions": {"properties": {k: v for k, v in old_props.items() if new_props.get(k) != v},
                          "tags": [t for t in before["tags"] if t not in after["tags"]]},
        },
        "updateTime": time_ms, "updater": actor,
    }


def record_of_mcl(mcl: dict[str, Any], hint: Hint | None = None) -> dict[str, Any] | None:
    """The change record of a decoded MCL, or None when it is not about tags and properties."""
    scope = SCOPE_OF_ASPECT.get(mcl.get("aspectName") or "")
    if scope is None:
        return None
    created = mcl.get("created") or {}
    return change_record(mcl["entityUrn"], scope, _value(mcl.get("previousAspectValue")), _value(mcl.get("aspect")),
                         created.get("time") or 0, created.get("actor"), hint)


def record_of_change(change: Change, hint: Hint | None = None) -> dict[str, Any] | None:
    """The change record of a subscription's change (ingest.subscribe), or None when it is not
    about tags and properties:

        for change in subscribe(log, "my-app", aspects=["userScopeMetadata", "systemScopeMetadata"]):
            record = record_of_change(change)
    """
    scope = SCOPE_OF_ASPECT.get(change.aspect or "")
    if scope is None:
        return None
    created = change.created or {}
    return change_record(change.urn, scope, change.previous_value, change.value, created.get("time") or 0,
                         created.get("actor"), hint)


def records_of_history(urn: str, aspect: str, versions: list[StoredAspect], hint: Hint | None = None
                       ) -> list[dict[str, Any]]:
    """The change records of an aspect's stored versions, oldest first."""
    records, previous = [], None
    for row in versions:
        stamp = row.system_metadata.get("aspectModified") or {}
        records.append(change_record(urn, SCOPE_OF_ASPECT[aspect], previous, row.value, stamp.get("time") or 0,
                                     stamp.get("actor"), hint))
        previous = row.value
    return records


def _value(generic: dict[str, Any] | None) -> Any:
    if not generic or generic.get("value") is None:
        return None
    raw = generic["value"]
    return json.loads(raw.decode() if isinstance(raw, bytes) else raw)
