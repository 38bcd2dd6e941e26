"""Spark's plan JSON (`TreeNode.toJSON`) as a tree of `Node`s.

The JSON is a pre-order list of nodes, each with its class and `num-children`; a field holding a
child is the child's index, a field holding an expression is that expression's own pre-order
list, a sequence of expressions is a list of such lists, and a plan inside an expression (a
subquery) or inside a command (a CTAS query) is again a pre-order list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Node:
    """One plan node or expression: simple class name, its own fields, its children."""

    cls: str
    fields: dict[str, Any]
    children: list[Node] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def tree(self, name: str) -> Node | None:
        """The field `name` as one tree (an expression or a plan), if it is one."""
        value = self.fields.get(name)
        return parse(value) if _is_tree(value) else None

    def trees(self, name: str) -> list[Node]:
        """The field `name` as a sequence of trees (e.g. a project list); [] if absent."""
        value = self.fields.get(name)
        if _is_tree(value):
            return [parse(value)]
        if isinstance(value, list):
            return [parse(item) for item in value if _is_tree(item)]
        return []

    def nested_trees(self) -> Iterator[tuple[str, Node]]:
        """Every (field name, tree) held in this node's fields (expressions, subplans)."""
        for name, value in self.fields.items():
            if _is_tree(value):
                yield name, parse(value)
            elif isinstance(value, list):
                for item in value:
                    if _is_tree(item):
                        yield name, parse(item)

    def walk(self) -> Iterator[Node]:
        """This node and its descendants, pre-order (children only, not nested trees)."""
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def expr_id(self) -> int | None:
        """The expression id of an attribute or alias."""
        ident = self.fields.get("exprId")
        return ident.get("id") if isinstance(ident, dict) else None


def _is_tree(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "class" in value[0]


def parse(nodes: list[dict[str, Any]]) -> Node:
    """The tree of a pre-order node list."""
    position = 0

    def build() -> Node:
        nonlocal position
        raw = nodes[position]
        position += 1
        count = raw.get("num-children", 0)
        fields = {k: v for k, v in raw.items() if k not in ("class", "num-children")}
        node = Node(raw["class"].rsplit(".", 1)[-1].rstrip("$"), fields)
        node.children = [build() for _ in range(count)]
        return node

    return build()


def attributes(expr: Node) -> Iterator[Node]:
    """The attribute references inside an expression (outer references included), not those of
    subquery plans."""
    if expr.cls in ("AttributeReference", "OuterReference"):
        if expr.cls == "OuterReference":
            inner = expr.tree("e")
            if inner is not None:
                yield from attributes(inner)
                return
        yield expr
        return
    for child in expr.children:
        yield from attributes(child)


def subquery_plans(expr: Node) -> Iterator[Node]:
    """The plans of subquery expressions (scalar, IN, EXISTS, lateral) inside an expression."""
    if expr.cls.endswith("Subquery") or expr.cls in ("Exists", "InSubquery", "ListQuery", "LateralSubquery"):
        plan = expr.tree("plan")
        if plan is not None:
            yield plan
    for child in expr.children:  # an IN subquery's ListQuery is one of its children
        yield from subquery_plans(child)
