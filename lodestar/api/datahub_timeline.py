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

Events of the same millisecond form one transaction (the aspects one request wrote carry
the same time). A thing said twice in one version (a link listed twice) is two facts. A schema
field gone and another new with the same native type, parent and description is one renamed
field (`lodestar/api/datahub_timeline_renames.py`), not a removal and an addition.

Each transaction carries a semantic version, DataHub's "x.y.z-computed": the first is 0.0.0,
each next one bumps the part of its greatest change. A removed or retyped schema field is
MAJOR; a changed description of a link or of a schema field PATCH; any other change MINOR.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch

from gms.store import StoredAspect
from lodestar.api.datahub_timeline_renames import renamed_fields
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


def _semver_change(category: str, operation: str, fact: Fact) -> str:
    if category == "TECHNICAL_SCHEMA":
        return "MINOR" if operation == "ADD" else "MAJOR"
    return "PATCH" if category == "DOCUMENTATION" and operation == "MODIFY" and fact.modifier is not None else "MINOR"


def _description(category: str, operation: str, old: Fact | None, new: Fact | None) -> str:
    fact = new or old
    assert fact is not None
    about = fact.modifier or fact.label.lower()
    if category == "TECHNICAL_SCHEMA":
        if old and new and old.key != new.key:
            return f"Field '{old.key}' of '{fact.entity}' renamed to '{new.key}'."
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


def _facts(extractor: Extractor, urn: str, value: Any) -> dict[tuple[str, str, int], Fact]:
    """The facts of a value by (entity, key, how many times that key came before)."""
    facts: dict[tuple[str, str, int], Fact] = {}
    seen: Counter[tuple[str, str]] = Counter()
    for fact in () if value is None else extractor(urn, value):
        facts[(fact.entity, fact.key, seen[(fact.entity, fact.key)])] = fact
        seen[(fact.entity, fact.key)] += 1
    return facts


def _changes(old: dict[tuple[str, str, int], Fact], new: dict[tuple[str, str, int], Fact],
             renamed: dict[str, str]) -> Iterator[tuple[str, Fact | None, Fact | None]]:
    """(operation, old fact, new fact) of each fact that differs; a renamed field's is a MODIFY."""
    by_path = {fact.key: fact for fact in new.values()} if renamed else {}
    gone = set(renamed.values())
    for key in [*old, *(k for k in new if k not in old)]:
        was, now = old.get(key), new.get(key)
        if was is None and now is not None and now.key in gone:
            continue
        if now is None and was is not None and was.key in renamed:
            yield "MODIFY", was, by_path[renamed[was.key]]
        elif was is None or now is None or was.detail != now.detail:
            yield ("ADD" if was is None else "REMOVE" if now is None else "MODIFY"), was, now


def _events(urn: str, category: str, aspect: str, extractor: Extractor, before: StoredAspect | None,
            after: StoredAspect) -> list[dict[str, Any]]:
    old = _facts(extractor, urn, before.value if before else None)
    new = _facts(extractor, urn, after.value)
    renamed = renamed_fields(before.value if before else None, after.value) \
        if category == "TECHNICAL_SCHEMA" else {}
    stamp = after.system_metadata.get("aspectModified") or after.system_metadata.get("aspectCreated") or \
        {"time": after.modified_ms, "actor": "urn:li:corpuser:unknown"}
    events = []
    for operation, was, now in _changes(old, new, renamed):
        is_rename = was is not None and was.key in renamed
        fact = was if is_rename else now or was
        assert fact is not None
        change = "MINOR" if is_rename else _semver_change(category, operation, fact)
        events.append({
            "changeType": operation, "operation": operation, "category": category, "entityUrn": fact.entity,
            "modifier": fact.modifier, "semVerChange": change,
            "description": _description(category, operation, was, now), "auditStamp": stamp,
            "parameters": {"aspect": aspect, **({"value": now.detail} if now and now.detail is not None else {})},
        })
    return events


def _bumped(version: tuple[int, int, int], change: str) -> tuple[int, int, int]:
    """The version after a transaction whose greatest change is `change`."""
    major, minor, patch = version
    return (major + 1, 0, 0) if change == "MAJOR" else (major, minor + 1, 0) if change == "MINOR" else \
        (major, minor, patch + 1) if change == "PATCH" else version


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
    version: tuple[int, int, int] | None = None
    out = []
    for time in sorted(by_time):
        found = by_time[time]
        change = max((e["semVerChange"] for e in found.events), key=_RANK.__getitem__, default="NONE")
        version = (0, 0, 0) if version is None else _bumped(version, change)
        if (start is not None and time < start) or (end is not None and time > end):
            continue
        transaction: dict[str, Any] = {
            "timestamp": time, "actor": found.actor, "semVer": "{}.{}.{}-computed".format(*version),
            "semVerChange": change, "versionStamp": ";".join(found.stamps), "changeEvents": found.events}
        if raw:
            transaction["rawDiff"] = found.diffs
        out.append(transaction)
    return out
