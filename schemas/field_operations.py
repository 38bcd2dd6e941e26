"""Field operations of a run (the `fieldOperations` aspect): parsing, CDAP's validation rules,
the operations accumulated per destination, the order-independent checksum and the topological
order.

The rules and messages are CDAP's (FieldLineageInfo): at least one READ and one WRITE, unique
operation names, inputs whose origins exist, and no cycle among the operations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

READ, TRANSFORM, WRITE = "READ", "TRANSFORM", "WRITE"


class FieldOperationsError(ValueError):
    """Operations that break one of the rules; the message names the operation."""


@dataclass(frozen=True, slots=True)
class InputField:
    origin: str  # the operation that produced the field
    field: str


@dataclass(frozen=True, slots=True)
class FieldOperation:
    name: str
    type: str
    description: str = ""
    source: str | None = None
    destination: str | None = None
    inputs: tuple[InputField, ...] = ()
    outputs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The aspect's JSON form of the operation."""
        return {
            "name": self.name, "description": self.description, "type": self.type,
            "source": self.source, "destination": self.destination,
            "inputs": [{"origin": i.origin, "field": i.field} for i in self.inputs],
            "outputs": list(self.outputs),
        }


def operations_from_json(value: Mapping[str, Any]) -> tuple[FieldOperation, ...]:
    """The operations of a `fieldOperations` value that fits its schema (not yet validated)."""
    return tuple(
        FieldOperation(
            name=op["name"], type=op["type"], description=op.get("description") or "",
            source=op.get("source"), destination=op.get("destination"),
            inputs=tuple(InputField(i["origin"], i["field"]) for i in op.get("inputs") or ()),
            outputs=tuple(op.get("outputs") or ()),
        )
        for op in value["operations"]
    )


def destinations_from_json(value: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The operation names recorded per destination (empty when the value names none)."""
    return {group["destination"]: tuple(group["operations"]) for group in value.get("destinations") or ()}


def leading_to(operations: Sequence[FieldOperation], destination: str,
               may_drop: Callable[[FieldOperation], bool] = lambda op: True) -> tuple[str, ...]:
    """The names of the operations accumulated for `destination` (in the given order): its
    WRITEs, every operation that produced one of their inputs, and the drops (a TRANSFORM
    without outputs that `may_drop` admits) of fields those operations made."""
    by_name = {op.name: op for op in operations}
    wanted: set[str] = set()
    stack = [op.name for op in operations if op.type == WRITE and op.destination == destination]
    while stack:
        current = stack.pop()
        if current not in wanted:
            wanted.add(current)
            stack.extend(i.origin for i in by_name[current].inputs if i.origin in by_name)
    for op in operations:
        if op.type == TRANSFORM and not op.outputs and op.inputs and may_drop(op) \
                and all(i.origin in wanted for i in op.inputs):
            wanted.add(op.name)
    return tuple(op.name for op in operations if op.name in wanted)


def accumulated(operations: Sequence[FieldOperation],
                may_drop: Callable[[str, FieldOperation], bool] = lambda destination, op: True
                ) -> dict[str, tuple[str, ...]]:
    """`leading_to` of every destination the operations write (`may_drop(destination, op)`
    admits drops), leaving out a destination no READ leads to."""
    by_name = {op.name: op for op in operations}
    out: dict[str, tuple[str, ...]] = {}
    for destination in sorted({op.destination for op in operations if op.type == WRITE and op.destination}):
        names = leading_to(operations, destination, lambda op, d=destination: may_drop(d, op))
        if any(by_name[n].type == READ for n in names):
            out[destination] = names
    return out


def per_destination(operations: Sequence[FieldOperation], destinations: Mapping[str, Sequence[str]]
                    ) -> dict[str, tuple[FieldOperation, ...]]:
    """Each destination's operations, checked: the names are the run's operations, they write
    the destination, and they keep CDAP's rules on their own (FieldOperationsError otherwise)."""
    by_name = {op.name: op for op in operations}
    out: dict[str, tuple[FieldOperation, ...]] = {}
    for destination, names in destinations.items():
        unknown = sorted(set(names) - by_name.keys())
        if unknown:
            raise FieldOperationsError(f"The operations for destination '{destination}' name operations the run "
                                       f"does not have: {unknown}.")
        ops = tuple(by_name[name] for name in dict.fromkeys(names))
        if not any(op.type == WRITE and op.destination == destination for op in ops):
            raise FieldOperationsError(f"The operations for destination '{destination}' do not write it.")
        try:
            out[destination] = validate(ops)
        except FieldOperationsError as err:
            raise FieldOperationsError(f"The operations for destination '{destination}': {err}") from None
    return out


def validate(operations: Iterable[FieldOperation]) -> tuple[FieldOperation, ...]:
    """The operations in topological order; raises FieldOperationsError on a broken rule."""
    ops = tuple(operations)
    names: set[str] = set()
    origins: list[str] = []
    for op in ops:
        if op.name in names:
            raise FieldOperationsError(
                "All operations provided for creating field level lineage info must have unique names. "
                f"Operation name '{op.name}' is repeated."
            )
        names.add(op.name)
        _check_shape(op)
        origins.extend(i.origin for i in op.inputs)
    if not any(op.type == READ for op in ops):
        raise FieldOperationsError("Field level lineage requires at least one operation of type 'READ'.")
    if not any(op.type == WRITE for op in ops):
        raise FieldOperationsError("Field level lineage requires at least one operation of type 'WRITE'.")
    invalid = sorted({o for o in origins if o not in names})
    if invalid:
        raise FieldOperationsError(f"No operation is associated with the origins '{invalid}'.")
    return topological_order(ops)


def _check_shape(op: FieldOperation) -> None:
    if op.type == READ:
        if op.source is None:
            raise FieldOperationsError(f"Source endpoint cannot be null for the read operation '{op.name}'.")
        if op.inputs:
            raise FieldOperationsError(f"Read operation '{op.name}' cannot have input fields.")
    elif op.source is not None:
        raise FieldOperationsError(f"Only a read operation has a source endpoint; '{op.name}' is a {op.type}.")
    if op.type == WRITE:
        if op.destination is None:
            raise FieldOperationsError(
                f"Destination endpoint cannot be null for the write operation '{op.name}'."
            )
        if op.outputs:
            raise FieldOperationsError(f"Write operation '{op.name}' cannot have output fields.")
    elif op.destination is not None:
        raise FieldOperationsError(
            f"Only a write operation has a destination endpoint; '{op.name}' is a {op.type}."
        )


def topological_order(ops: tuple[FieldOperation, ...]) -> tuple[FieldOperation, ...]:
    """Operations so that each comes after the origins of its inputs (ties kept in given order)."""
    by_name = {op.name: op for op in ops}
    pending = {op.name: {i.origin for i in op.inputs if i.origin in by_name} for op in ops}
    done: list[FieldOperation] = []
    ready = [op.name for op in ops if not pending[op.name]]
    consumers: dict[str, list[str]] = {}
    for op in ops:
        for origin in pending[op.name]:
            consumers.setdefault(origin, []).append(op.name)
    while ready:
        name = ready.pop(0)
        done.append(by_name[name])
        for consumer in consumers.get(name, ()):
            pending[consumer].discard(name)
            if not pending[consumer]:
                ready.append(consumer)
    if len(done) != len(ops):
        cycle = sorted(name for name, left in pending.items() if left)
        raise FieldOperationsError(f"Cycle detected in the operations {cycle}.")
    return tuple(done)


def checksum(ops: Iterable[FieldOperation]) -> str:
    """The checksum of a set of operations: the same operations in any order have the same one."""
    canonical = sorted(orjson.dumps(op.to_json(), option=orjson.OPT_SORT_KEYS) for op in ops)
    return hashlib.sha256(b"\n".join(canonical)).hexdigest()[:32]
