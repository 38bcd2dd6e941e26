"""Field-level lineage queries over a window (CDAP's field lineage API): the runs that started
in the window reference operation sets by checksum (backward from each destination, forward
from each source); each distinct set is read once and its `FieldGraph` cached by checksum."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcl_processor.runs import RunLineageStore
from mcl_processor.runs.field_graph import EndField, FieldGraph, Node, Path
from mcl_processor.runs.model import BACKWARD, FORWARD, FieldRef, Window
from schemas.field_operations import FieldOperation

INCOMING, OUTGOING = "incoming", "outgoing"
DIRECTIONS = {"incoming": (INCOMING,), "outgoing": (OUTGOING,), "both": (INCOMING, OUTGOING)}
_REF_DIRECTION = {INCOMING: BACKWARD, OUTGOING: FORWARD}


@dataclass
class OperationGroup:
    """Identical operations on a field's paths, with the programs whose runs applied them and
    each program's last run start (ms)."""

    operations: tuple[FieldOperation, ...]
    programs: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Mapping:
    source: str
    destination: str
    fieldmap: frozenset[tuple[str, str]]


class FieldLineage:
    def __init__(self, store: RunLineageStore, cache_size: int = 4096):
        self.store = store
        self.cache_size = cache_size
        self._graphs: OrderedDict[str, FieldGraph] = OrderedDict()

    def _graphs_of(self, refs: Iterable[FieldRef]) -> dict[str, FieldGraph]:
        wanted = {r.checksum for r in refs}
        found = {c: self._graphs[c] for c in wanted if c in self._graphs}
        missing = wanted - found.keys()
        if missing:
            for checksum, operations in self.store.operations(missing).items():
                found[checksum] = self._graphs[checksum] = FieldGraph(operations)
            while len(self._graphs) > self.cache_size:
                self._graphs.popitem(last=False)
        return found

    def _refs(self, dataset: str, direction: str, window: Window) -> list[FieldRef]:
        return self.store.field_refs(dataset, _REF_DIRECTION[direction], window)

    def _paths(self, dataset: str, name: str, direction: str, window: Window
               ) -> list[tuple[FieldRef, Path]]:
        refs = self._refs(dataset, direction, window)
        graphs = self._graphs_of(refs)
        paths: dict[str, Path] = {}
        out = []
        for ref in refs:
            path = paths.get(ref.checksum)
            if path is None:
                graph = graphs[ref.checksum]
                walk = graph.incoming if direction == INCOMING else graph.outgoing
                path = paths[ref.checksum] = walk(dataset, name)
            if path.operations:
                out.append((ref, path))
        return out

    def fields(self, dataset: str, window: Window) -> set[str]:
        """Fields of `dataset` written or read by field operations of runs in the window."""
        names: set[str] = set()
        for direction in (INCOMING, OUTGOING):
            refs = self._refs(dataset, direction, window)
            for graph in self._graphs_of(refs).values():
                ends = graph.destination_fields if direction == INCOMING else graph.source_fields
                names.update(f for d, f in ends if d == dataset)
        return names

    def summary(self, dataset: str, name: str, direction: str, window: Window) -> dict[str, dict[str, set[str]]]:
        """Per direction: each dataset at the other end -> the fields of it."""
        out: dict[str, dict[str, set[str]]] = {}
        for side in DIRECTIONS[direction]:
            ends: dict[str, set[str]] = {}
            for _, path in self._paths(dataset, name, side, window):
                for other, other_field in path.ends:
                    ends.setdefault(other, set()).add(other_field)
            out[side] = ends
        return out

    def operations(self, dataset: str, name: str, direction: str, window: Window) -> dict[str, list[OperationGroup]]:
        """Per direction: the operation sets on the field's paths, grouped when identical."""
        out: dict[str, list[OperationGroup]] = {}
        for side in DIRECTIONS[direction]:
            groups: dict[tuple[FieldOperation, ...], OperationGroup] = {}
            for ref, path in self._paths(dataset, name, side, window):
                group = groups.setdefault(path.operations, OperationGroup(path.operations))
                if ref.program:
                    group.programs[ref.program] = max(group.programs.get(ref.program, 0), ref.start_ms)
            out[side] = sorted(groups.values(), key=lambda g: -max(g.programs.values(), default=0))
        return out

    def graph(self, dataset: str, name: str, direction: str, window: Window) -> Path:
        """The union of the field's paths in the window: nodes, operations, connections."""
        paths = {ref.checksum: path for ref, path in self._paths(dataset, name, direction, window)}
        ends: set[EndField] = set()
        nodes: set[Node] = set()
        connections: set = set()
        operations: dict[str, FieldOperation] = {}
        for path in paths.values():
            ends |= path.ends
            nodes |= path.nodes
            connections |= path.connections
            operations.update((op.name, op) for op in path.operations)
        return Path(frozenset(ends), tuple(operations.values()), frozenset(nodes), frozenset(connections))

    def multi_level(self, dataset: str, window: Window, levels: int) -> list[Mapping]:
        """Dataset-to-dataset field maps, backward and forward from `dataset`, `levels` hops
        each way, continuing from a dataset only when it was itself written (backward) or
        read (forward) by a run in the window."""
        found: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for backward in (True, False):
            frontier, seen = {dataset}, {dataset}
            for _ in range(levels):
                following: set[str] = set()
                for current in sorted(frontier):
                    refs = self._refs(current, INCOMING if backward else OUTGOING, window)
                    for graph in self._graphs_of(refs).values():
                        for other, pairs in graph.mappings(backward, current).items():
                            key = (other, current) if backward else (current, other)
                            found.setdefault(key, set()).update(pairs)
                            following.add(other)
                frontier = following - seen
                seen |= frontier
                if not frontier:
                    break
        return [Mapping(s, d, frozenset(pairs)) for (s, d), pairs in sorted(found.items())]
