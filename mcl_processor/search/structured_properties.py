"""The values of the structured properties assigned to an entity (`structuredProperties`) as
exact-filter entries, keyed as DataHub's search filters name them: `structuredProperties.` and
the property's qualified name (lower-cased, as every filter key), e.g.
`structuredproperties.io.shop.retention`. A number is entered as written (`30.0`) and, when
whole, as an integer (`30`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

ASPECT = "structuredProperties"
KEY_PREFIX = "structuredproperties."
PROPERTY_PREFIX = "urn:li:structuredProperty:"


def filter_key(qualified_name: str) -> str:
    """The filter key of a structured property's values."""
    return KEY_PREFIX + qualified_name.lower()


def entries(value: Any) -> Iterator[tuple[str, str]]:
    """(filter key, lower-cased value) of each value assigned in a structuredProperties value."""
    assignments = value.get("properties") if isinstance(value, dict) else None
    for assignment in assignments if isinstance(assignments, list) else ():
        urn = assignment.get("propertyUrn") if isinstance(assignment, dict) else None
        if not isinstance(urn, str) or not urn.startswith(PROPERTY_PREFIX):
            continue
        key = filter_key(urn.removeprefix(PROPERTY_PREFIX))
        values = assignment.get("values")
        for item in values if isinstance(values, list) else ():
            if isinstance(item, dict) and len(item) == 1:  # the string-or-double union, wrapped
                item = next(iter(item.values()))
            if isinstance(item, str):
                yield key, item.lower()
            elif isinstance(item, int | float) and not isinstance(item, bool):
                yield key, str(float(item))
                if float(item).is_integer():
                    yield key, str(int(item))
