"""Schema fields the timeline takes as renamed rather than removed and added (as DataHub's
does): a field gone from a schema and a field new in it with the same native type, the same
parent path (the field path up to its last `.`, or none for both) and the same non-blank
description. Each gone field, in field path order, pairs with the first new field that matches
and is not paired yet."""

from __future__ import annotations

from typing import Any


def _fields(value: Any) -> dict[str, dict[str, Any]]:
    fields = value.get("fields") if isinstance(value, dict) else None
    found: dict[str, dict[str, Any]] = {}
    for field in fields if isinstance(fields, list) else ():
        if isinstance(field, dict) and isinstance(field.get("fieldPath"), str):
            found.setdefault(field["fieldPath"], field)
    return found


def _parent(path: str) -> str | None:
    return path.rpartition(".")[0] if "." in path else None


def _same_field(old: dict[str, Any], new: dict[str, Any]) -> bool:
    description = old.get("description")
    return (old.get("nativeDataType") == new.get("nativeDataType")
            and _parent(old["fieldPath"]) == _parent(new["fieldPath"])
            and isinstance(description, str) and description.strip() != "" and description == new.get("description"))


def renamed_fields(before: Any, after: Any) -> dict[str, str]:
    """Old field path -> new field path of the fields of a schemaMetadata value renamed between
    two versions (either may be None)."""
    old, new = _fields(before), _fields(after)
    added = sorted(path for path in new if path not in old)
    renamed: dict[str, str] = {}
    for path in sorted(p for p in old if p not in new):
        match = next((p for p in added if p not in renamed.values() and _same_field(old[path], new[p])), None)
        if match is not None:
            renamed[path] = match
    return renamed
