"""The lineage-graph port: dataset, job and run edges, and field-level edges, per declaring aspect.

Edges point the way data flows (source = upstream). A query walks breadth first from one
node, upstream (against the edges), downstream (along them) or both (each separately, so
siblings are not included), up to max_hops, visiting every node once (cycles are safe).
Soft-deleted entities are left out of the walk.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from mcl_processor.annotations import Edge, entity_type_of
from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.divergence import Divergence

DIRECTIONS = ("upstream", "downstream", "both")
FIELD_REACH = 50  # hops `fields_reached` follows


@dataclass(frozen=True, slots=True)
class LineageResult:
    """The nodes reached (with their distance and side) and every edge walked."""

    root: str
    nodes: dict[str, tuple[int, str]]  # urn -> (hops, "root" | "upstream" | "downstream")
    edges: list[Edge]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"urn": urn, "entityType": entity_type_of(urn), "hops": hops, "direction": side}
                      for urn, (hops, side) in sorted(self.nodes.items(), key=lambda kv: (kv[1][0], kv[0]))],
            "edges": [edge.to_json() for edge in self.edges],
        }


class LineageGraph(ABC):
    @abstractmethod
    def apply(self, batch: ChangeBatch) -> set[str]:
        """Apply a batch inside the read models' current transaction. Returns the destinations of
        the field edges it added or removed: the fields whose upstream fields may have changed
        (an adapter without a transaction adds those of the batch's changes it had applied
        already, so that a batch replayed after a crash derives them again)."""

    @abstractmethod
    def fields_reached(self, urns: Collection[str], direction: str) -> set[str]:
        """The fields the field edges of any of these lead to ("downstream") or come from
        ("upstream"), transitively up to FIELD_REACH hops, soft-deleted fields left out (one
        of `urns` only when reached from one of them: `walk.reach`), as the writer left the
        graph (inside a transaction: with what it wrote so far)."""

    @abstractmethod
    def query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        """Entity lineage (datasets, jobs, runs). Raises ValueError for a bad direction or max_hops."""

    @abstractmethod
    def field_query(self, urn: str, direction: str = "both", max_hops: int = 1) -> LineageResult:
        """Field lineage from fine-grained lineage, starting at a schemaField URN."""

    @abstractmethod
    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        """Differences between what the graph holds for these entities and their latest aspects."""

    @abstractmethod
    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        """URNs of the entities the graph holds something for, in order, after `after`."""

    @abstractmethod
    def clear(self) -> None: ...


def check_walk(direction: str, max_hops: int) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if max_hops < 1:
        raise ValueError(f"maxHops must be at least 1, not {max_hops}")
