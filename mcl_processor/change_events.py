"""DataHub's EntityChangeEvents of one MCL, derived from its previous and new value (the way
`lodestar/metadata/changes.py` derives CDAP's change records from the same two values).

`entity_change_events(change, key_aspects)` takes a decoded MCL (`ingest.subscribe.Change`)
and gives the events DataHub's entity change event spec lists, as JSON-ready dicts of
DataHub's `EntityChangeEvent` (`entityType`, `entityUrn`, `category`, `operation`,
`modifier`, `parameters`, `auditStamp`, `version`), in a fixed order:

| aspect | category | operations, modifier, parameters |
|---|---|---|
| `globalTags`, schema fields' tags | TAG | ADD, REMOVE; the tag; `tagUrn` (+ `fieldPath`, `parentUrn`) |
| `glossaryTerms`, schema fields' terms | GLOSSARY_TERM | ADD, REMOVE; the term; `termUrn` (+ field) |
| `ownership` | OWNER | ADD, REMOVE; the owner; `ownerUrn`, `ownerType` |
| `domains` | DOMAIN | ADD, REMOVE; the domain; `domainUrn` |
| `structuredProperties` | STRUCTURED_PROPERTY | ADD, REMOVE, MODIFY; the property; `propertyUrn`, `propertyValues` |
| `*Properties`, schema fields, `institutionalMemory` | DOCUMENTATION | ADD, REMOVE, MODIFY; `description` |
| `schemaMetadata` fields | TECHNICAL_SCHEMA | ADD, REMOVE; the field's URN; `fieldUrn`, `fieldPath`, `nullable` |
| `deprecation` | DEPRECATION | MODIFY when the flag changes; DEPRECATED or ACTIVE; `status` |
| the key aspect | LIFECYCLE | CREATE (first written), HARD_DELETE (deleted) |
| `status` | LIFECYCLE | SOFT_DELETE (`removed` becomes true), REINSTATE (it becomes false) |

An event about a schema field names the field's URN as its `entityUrn` (as DataHub's do);
`auditStamp` is the MCL's `created` (who made the change, when). Nothing changed, nothing
derived: an MCL whose value equals its previous value gives no event; nor do Lodestar's
bookkeeping entities (`BOOKKEEPING`: tokens, grants, webhooks, the schema registry's own).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any, Protocol

from mcl_processor.aspect_facts import CATEGORIES, Extractor, Fact

UNKNOWN_ACTOR = "urn:li:corpuser:unknown"
# category of the spec -> the fact category (mcl_processor.aspect_facts) it is read from
_FACT_CATEGORIES = {"TAG": "TAG", "GLOSSARY_TERM": "GLOSSARY_TERM", "OWNER": "OWNERSHIP", "DOMAIN": "DOMAIN",
                    "STRUCTURED_PROPERTY": "STRUCTURED_PROPERTY", "DOCUMENTATION": "DOCUMENTATION",
                    "TECHNICAL_SCHEMA": "TECHNICAL_SCHEMA", "DEPRECATION": "DEPRECATION"}
_URN_PARAMETER = {"TAG": "tagUrn", "GLOSSARY_TERM": "termUrn", "OWNER": "ownerUrn", "DOMAIN": "domainUrn",
                  "STRUCTURED_PROPERTY": "propertyUrn"}
CATEGORY_NAMES = (*_FACT_CATEGORIES, "LIFECYCLE")
BOOKKEEPING = frozenset({"accessToken", "accessGrants", "accessCredentials", "webhook", "schemaRegistrySchema", "schemaRegistrySubject"})


class MclChange(Protocol):
    """What an event is derived from (`ingest.subscribe.Change` has it)."""

    urn: str
    aspect: str | None
    change_type: str
    value: Any
    previous_value: Any
    created: dict[str, Any] | None


def entity_change_events(change: MclChange, key_aspects: frozenset[str]) -> list[dict[str, Any]]:
    """The EntityChangeEvents of a versioned MCL (none for an aspect no category reads)."""
    if not change.aspect or change.urn.split(":", 3)[2] in BOOKKEEPING:
        return []
    created = change.created or {}
    stamp = {"time": int(created.get("time") or 0), "actor": created.get("actor") or UNKNOWN_ACTOR}
    before = change.previous_value
    after = None if change.change_type == "DELETE" else change.value
    found = [*_lifecycle(change.urn, change.aspect, before, after, key_aspects)]
    for category, extractor in _extractors(change.aspect):
        found += _diff(category, change.urn, extractor, before, after)
    return [_event(entity, category, operation, modifier, parameters, stamp)
            for entity, category, operation, modifier, parameters in found]


Found = tuple[str, str, str, str | None, dict[str, Any]]  # entity, category, operation, modifier, parameters


@cache
def _extractors(aspect: str) -> tuple[tuple[str, Extractor], ...]:
    """(category, extractor) of each category that reads an aspect, in the categories' order."""
    return tuple((category, extractor) for category, facts_category in _FACT_CATEGORIES.items()
                 for name, extractor in CATEGORIES[facts_category]
                 if name == aspect or (name == "*Properties" and aspect.endswith("Properties")))


def _lifecycle(urn: str, aspect: str, before: Any, after: Any, key_aspects: frozenset[str]) -> Iterator[Found]:
    if aspect in key_aspects:
        if before is None and after is not None:
            yield urn, "LIFECYCLE", "CREATE", None, {}
        elif before is not None and after is None:
            yield urn, "LIFECYCLE", "HARD_DELETE", None, {}
    elif aspect == "status":
        was, now = _removed(before), _removed(after)
        if now and not was:
            yield urn, "LIFECYCLE", "SOFT_DELETE", None, {}
        elif was and after is not None and not now:  # (a status deleted with its entity reinstates nothing)
            yield urn, "LIFECYCLE", "REINSTATE", None, {}


def _removed(status: Any) -> bool:
    return isinstance(status, dict) and status.get("removed") is True


def _facts(extractor: Extractor, urn: str, value: Any) -> dict[tuple[str, str], Fact]:
    return {} if value is None else {(fact.entity, fact.key): fact for fact in extractor(urn, value)}


def _diff(category: str, urn: str, extractor: Extractor, before: Any, after: Any) -> Iterator[Found]:
    old, new = _facts(extractor, urn, before), _facts(extractor, urn, after)
    fields: dict[int, dict[str, Any]] = {}  # id of before / after -> its first field record of each path
    for key in [*old, *(k for k in new if k not in old)]:
        was, now = old.get(key), new.get(key)
        if was is None and now is not None:
            operation, fact, value = "ADD", now, after
        elif now is None and was is not None:
            operation, fact, value = "REMOVE", was, before
        elif was is not None and now is not None and was.detail != now.detail:
            operation, fact, value = "MODIFY", now, after
        else:
            continue
        found = _shaped(category, operation, urn, fact, value, fields)
        if found is not None:
            yield found


def _fields_by_path(value: Any) -> dict[str, Any]:
    """A schema's field records by path (the first of a path)."""
    found: dict[str, Any] = {}
    for field in (value or {}).get("fields") or ():
        if isinstance(field, dict):
            found.setdefault(field.get("fieldPath"), field)
    return found


def _shaped(category: str, operation: str, urn: str, fact: Fact, value: Any,
            fields: dict[int, dict[str, Any]]) -> Found | None:
    """The event of a fact that changed, shaped as the spec has it (None: the spec has none)."""
    if category == "DEPRECATION":  # a fact only while deprecated: its coming and going flip the flag
        if operation == "MODIFY":
            return None
        status = "DEPRECATED" if operation == "ADD" else "ACTIVE"
        return fact.entity, category, "MODIFY", status, {"status": status}
    if category == "TECHNICAL_SCHEMA":
        if operation == "MODIFY":
            return None
        if id(value) not in fields:
            fields[id(value)] = _fields_by_path(value)
        record = fields[id(value)].get(fact.key, {})
        return fact.entity, category, operation, fact.modifier, {
            "fieldUrn": fact.modifier, "fieldPath": fact.key, "nullable": bool(record.get("nullable", False))}
    parameters: dict[str, Any] = {}
    if category in _URN_PARAMETER:
        parameters[_URN_PARAMETER[category]] = fact.modifier
    if category == "OWNER":
        parameters["ownerType"] = fact.detail
    elif category == "STRUCTURED_PROPERTY":
        parameters["propertyValues"] = json.dumps(_values(fact.detail))
    elif category == "DOCUMENTATION" and isinstance(fact.detail, str):
        parameters["description"] = fact.detail
    if fact.field_path is not None:
        parameters.update(fieldPath=fact.field_path, parentUrn=urn)
    return fact.entity, category, operation, fact.modifier, parameters


def _values(values: Any) -> list[Any]:
    """A structured property's values as their plain strings and numbers."""
    out = []
    for item in values if isinstance(values, list) else ():
        out.append(next(iter(item.values())) if isinstance(item, dict) and len(item) == 1 else item)
    return out


def _event(entity: str, category: str, operation: str, modifier: str | None, parameters: dict[str, Any],
           stamp: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"entityType": entity.split(":", 3)[2], "entityUrn": entity, "category": category,
                             "operation": operation, "auditStamp": stamp, "version": 0}
    if modifier is not None:
        event["modifier"] = modifier
    if parameters:
        event["parameters"] = parameters
    return event
