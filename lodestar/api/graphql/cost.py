"""What a GraphQL document would cost, measured before it runs: its operations with every fragment
spread inlined (a fragment spread inside itself, directly or not, is refused) and every alias
counted, so chained fragments and aliases cannot fan out past the limits:

- depth: nested selections of fields (the operation's own selection is 1);
- fields: the fields the document asks for, each alias and each expansion of a fragment counted
  (what DataHub counts as a query's complexity);
- cost: the fields weighted by how many results the lists around them may hold: a field's
  selection counts once per result its `count`/`first` argument (or its input's) asks for, or
  per URN of its `urns`, within the lists around it.

The walk stops as soon as one limit is passed, so measuring costs at most the limits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
)
from graphql.language import DocumentNode

SIZE_ARGUMENTS = ("count", "first")  # how many results of a list a field asks for
LIST_ARGUMENTS = ("urns",)  # one result per element


@dataclass(frozen=True)
class QueryLimits:
    """The limits of one GraphQL document (environment: LODESTAR_GRAPHQL_MAX_DEPTH,
    LODESTAR_GRAPHQL_MAX_FIELDS, LODESTAR_GRAPHQL_MAX_COST)."""

    max_depth: int = 32
    max_fields: int = 5_000
    max_cost: int = 1_000_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> QueryLimits:
        def value(name: str, default: int) -> int:
            text = env.get(f"LODESTAR_GRAPHQL_{name.upper()}")
            if not text:
                return default
            try:
                number = int(text)
            except ValueError:
                raise ValueError(f"LODESTAR_GRAPHQL_{name.upper()}: {text!r} is not a whole number") from None
            if number < 1:
                raise ValueError(f"LODESTAR_GRAPHQL_{name.upper()}: must be at least 1, not {number}")
            return number
        return cls(value("max_depth", cls.max_depth), value("max_fields", cls.max_fields),
                   value("max_cost", cls.max_cost))


class TooCostly(Exception):
    """A document over a limit; the message names the limit."""


def check(document: DocumentNode, variables: Mapping[str, Any] | None, limits: QueryLimits) -> None:
    """Raise TooCostly when an operation of the document passes a limit."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    fields = cost = 0
    for operation in document.definitions:
        if not isinstance(operation, OperationDefinitionNode):
            continue
        # (selection set, its depth, results it is asked for, fragments it is inside)
        stack: list[tuple[SelectionSetNode, int, int, frozenset[str]]] = [(operation.selection_set, 1, 1, frozenset())]
        while stack:
            selections, depth, times, inside = stack.pop()
            if depth > limits.max_depth:
                raise TooCostly(f"the document nests over {limits.max_depth} selections (fragments inlined);"
                                f" at most {limits.max_depth} are served")
            for selection in selections.selections:
                if isinstance(selection, FieldNode):
                    fields += 1
                    cost += times
                    if fields > limits.max_fields:
                        raise TooCostly(f"the document asks for over {limits.max_fields} fields (fragments and"
                                        " aliases counted each time they are used)")
                    if cost > limits.max_cost:
                        raise TooCostly(f"the document may cost over {limits.max_cost} (fields times the results"
                                        " their lists ask for); ask for fewer results or fields")
                    if selection.selection_set is not None:
                        stack.append((selection.selection_set, depth + 1, times * _results(selection, variables),
                                      inside))
                elif isinstance(selection, InlineFragmentNode):
                    stack.append((selection.selection_set, depth, times, inside))
                elif isinstance(selection, FragmentSpreadNode):
                    name = selection.name.value
                    if name in inside:
                        raise TooCostly(f"fragment {name} spreads itself")
                    if name in fragments:
                        stack.append((fragments[name].selection_set, depth, times, inside | {name}))


def _results(field: FieldNode, variables: Mapping[str, Any] | None) -> int:
    """How many results a field's arguments ask for (1 when they do not say)."""
    for argument in field.arguments or ():
        name = argument.name.value
        value = _value(argument.value, variables)
        if name == "input" and isinstance(value, Mapping):
            size = next((value[key] for key in SIZE_ARGUMENTS if key in value), None)
        elif name in SIZE_ARGUMENTS:
            size = value
        elif name in LIST_ARGUMENTS and isinstance(value, list):
            size = len(value)
        else:
            continue
        if isinstance(size, int) and not isinstance(size, bool):
            return max(1, size)
    return 1


def _value(node: ValueNode, variables: Mapping[str, Any] | None) -> Any:
    """An argument's value as far as sizes go: ints, lists, an object's sizes; variables looked up."""
    if isinstance(node, VariableNode):
        return (variables or {}).get(node.name.value)
    if isinstance(node, IntValueNode):
        try:
            return int(node.value)
        except ValueError:
            return None
    if isinstance(node, ListValueNode):
        return list(node.values)
    if isinstance(node, ObjectValueNode):
        return {f.name.value: _value(f.value, variables) for f in node.fields if f.name.value in SIZE_ARGUMENTS}
    return None
