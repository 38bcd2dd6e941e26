"""SYSTEM metadata the platform keeps by itself, derived from an entity's stored aspects.

    entity-name        the entity's own name (its last detail, or its properties' name)
    creation-time      when its key aspect was first written (ms since the epoch); a later
                       write cannot change it, and no writer can set it
    description        from datasetProperties, editableDatasetProperties, dataFlowInfo,
                       dataJobInfo or containerProperties
    schema             the schema's fields as JSON [{"name", "type"}] (types upper-case,
                       nullable unions unwrapped); search finds `name`, `name:TYPE`, `schema:name`
    type               the first of its subTypes, else the metadata entity's type
    ttl                the dataset's `ttl` custom property, where set
    last-updated-time  the newest change of any of its aspects (ms), and
    last-updated-by    who made it

They are computed when read, so keeping them costs no write; they win over a stored
`systemScopeMetadata` property of the same name, which the v3 API refuses to write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gms.store import StoredAspect
from schemas.field_types import field_type
from schemas.metadata_entity import URN_KEY, MetadataEntity

DERIVED_KEYS = frozenset({"entity-name", "creation-time", "description", "schema", "type", "ttl",
                          "last-updated-time", "last-updated-by"})
_DESCRIBED = ("editableDatasetProperties", "datasetProperties", "dataFlowInfo", "dataJobInfo",
              "containerProperties")
_NAMED = ("datasetProperties", "dataFlowInfo", "dataJobInfo", "containerProperties", "dataProcessInstanceProperties",
          "schemafieldInfo")


def derived_properties(entity: MetadataEntity, rows: Sequence[StoredAspect], key_aspect: str) -> dict[str, str]:
    """The derived SYSTEM properties of an entity from its live aspects (empty if it has none)."""
    if not rows:
        return {}
    by_name = {row.aspect: row for row in rows}
    values = {name: row.value for name, row in by_name.items()}
    props: dict[str, str] = {"entity-name": _name(entity, values)}
    key = by_name.get(key_aspect)
    created = (key.system_metadata.get("aspectCreated") or {}) if key else {}
    if created.get("time") is not None:
        props["creation-time"] = str(created["time"])
    description = next((values[a].get("description") for a in _DESCRIBED
                        if isinstance(values.get(a), dict) and values[a].get("description")), None)
    if description:
        props["description"] = description
    schema = values.get("schemaMetadata")
    if isinstance(schema, dict) and schema.get("fields"):
        props["schema"] = json.dumps([{"name": f.get("fieldPath"), "type": field_type(f)} for f in schema["fields"]],
                                     separators=(",", ":"))
    sub_types = (values.get("subTypes") or {}).get("typeNames") or []
    props["type"] = str(sub_types[0]).lower() if sub_types else entity.type
    custom = (values.get("datasetProperties") or {}).get("customProperties") or {}
    if custom.get("ttl"):
        props["ttl"] = str(custom["ttl"])
    stamps = [row.system_metadata.get("aspectModified") or {} for row in rows]
    newest = max(stamps, key=lambda s: s.get("time") or 0)
    if newest.get("time") is not None:
        props["last-updated-time"] = str(newest["time"])
        props["last-updated-by"] = str(newest.get("actor") or "")
    return props


def _name(entity: MetadataEntity, values: dict) -> str:
    if entity.keys() != (URN_KEY,):
        return entity.get(entity.type) or entity.details[-1][1]
    named = next((values[a]["name"] for a in _NAMED if isinstance(values.get(a), dict) and values[a].get("name")), None)
    return named or entity.details[0][1]
