"""The `fieldOperations` aspect of a write's run, CDAP's way: a READ per source dataset, a
TRANSFORM per derived column (and one per filter, join and grouping, without outputs), a WRITE
to the target; every input names the operation that produced it."""

from __future__ import annotations

from typing import Any

from spark_emitter.lineage import READ, TRANSFORM, Operation, Ref, WriteLineage


def field_operations(lineage: WriteLineage) -> dict[str, Any] | None:
    """The aspect's value; None when the write read no dataset (CDAP needs a READ)."""
    used = _reachable(lineage)
    if not any(op.kind == READ for op in used):
        return None
    names: dict[int, str] = {}
    taken: set[str] = set()

    def name_of(op: Operation) -> str:
        if id(op) not in names:
            base = (f"read {op.dataset.name}" if op.kind == READ
                    else f"{op.label} {op.output}" if op.output is not None else op.label)
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base} ({n})"
            taken.add(name)
            names[id(op)] = name
        return names[id(op)]

    read_outputs: dict[int, list[str]] = {}
    for op in used:
        for ref in op.inputs:
            if ref.op.kind == READ:
                read_outputs.setdefault(id(ref.op), []).append(ref.name)
    for ref in lineage.columns:
        if ref.op.kind == READ:
            read_outputs.setdefault(id(ref.op), []).append(ref.name)

    operations = []
    for op in used:
        if op.kind == READ:
            operations.append({"name": name_of(op), "description": f"read {op.dataset.urn}", "type": READ,
                               "source": op.dataset.urn, "destination": None, "inputs": [],
                               "outputs": sorted(set(read_outputs.get(id(op), [])))})
        else:
            inputs = [_input(ref, name_of) for ref in op.inputs]
            operations.append({"name": name_of(op), "description": _describe(op), "type": TRANSFORM,
                               "source": None, "destination": None, "inputs": inputs,
                               "outputs": [op.output] if op.output is not None else []})
    target = lineage.target
    operations.append({"name": f"write {target.name}", "description": f"write {target.urn}", "type": "WRITE",
                       "source": None, "destination": target.urn,
                       "inputs": [_input(ref, name_of) for ref in lineage.columns], "outputs": []})
    return {"operations": operations}


def _input(ref: Ref, name_of: Any) -> dict[str, str]:
    return {"origin": name_of(ref.op), "field": ref.name}


def _describe(op: Operation) -> str:
    fields = ", ".join(ref.name for ref in op.inputs)
    if op.output is None:
        return f"{op.label} on {fields}"
    return f"{op.output} = {op.label}({fields})"


def _reachable(lineage: WriteLineage) -> list[Operation]:
    """The operations the written columns and the controls depend on, in creation order."""
    seen: set[int] = set()
    stack = [ref.op for ref in lineage.columns] + list(lineage.controls)
    while stack:
        op = stack.pop()
        if id(op) not in seen:
            seen.add(id(op))
            stack.extend(ref.op for ref in op.inputs)
    return [op for op in lineage.operations if id(op) in seen]
