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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch

from gms.store import StoredAspect
from mcl_processor.aspect_facts import CATEGORIES, Extractor, Fact

ALIASES = {"OWNER": "OWNERSHIP"}
_RANK = {"NONE": 0, "PATCH": 1, "MINOR": 2, "MAJOR": 3}


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
