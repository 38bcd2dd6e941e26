"""DataHub's snapshot forms (`com.linkedin.metadata.snapshot.<X>Snapshot`): which entity each
snapshot is of and which aspects it may hold, read from the MetadataChangeEvent schema of the
pinned acryl-datahub package. Rest.li's `GET /entities/{urn}` answers in these forms."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from schemas.datahub_model import schema_directory
from schemas.registry import EntityRegistry

PEGASUS = ".pegasus2avro."


@dataclass(frozen=True)
class SnapshotForm:
    name: str  # e.g. com.linkedin.metadata.snapshot.CorpUserSnapshot
    aspects: tuple[str, ...]  # the aspect names it may hold, in the schema's order


def _full_name(record: dict[str, Any]) -> str:
    name = record["name"]
    return (name if "." in name else f"{record['namespace']}.{name}").replace(PEGASUS, ".")


@cache
def _snapshot_records() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(snapshot name, its aspects' record names) of each snapshot in MetadataChangeEvent.avsc."""
    schema = json.loads((schema_directory() / "MetadataChangeEvent.avsc").read_text())
    named: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") in ("record", "enum", "fixed"):
                named[_full_name(node)] = node
                for field in node.get("fields", []):
                    walk(field["type"])
            elif node.get("type") == "array":
                walk(node["items"])
            elif node.get("type") == "map":
                walk(node["values"])
    walk(schema)
    union = next(f["type"] for f in schema["fields"] if f["name"] == "proposedSnapshot")
    out = []
    for branch in union:
        record = named[branch.replace(PEGASUS, ".")] if isinstance(branch, str) else branch
        items = next(f["type"]["items"] for f in record["fields"] if f["name"] == "aspects")
        out.append((_full_name(record), tuple(a.replace(PEGASUS, ".") if isinstance(a, str) else _full_name(a)
                                              for a in items)))
    return tuple(out)


def snapshot_forms(registry: EntityRegistry) -> dict[str, SnapshotForm]:
    """entity name -> its snapshot form, for each snapshot whose key aspect the registry knows."""
    forms = {}
    for name, records in _snapshot_records():
        specs = [spec for record in records if (spec := registry.aspect_for_schema(record)) is not None]
        entity = next((spec.key_for for spec in specs if spec.key_for), None)
        if entity is not None:
            forms[entity] = SnapshotForm(name, tuple(spec.name for spec in specs))
    return forms
