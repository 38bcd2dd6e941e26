"""Structured properties checked as DataHub's GMS checks them, against what is stored: a value
assigned to an entity (`structuredProperties`) must fit its property's definition, and a
definition (`propertyDefinition`) may change only in ways that keep the values
assigned under it valid. A refusal is a 400 `invalid_value` naming the property and the value."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gms.errors import ProposalFailed

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


def _live_definition(lookup: Lookup, property_urn: str) -> Mapping[str, Any]:
    definition = lookup(property_urn, DEFINITION)
    status = lookup(property_urn, "status")
    if definition is None or (status is not None and status.get("removed")):
        raise _refuse(f"structured property {property_urn} is not defined (or is soft-deleted)")
    return definition


def check_assignments(value: Mapping[str, Any], lookup: Lookup) -> None:
    """Each assignment of a `structuredProperties` value against its property's definition:
    the property exists and is not soft-deleted, SINGLE cardinality holds one value, values are of
    the value type (a date as YYYY-MM-DD) and among the allowed values when some are listed."""
    for assignment in value.get("properties") or []:
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
