"""What one set of field operations says about fields (CDAP's FieldLineageInfo): for each
destination field, the source fields it comes from and the operations on the way (incoming);
for each source field, the destination fields it reaches (outgoing); the sub-graph of one
field (nodes `<operation>.<field>`, connections labelled by operation). A transform's outputs
come from all of its inputs; a write puts its input fields in the destination under their
names; a transform without outputs is a drop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from schemas.field_operations import READ, TRANSFORM, WRITE, FieldOperation, topological_order

Node = tuple[str, str]  # (operation that produced the field, field)
EndField = tuple[str, str]  # (dataset URN, field)


@dataclass(frozen=True)
class Path:
    """The fields at one end of a field's lineage, with the operations between them."""

    ends: frozenset[EndField]
    operations: tuple[FieldOperation, ...]  # in topological order
    nodes: frozenset[Node]
    connections: frozenset[tuple[Node, Node | EndField, str]]  # (from, to, operation)


class FieldGraph:
    """One operation set's field-level lineage; computed once per checksum and cached."""

    def __init__(self, operations: Sequence[FieldOperation]):
        self.operations = topological_order(tuple(operations))
        self.by_name = {op.name: op for op in self.operations}
        self.order = {op.name: i for i, op in enumerate(self.operations)}
        self.consumers: dict[Node, list[FieldOperation]] = {}
        for op in self.operations:
            for i in op.inputs:
                self.consumers.setdefault((i.origin, i.field), []).append(op)

    @cached_property
    def destination_fields(self) -> frozenset[EndField]:
        return frozenset((op.destination, i.field) for op in self.operations if op.type == WRITE and op.destination
                         for i in op.inputs)

    @cached_property
    def source_fields(self) -> frozenset[EndField]:
        return frozenset((op.source, f) for op in self.operations if op.type == READ and op.source for f in op.outputs)

    def incoming(self, dataset: str, field: str) -> Path:
        """Where `field` of destination `dataset` comes from."""
        ops: set[str] = set()
        nodes: set[Node] = set()
        connections: set[tuple[Node, Node | EndField, str]] = set()
        ends: set[EndField] = set()
        stack: list[Node] = []
        for op in self.operations:
            if op.type == WRITE and op.destination == dataset:
                for i in op.inputs:
                    if i.field == field:
                        ops.add(op.name)
                        connections.add(((i.origin, i.field), (dataset, field), op.name))
                        stack.append((i.origin, i.field))
        while stack:
            node = stack.pop()
            if node in nodes:
                continue
            nodes.add(node)
            op = self.by_name.get(node[0])
            if op is None:
                continue
            ops.add(op.name)
            if op.type == READ:
                ends.add((op.source or "", node[1]))
            elif op.type == TRANSFORM:
                for i in op.inputs:
                    connections.add(((i.origin, i.field), node, op.name))
                    stack.append((i.origin, i.field))
        return self._path(ends, ops, nodes, connections)

    def outgoing(self, dataset: str, field: str) -> Path:
        """Where `field` of source `dataset` goes."""
        ops: set[str] = set()
        nodes: set[Node] = set()
        connections: set[tuple[Node, Node | EndField, str]] = set()
        ends: set[EndField] = set()
        stack = [(op.name, field) for op in self.operations
                 if op.type == READ and op.source == dataset and field in op.outputs]
        ops.update(name for name, _ in stack)
        while stack:
            node = stack.pop()
            if node in nodes:
                continue
            nodes.add(node)
            for op in self.consumers.get(node, ()):
                ops.add(op.name)
                if op.type == WRITE and op.destination:
                    ends.add((op.destination, node[1]))
                    connections.add((node, (op.destination, node[1]), op.name))
                for out in op.outputs:
                    connections.add((node, (op.name, out), op.name))
                    stack.append((op.name, out))
        return self._path(ends, ops, nodes, connections)

    def _path(self, ends: set[EndField], ops: set[str], nodes: set[Node],
              connections: set[tuple[Node, Node | EndField, str]]) -> Path:
        ordered = tuple(sorted((self.by_name[name] for name in ops), key=lambda op: self.order[op.name]))
        return Path(frozenset(ends), ordered, frozenset(nodes), frozenset(connections))

    def mappings(self, backward: bool, dataset: str) -> dict[str, set[tuple[str, str]]]:
        """Dataset-level field maps touching `dataset`: other dataset -> {(from field, to field)}."""
        out: dict[str, set[tuple[str, str]]] = {}
        if backward:
            for destination, field in self.destination_fields:
                if destination == dataset:
                    for source, source_field in self.incoming(dataset, field).ends:
                        out.setdefault(source, set()).add((source_field, field))
        else:
            for source, field in self.source_fields:
                if source == dataset:
                    for destination, destination_field in self.outgoing(dataset, field).ends:
                        out.setdefault(destination, set()).add((field, destination_field))
        return out
