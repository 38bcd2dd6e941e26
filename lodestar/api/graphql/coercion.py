"""Variables coerced as DataHub's GraphQL server (graphql-java) coerces them: an Int, Float or
Boolean variable may come as a string of one (`"20"`, `"1.5"`, `"false"`), which graphql-core
alone refuses. Anything else is refused as before; literals in the document are unchanged."""

from __future__ import annotations

import re
from typing import Any

from graphql import GraphQLBoolean, GraphQLFloat, GraphQLInt

_INTEGER = re.compile(r"[+-]?\d{1,10}")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_BOOLEANS = {"true": True, "false": False}
# graphql-core 3.3 coerces variables with `coerce_input_value` (`parse_value` before it)
_COERCER = "coerce_input_value" if hasattr(GraphQLInt, "coerce_input_value") else "parse_value"
_original = {scalar: getattr(scalar, _COERCER) for scalar in (GraphQLInt, GraphQLFloat, GraphQLBoolean)}


def _int(value: Any) -> Any:
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        value = int(value)
    return _original[GraphQLInt](value)


def _float(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        value = float(value)
    return _original[GraphQLFloat](value)


def _boolean(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        value = _BOOLEANS[value.strip().lower()]
    return _original[GraphQLBoolean](value)


def lenient_scalars() -> None:
    """Makes the Int, Float and Boolean scalars accept strings of their values as variables."""
    for scalar, coerce in ((GraphQLInt, _int), (GraphQLFloat, _float), (GraphQLBoolean, _boolean)):
        setattr(scalar, _COERCER, coerce)
