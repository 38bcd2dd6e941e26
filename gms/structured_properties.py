"""Structured properties checked as DataHub's GMS checks them, against what is stored: a value
assigned to an entity (`structuredProperties`) must fit its property's definition, and a
definition (`propertyDefinition`) may change only in ways that keep the values
assigned under it valid. A refusal is a 400 `invalid_value` naming the property and the value."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gms.errors import ProposalFailed
from gms.store import AspectStore

DEFINITION = "propertyDefinition"
_KINDS = {"string": "string", "rich_text": "string", "urn": "string", "date": "date", "number": "double"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

Lookup = Callable[[str, str], Mapping[str, Any] | None]  # (urn, aspect) -> live value, or None


def _refuse(message: str) -> ProposalFailed:
    return ProposalFailed("invalid_value", message)


def _member(value: Any) -> tuple[str, Any]:
    """A value of the string-or-double union: ("string" | "double", its value)."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, inner),) = value.items()
        return name.rpartition(".")[2], inner
    return ("string" if isinstance(value, str) else "double"), value


def _kind(definition: Mapping[str, Any]) -> str | None:
    return _KINDS.get(str(definition.get("valueType", "")).removeprefix("urn:li:dataType:datahub."))


def stored(store: AspectStore) -> Lookup:
    """A lookup of the newest live values in the aspect store."""
    def live(urn: str, aspect: str) -> Mapping[str, Any] | None:
        found = store.get(urn, aspect)
        return found.value if found is not None and found.exists else None
    return live


def property_state(lookup: Lookup, property_urn: str) -> str:
    """"live", "removed" (soft-deleted) or "absent" (no definition) of a structured property."""
    if lookup(property_urn, DEFINITION) is None:
        return "absent"
    status = lookup(property_urn, "status")
    return "removed" if status is not None and status.get("removed") else "live"


def live_assignments(value: Any, lookup: Lookup) -> Any:
    """A structuredProperties value as reads show it (as DataHub's do): without the values of
    properties that are not defined (any more) or are soft-deleted."""
    assignments = value.get("properties") if isinstance(value, dict) else None
    if not isinstance(assignments, list):
        return value
    kept = [a for a in assignments if not isinstance(a, dict) or not isinstance(a.get("propertyUrn"), str)
            or property_state(lookup, a["propertyUrn"]) == "live"]
    return value if len(kept) == len(assignments) else {**value, "properties": kept}


def _live_definition(lookup: Lookup, property_urn: str) -> Mapping[str, Any]:
    definition = lookup(property_urn, DEFINITION)
    if definition is None or property_state(lookup, property_urn) != "live":
        raise _refuse(f"structured property {property_urn} is not defined (or is soft-deleted)")
    return definition


def checked_assignments(value: Mapping[str, Any], lookup: Lookup, previous: Any = None) -> Mapping[str, Any]:
    """A `structuredProperties` value to store, each new or changed assignment checked against
    its property's definition: the property exists and is not soft-deleted, SINGLE cardinality
    holds one value, values are of the value type (a date as YYYY-MM-DD) and among the allowed
    values when some are listed. An assignment carried over unchanged from the `previous` value
    is not judged again, but is dropped when its property is no longer defined (its deletion
    took its values, as DataHub's does)."""
    kept_before = previous.get("properties") if isinstance(previous, dict) else None
    carried = kept_before if isinstance(kept_before, list) else []
    assignments = value.get("properties") or []
    stored = [a for a in assignments if a not in carried or property_state(lookup, a["propertyUrn"]) != "absent"]
    for assignment in stored:
        if assignment not in carried:
            _check(assignment, lookup)
    return value if len(stored) == len(assignments) else {**value, "properties": stored}


def _check(assignment: Mapping[str, Any], lookup: Lookup) -> None:
    urn = assignment["propertyUrn"]
    definition = _live_definition(lookup, urn)
    values = assignment.get("values") or []
    if (definition.get("cardinality") or "SINGLE") == "SINGLE" and len(values) > 1:
        raise _refuse(f"structured property {urn} takes one value (cardinality SINGLE), not {len(values)}")
    kind = _kind(definition)
    allowed = [_member(a["value"])[1] for a in definition.get("allowedValues") or []]
    for given in values:
        member, inner = _member(given)
        wanted = "string" if kind == "date" else kind
        if wanted is not None and member != wanted:
            raise _refuse(f"structured property {urn}: value {inner!r} is a {member}, the property's values are"
                          f" {definition.get('valueType')}")
        if kind == "date" and not _DATE.fullmatch(str(inner)):
            raise _refuse(f"structured property {urn}: value {inner!r} is no date (YYYY-MM-DD)")
        if allowed and inner not in allowed:
            raise _refuse(f"structured property {urn}: value {inner!r} is not among the allowed values {allowed}")


def check_definition_change(urn: str, new: Mapping[str, Any], lookup: Lookup) -> None:
    """A new version of a definition against the stored one: a soft-deleted definition does not
    change; the value type stays; cardinality does not go from MULTIPLE to SINGLE; allowed values
    are only added (or all dropped: any value then)."""
    old = lookup(urn, DEFINITION)
    if old is None:
        return
    status = lookup(urn, "status")
    if status is not None and status.get("removed"):
        raise _refuse(f"structured property {urn} is soft-deleted: its definition does not change")
    if old.get("valueType") != new.get("valueType"):
        raise _refuse(f"structured property {urn}: the value type stays {old.get('valueType')}")
    if (old.get("cardinality") or "SINGLE") == "MULTIPLE" and (new.get("cardinality") or "SINGLE") == "SINGLE":
        raise _refuse(f"structured property {urn}: cardinality does not go from MULTIPLE to SINGLE")
    before = {_member(a["value"]) for a in old.get("allowedValues") or []}
    after = {_member(a["value"]) for a in new.get("allowedValues") or []}
    if before and after and not before <= after:
        gone = sorted(str(v) for _, v in before - after)
        raise _refuse(f"structured property {urn}: allowed values are only added, not removed ({', '.join(gone)})")
