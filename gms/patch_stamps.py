"""Audit stamps a patch leaves out: a record a patch creates inside an aspect (the glossary
terms of a schema field, say) gets each required audit stamp it lacks as `{time, actor}` of the
write, as DataHub's patch templates make them. Only required AuditStamp fields without a
default are filled; every other field stays as the patch left it, for validation to judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _is_stamp(kind: Any) -> bool:
    name = kind if isinstance(kind, str) else kind.get("name") if isinstance(kind, dict) else None
    return isinstance(name, str) and name.replace(".pegasus2avro.", ".").rpartition(".")[2] == "AuditStamp"


def _resolve(kind: Any, named: Mapping[str, Any], namespace: str | None) -> Any:
    if isinstance(kind, str) and kind in named:
        return named[kind]
    if isinstance(kind, str) and namespace and f"{namespace}.{kind}" in named:
        return named[f"{namespace}.{kind}"]
    return kind


def fill_stamps(value: Any, schema: Any, named: Mapping[str, Any], stamp: dict[str, Any],
                namespace: str | None = None) -> None:
    """Fills, in place, the required audit stamps missing from the records of `value`."""
    schema = _resolve(schema, named, namespace)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1 and value is not None:
            fill_stamps(value, branches[0], named, stamp, namespace)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "error") and isinstance(value, dict):
        space = schema.get("namespace", namespace)
        for field in schema["fields"]:
            name = field["name"]
            if name not in value:
                if "default" not in field and _is_stamp(field["type"]):
                    value[name] = dict(stamp)
                continue
            fill_stamps(value[name], field["type"], named, stamp, space)
    elif kind == "array" and isinstance(value, list):
        for item in value:
            fill_stamps(item, schema["items"], named, stamp, namespace)
    elif kind == "map" and isinstance(value, dict):
        for item in value.values():
            fill_stamps(item, schema["values"], named, stamp, namespace)
