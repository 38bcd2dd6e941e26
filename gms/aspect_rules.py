"""Rules on aspect values beyond their schema, checked by GMS before anything is stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schemas import field_operations

Rule = Callable[[Any], None]  # raises ValueError naming the problem


def _field_operations(value: Any) -> None:
    operations = field_operations.validate(field_operations.operations_from_json(value))
    field_operations.per_destination(operations, field_operations.destinations_from_json(value))


RULES: Mapping[str, Rule] = {"fieldOperations": _field_operations}
