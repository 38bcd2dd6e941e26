"""A run as the run-lineage tables see it, derived from the facts of its aspects and its run
events, and the index rows it puts in the tables. Every adapter derives the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcl_processor.runs.facts import Facts
from schemas import field_operations as fo

READ, WRITE, READ_WRITE, UNKNOWN = "read", "write", "read_write", "unknown"
BACKWARD, FORWARD = "b", "f"  # field-lineage references: per destination, per source


@dataclass(frozen=True, slots=True)
class Window:
    """A time window in epoch milliseconds, start inclusive, end exclusive."""

    start_ms: int
    end_ms: int

    def running(self, start_ms: int, end_ms: int | None) -> bool:
        """Whether a run that started and ended (None: still running) then ran during the window."""
        return start_ms < self.end_ms and (end_ms is None or end_ms >= self.start_ms)


@dataclass(frozen=True, slots=True)
class Access:
    """One access row: a run of a program read or wrote a dataset (or a component of it did)."""

    dataset: str
    run: str
    program: str  # "" when the run names no program
    access: str
    component: str  # "" when no component is named
    start_ms: int
    end_ms: int | None


@dataclass(frozen=True, slots=True)
class FieldRef:
    """A run's reference to its field operations (by checksum), per destination or source."""

    endpoint: str
    direction: str  # BACKWARD (endpoint is a destination) | FORWARD (a source)
    start_ms: int
    run: str
    checksum: str
    program: str


@dataclass(frozen=True)
class Run:
    """A program run: program, enclosing run, times, status, accesses and field operations."""

    urn: str
    program: str = ""
    parent: str = ""
    start_ms: int | None = None
    end_ms: int | None = None
    status: str = "UNKNOWN"
    accesses: frozenset[tuple[str, str, str]] = frozenset()  # (dataset, access, component)
    operations: tuple[fo.FieldOperation, ...] = field(default=(), compare=False)
    checksum: str = ""
    sources: tuple[str, ...] = ()  # the datasets its field operations read
    destinations: tuple[str, ...] = ()  # and write
    # the operations recorded per destination: (destination, checksum, operations); empty when
    # the run recorded none, and then every destination has all of the operations
    by_destination: tuple[tuple[str, str, tuple[fo.FieldOperation, ...]], ...] = field(default=(), compare=False)

    def access_rows(self) -> list[Access]:
        if self.start_ms is None:
            return []
        return [Access(d, self.urn, self.program, a, c, self.start_ms, self.end_ms)
                for d, a, c in sorted(self.accesses)]

    def operation_sets(self) -> dict[str, tuple[fo.FieldOperation, ...]]:
        """The operation sets its references name, by checksum."""
        if not self.checksum:
            return {}
        return {checksum: ops for _, checksum, ops in self.by_destination} or {self.checksum: self.operations}

    def field_refs(self) -> list[FieldRef]:
        """Per destination (backward) a reference to its operations; per source (forward) one to
        each set of operations that reads it."""
        if self.start_ms is None or not self.checksum:
            return []
        sets = [(d, c, ops) for d, c, ops in self.by_destination] \
            or [(d, self.checksum, self.operations) for d in self.destinations]
        keys = {(BACKWARD, d, c) for d, c, _ in sets}
        keys |= {(FORWARD, op.source, c) for _, c, ops in sets for op in ops if op.source}
        return [FieldRef(endpoint, direction, self.start_ms, self.urn, checksum, self.program)
                for direction, endpoint, checksum in sorted(keys)]

    def to_json(self) -> dict[str, Any]:
        return {"run": self.urn, "program": self.program or None, "parent": self.parent or None,
                "start": self.start_ms, "end": self.end_ms, "status": self.status,
                "accesses": [{"dataset": d, "access": a, "component": c or None} for d, a, c in sorted(self.accesses)],
                "fieldOperationsChecksum": self.checksum or None,
                "sources": list(self.sources), "destinations": list(self.destinations)}


def derive(urn: str, facts: Iterable[Facts], events: Sequence[Facts]) -> Run:
    """The run its aspects' facts and its run events describe."""
    merged: Facts = {}
    accesses: set[tuple[str, str, str]] = set()
    for item in facts:
        merged.update(item)
        accesses.update((d, READ, "") for d in item.get("read", ()))
        accesses.update((d, WRITE, "") for d in item.get("write", ()))
        for access in item.get("accesses", ()):
            for component in access.get("components") or [""]:
                accesses.add((access["dataset"], access["type"].lower(), component))
    start = merged.get("start")
    start_ms = start.get("time") if isinstance(start, dict) else start
    started = [e["eventTime"] for e in events if e.get("status") == "STARTED"]
    completed = [e for e in events if e.get("status") == "COMPLETE"]
    if start_ms is None and (started or completed):
        start_ms = min(started or [e["eventTime"] for e in completed])
    end = max(completed, key=lambda e: e["eventTime"]) if completed else None
    status = ((end.get("result") or {}).get("type") or "COMPLETE") if end else ("RUNNING" if start_ms else "UNKNOWN")
    operations: tuple[fo.FieldOperation, ...] = ()
    checksum = ""
    by_destination: tuple[tuple[str, str, tuple[fo.FieldOperation, ...]], ...] = ()
    if merged.get("fieldOperations"):
        operations = fo.operations_from_json({"operations": merged["fieldOperations"]})
        checksum = fo.checksum(operations)
        groups = fo.per_destination(operations, fo.destinations_from_json(
            {"destinations": merged.get("fieldOperationsByDestination")}))
        by_destination = tuple((d, fo.checksum(ops), ops) for d, ops in sorted(groups.items()))
    return Run(urn, merged.get("program") or "", merged.get("parent") or "", start_ms,
               end["eventTime"] if end else None, status, frozenset(accesses), operations, checksum,
               tuple(sorted({op.source for op in operations if op.source})),
               tuple(sorted({op.destination for op in operations if op.destination})), by_destination)


def operations_json(operations: Sequence[fo.FieldOperation]) -> str:
    return orjson.dumps([op.to_json() for op in operations]).decode()


def operations_from(text: str) -> tuple[fo.FieldOperation, ...]:
    return fo.operations_from_json({"operations": orjson.loads(text)})


def run_from_json(value: Mapping[str, Any], operations: tuple[fo.FieldOperation, ...] = ()) -> Run:
    return Run(value["run"], value["program"] or "", value["parent"] or "", value["start"], value["end"],
               value["status"], frozenset((a["dataset"], a["access"], a["component"] or "") for a in value["accesses"]),
               operations, value["fieldOperationsChecksum"] or "", tuple(value["sources"]),
               tuple(value["destinations"]))
