"""Variables as DataHub's GraphQL server reads them: a number or a boolean may come as its text
(`{"start": "0", "count": "20"}`, `"false"`), as DataHub's web app and tests send them and
graphql-java accepts. Each such text, wherever the operation's variable types expect an Int,
Long, Float or Boolean, is read as that value before graphql-core coerces the variables; text
that is no such value is left for graphql-core to refuse, naming the variable."""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLSchema,
    OperationDefinitionNode,
    type_from_ast,
)

_NUMBERS = {"Int": int, "Long": int, "Float": float}
_BOOLEANS = {"true": True, "false": False}


def lenient(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
            variables: dict[str, Any] | None) -> dict[str, Any] | None:
    """The variables with the texts of numbers and booleans read where their types expect them."""
    if not variables:
        return variables
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)
                  and (operation_name is None or (d.name is not None and d.name.value == operation_name))]
    if len(operations) != 1:
        return variables  # graphql-core names the problem
    out = dict(variables)
    for definition in operations[0].variable_definitions or ():
        name = definition.variable.name.value
        kind = type_from_ast(schema, definition.type)
        if name in out and kind is not None:
            out[name] = _read(kind, out[name])  # type: ignore[arg-type]
    return out


def _read(kind: GraphQLInputType, value: Any) -> Any:
    if isinstance(kind, GraphQLNonNull):
        return _read(kind.of_type, value)
    if isinstance(kind, GraphQLList):
        return [_read(kind.of_type, v) for v in value] if isinstance(value, list) else _read(kind.of_type, value)
    if isinstance(kind, GraphQLInputObjectType) and isinstance(value, dict):
        return {k: _read(kind.fields[k].type, v) if k in kind.fields else v for k, v in value.items()}
    if isinstance(kind, GraphQLScalarType) and isinstance(value, str):
        if kind.name in _NUMBERS:
            try:
                return _NUMBERS[kind.name](value)
            except ValueError:
                return value
        if kind.name == "Boolean":
            return _BOOLEANS.get(value, value)
    return value
