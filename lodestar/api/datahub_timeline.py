"""DataHub's timeline of an entity (`GET /openapi/v2/timeline/v1/{urn}`, `datahub timeline`):
the changes of its aspects' versions, by category, derived from the aspect store's history.

Each version of an aspect is compared with the version before it (the first with nothing, a
deletion with nothing after it); what differs becomes change events of the categories asked:

| category | read from |
|---|---|
| TAG | `globalTags`; the tags of schema fields (`schemaMetadata`, `editableSchemaMetadata`) |
| OWNERSHIP (OWNER) | `ownership` owners, with their type |
| GLOSSARY_TERM | `glossaryTerms`; the terms of schema fields |
| DOCUMENTATION | every `*Properties` aspect's `description`, schema fields' descriptions, `institutionalMemory` |
| TECHNICAL_SCHEMA | `schemaMetadata` fields: added, removed, type changed |
| DOMAIN | `domains` |
| STRUCTURED_PROPERTY | `structuredProperties` values |
| APPLICATION | `applications` |
| DEPRECATION | `deprecation` |

Events of the same millisecond form one transaction. Each transaction carries a semantic
version computed from the first change on (DataHub's "x.y.z-computed"): a removed or retyped
schema field is MAJOR, other additions and removals MINOR, documentation PATCH.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch

from gms.store import StoredAspect

ALIASES = {"OWNER": "OWNERSHIP"}
_RANK = {"NONE": 0, "PATCH": 1, "MINOR": 2, "MAJOR": 3}


@dataclass(frozen=True)
class Fact:
    """One thing an aspect value says, compared across versions by (entity, key)."""

    entity: str  # the entity (or schema field) it is about
    key: str  # what it is within the entity: a tag URN, a field path, "description"
    modifier: str | None  # what the event names (a tag, an owner, a field URN), None: nothing
    detail: Any = None  # compared for a MODIFY
    label: str = ""  # how descriptions name it


Extractor = Callable[[str, Any], Iterator[Fact]]


def field_urn(dataset: str, path: str) -> str:
    """A schema field's URN: `(`, `)` and `,` of the field path percent-encoded."""
    encoded = path.replace("%", "%25").replace("(", "%28").replace(")", "%29").replace(",", "%2C")
    return f"urn:li:schemaField:({dataset},{encoded})"


def _records(value: Any, *names: str) -> list[dict[str, Any]]:
    """The records of the array at a dotted path of fields (missing parts: none)."""
    found: list[Any] = [value]
    for name in names:
        found = [item.get(name) for item in found if isinstance(item, dict)]
        found = [x for item in found for x in (item if isinstance(item, list) else [item]) if x is not None]
    return [item for item in found if isinstance(item, dict)]


def _schema_fields(urn: str, value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field URN, field record) of a schemaMetadata or editableSchemaMetadata value."""
    for field in _records(value, "fields") + _records(value, "editableSchemaFieldInfo"):
        if isinstance(field.get("fieldPath"), str):
            yield field_urn(urn, field["fieldPath"]), field


def _associations(label: str, array: str, key: str) -> Extractor:
    """Facts of an array of associations (`tags[].tag`), on the entity and its schema fields."""
    container = {"tags": "globalTags", "terms": "glossaryTerms"}.get(array)

    def extract(urn: str, value: Any) -> Iterator[Fact]:
        for item in _records(value, array):
            if isinstance(item.get(key), str):
                yield Fact(urn, item[key], item[key], label=label)
        if container is None:
            return
        for entity, field in _schema_fields(urn, value):
            for item in _records(field.get(container), array):
                if isinstance(item.get(key), str):
                    yield Fact(entity, item[key], item[key], label=label)
    return extract


def _urn_list(label: str, array: str) -> Extractor:
    def extract(urn: str, value: Any) -> Iterator[Fact]:
        items = value.get(array) if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, str):
                yield Fact(urn, item, item, label=label)
    return extract


def _owners(urn: str, value: Any) -> Iterator[Fact]:
    for owner in _records(value, "owners"):
        if isinstance(owner.get("owner"), str):
            kind = owner.get("typeUrn") or owner.get("type") or "NONE"
            yield Fact(urn, f"{owner['owner']} {kind}", owner["owner"], kind, "Owner")


def _schema(urn: str, value: Any) -> Iterator[Fact]:
    for entity, field in _schema_fields(urn, value):
        kind = field.get("type", {}).get("type") if isinstance(field.get("type"), dict) else None
        shown = next(iter(kind), None) if isinstance(kind, dict) else None
        yield Fact(urn, field["fieldPath"], entity, (field.get("nativeDataType"), shown), "Field")


def _descriptions(urn: str, value: Any) -> Iterator[Fact]:
    if isinstance(value, dict) and isinstance(value.get("description"), str) and value["description"]:
        yield Fact(urn, "description", None, value["description"], "Documentation")
    for entity, field in _schema_fields(urn, value):
        if isinstance(field.get("description"), str) and field["description"]:
            yield Fact(entity, "description", entity, field["description"], "Documentation")
    for link in _records(value, "elements"):
        if isinstance(link.get("url"), str):
            yield Fact(urn, link["url"], link["url"], link.get("description"), "Link")


def _properties(urn: str, value: Any) -> Iterator[Fact]:
    for prop in _records(value, "properties"):
        if isinstance(prop.get("propertyUrn"), str):
            yield Fact(urn, prop["propertyUrn"], prop["propertyUrn"], prop.get("values"), "Structured property")


def _deprecation(urn: str, value: Any) -> Iterator[Fact]:
    if isinstance(value, dict) and value.get("deprecated") is True:
        yield Fact(urn, "deprecated", None, value.get("note"), "Deprecation")


_TAGS, _TERMS = _associations("Tag", "tags", "tag"), _associations("Glossary term", "terms", "urn")
# category -> (aspect, extractor); "*Properties" stands for every such aspect of the entity
CATEGORIES: dict[str, tuple[tuple[str, Extractor], ...]] = {
    "TAG": (("globalTags", _TAGS), ("schemaMetadata", _TAGS), ("editableSchemaMetadata", _TAGS)),
    "OWNERSHIP": (("ownership", _owners),),
    "GLOSSARY_TERM": (("glossaryTerms", _TERMS), ("schemaMetadata", _TERMS), ("editableSchemaMetadata", _TERMS)),
    "DOCUMENTATION": (("*Properties", _descriptions), ("schemaMetadata", _descriptions),
                      ("editableSchemaMetadata", _descriptions), ("institutionalMemory", _descriptions)),
    "TECHNICAL_SCHEMA": (("schemaMetadata", _schema),),
    "DOMAIN": (("domains", _urn_list("Domain", "domains")),),
    "STRUCTURED_PROPERTY": (("structuredProperties", _properties),),
    "APPLICATION": (("applications", _urn_list("Application", "applications")),),
    "DEPRECATION": (("deprecation", _deprecation),),
}


def category_names(requested: Sequence[str]) -> tuple[list[str], list[str]]:
    """(known categories, unknown ones) of the names asked (any case, aliases resolved)."""
    known, unknown = [], []
    for name in requested:
        resolved = ALIASES.get(name.upper(), name.upper())
        (known if resolved in CATEGORIES else unknown).append(resolved if resolved in CATEGORIES else name)
    return list(dict.fromkeys(known)), unknown


def aspects_read(categories: Sequence[str], entity_aspects: Sequence[str]) -> list[str]:
    """The aspects of an entity whose history the categories need."""
    wanted: list[str] = []
    for category in categories:
        for aspect, _ in CATEGORIES[category]:
            names = [a for a in entity_aspects if a.endswith("Properties")] if aspect == "*Properties" else \
                [aspect] if aspect in entity_aspects else []
            wanted += [name for name in names if name not in wanted]
    return wanted


def _semver_change(category: str, operation: str) -> str:
    if category == "TECHNICAL_SCHEMA":
        return "MINOR" if operation == "ADD" else "MAJOR"
    return "PATCH" if category == "DOCUMENTATION" else "MINOR"


def _description(category: str, operation: str, old: Fact | None, new: Fact | None) -> str:
    fact = new or old
    assert fact is not None
    about = fact.modifier or fact.label.lower()
    if category == "TECHNICAL_SCHEMA":
        verb = {"ADD": "added to", "REMOVE": "removed from", "MODIFY": "changed in"}[operation]
        detail = f" (type {old.detail[0]} -> {new.detail[0]})" if old and new else ""
        return f"Field '{fact.key}' {verb} '{fact.entity}'{detail}."
    if operation == "MODIFY":
        assert old is not None and new is not None
        return f"{fact.label} '{about}' of '{fact.entity}' changed from {old.detail!r} to {new.detail!r}."
    if category == "DOCUMENTATION" and fact.modifier is None:
        return f"{fact.label} of '{fact.entity}' {'added' if operation == 'ADD' else 'removed'}: {fact.detail!r}."
    if category == "OWNERSHIP":
        return f"'{fact.modifier}' {'added as' if operation == 'ADD' else 'removed as'} owner ({fact.detail})" \
               f" of '{fact.entity}'."
    return f"{fact.label} '{about}' {'added to' if operation == 'ADD' else 'removed from'} '{fact.entity}'."


def _facts(extractor: Extractor, urn: str, value: Any) -> dict[tuple[str, str], Fact]:
    return {} if value is None else {(f.entity, f.key): f for f in extractor(urn, value)}


def _events(urn: str, category: str, aspect: str, extractor: Extractor, before: StoredAspect | None,
            after: StoredAspect) -> list[dict[str, Any]]:
    old = _facts(extractor, urn, before.value if before else None)
    new = _facts(extractor, urn, after.value)
    stamp = after.system_metadata.get("aspectModified") or after.system_metadata.get("aspectCreated") or \
        {"time": after.modified_ms, "actor": "urn:li:corpuser:unknown"}
    events = []
    for key in [*old, *(k for k in new if k not in old)]:
        was, now = old.get(key), new.get(key)
        operation = "ADD" if was is None else "REMOVE" if now is None else \
            "MODIFY" if was.detail != now.detail else None
        if operation is None:
            continue
        fact = now or was
        assert fact is not None
        events.append({
            "changeType": operation, "operation": operation, "category": category, "entityUrn": fact.entity,
            "modifier": fact.modifier, "semVerChange": _semver_change(category, operation),
            "description": _description(category, operation, was, now), "auditStamp": stamp,
            "parameters": {"aspect": aspect, **({"value": now.detail} if now and now.detail is not None else {})},
        })
    return events


@dataclass
class _Transaction:
    timestamp: int
    actor: str
    events: list[dict[str, Any]]
    stamps: list[str]
    diffs: list[dict[str, Any]]


def timeline(urn: str, histories: Mapping[str, Sequence[StoredAspect]], categories: Sequence[str],
             start: int | None = None, end: int | None = None, raw: bool = False) -> list[dict[str, Any]]:
    """DataHub's ChangeTransactions of an entity, oldest first, within [start, end] when given."""
    by_time: dict[int, _Transaction] = {}
    for aspect, history in histories.items():
        for category in categories:
            extractors = [e for name, e in CATEGORIES[category]
                          if name == aspect or (name == "*Properties" and aspect.endswith("Properties"))]
            for extractor in extractors:
                for before, after in zip([None, *history], history, strict=False):
                    events = _events(urn, category, aspect, extractor, before, after)
                    if not events:
                        continue
                    time = after.modified_ms
                    actor = (after.system_metadata.get("aspectModified") or {}).get("actor", "urn:li:corpuser:unknown")
                    found = by_time.setdefault(time, _Transaction(time, actor, [], [], []))
                    found.events += events
                    stamp = f"{aspect}:{after.version}"
                    if stamp not in found.stamps:
                        found.stamps.append(stamp)
                        if raw:
                            old = before.value if before and before.value is not None else {}
                            diff = jsonpatch.make_patch(old, after.value if after.value is not None else {}).patch
                            found.diffs.append({"aspect": aspect, "version": after.version, "patch": diff})
    major = minor = patch = 0
    out = []
    for time in sorted(by_time):
        found = by_time[time]
        change = max((e["semVerChange"] for e in found.events), key=_RANK.__getitem__, default="NONE")
        if change == "MAJOR":
            major, minor, patch = major + 1, 0, 0
        elif change == "MINOR":
            minor, patch = minor + 1, 0
        elif change == "PATCH":
            patch += 1
        if (start is not None and time < start) or (end is not None and time > end):
            continue
        transaction: dict[str, Any] = {
            "timestamp": time, "actor": found.actor, "semVer": f"{major}.{minor}.{patch}-computed",
            "semVerChange": change, "versionStamp": ";".join(found.stamps), "changeEvents": found.events}
        if raw:
            transaction["rawDiff"] = found.diffs
        out.append(transaction)
    return out
