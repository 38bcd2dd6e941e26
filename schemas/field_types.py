"""A schema field's type as CDAP shows it: upper-case, nullable unions unwrapped.

`string` -> STRING, `["null", "long"]` -> LONG, `union<null,int>` -> INT, `nullable(double)` ->
DOUBLE, `map<string,string>` -> MAP; without a native type, the type record's kind
(`com.linkedin.schema.StringType` -> STRING)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NULLABLE = re.compile(r"^(?:nullable|union|option)\s*[<(]\s*(?:null\s*,\s*)?(.*?)(?:\s*,\s*null)?\s*[>)]$", re.I)


def field_type(field: dict[str, Any]) -> str | None:
    """The upper-case type of a DataHub SchemaField, or None if it has none."""
    native = field.get("nativeDataType")
    if isinstance(native, str) and native.strip():
        return native_type(native)
    kind = (field.get("type") or {}).get("type")
    if isinstance(kind, dict) and kind:
        name = next(iter(kind)).rsplit(".", 1)[-1]
        return name.removesuffix("Type").upper() or None
    return None


@lru_cache(maxsize=4096)
def native_type(native: str) -> str | None:
    text = native.strip()
    if text.startswith("["):
        try:
            members = [m for m in json.loads(text) if m != "null"]
        except ValueError:
            members = []
        if len(members) == 1:
            inner = members[0]
            return native_type(inner if isinstance(inner, str) else str(inner.get("type", "")))
    match = _NULLABLE.match(text)
    if match and "," not in match.group(1):
        text = match.group(1)
    word = _WORD.match(text)
    return word.group(0).upper() if word else None
