"""What an aspect version contributes to the lineage graph, the same for every adapter.

A traced aspect version contributes entity edges, field edges (from fine-grained lineage) and
possibly the soft-delete flag; a deleted aspect contributes nothing. Adapters store each
contribution under its owner (urn, aspect), so a newer version replaces exactly it; this
module also says which changes are fresh and how a stored graph differs from the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcl_processor.annotations import Annotations, Edge
from mcl_processor.changes import AspectChange
from mcl_processor.divergence import Divergence

MODEL = "lineage"
ENTITY, FIELD, REMOVED = "edge", "field", "removed"  # the kinds of fact
Fact = tuple[str, ...]  # (ENTITY | FIELD, source, destination, type) or (REMOVED,)
Owner = tuple[str, str]  # (urn, aspect)


@dataclass(frozen=True, slots=True)
class Contribution:
    """The edges and soft-delete flag one aspect version puts in the graph."""

    urn: str
    aspect: str
    edges: tuple[Edge, ...] = ()
    field_edges: tuple[Edge, ...] = ()
    removed: bool = False

    @property
    def owner(self) -> Owner:
        return self.urn, self.aspect

    def facts(self) -> set[Fact]:
        """The contribution as comparable facts (what `compare` checks)."""
        return ({(ENTITY, *e[:3]) for e in self.edges} | {(FIELD, *e[:3]) for e in self.field_edges}
                | ({(REMOVED,)} if self.removed else set()))


def contribution(annotations: Annotations, change: AspectChange) -> Contribution:
    """What `change` (of a traced aspect) contributes."""
    if change.deleted:
        return Contribution(change.urn, change.aspect)
    spec = annotations[change.aspect]
    value = change.value
    return Contribution(change.urn, change.aspect, tuple(spec.edges(change.urn, value)),
                        tuple(spec.field_edges(value)), bool(spec.removed(value)))


def moves_fields(annotations: Annotations, aspect: str) -> bool:
    """Whether an aspect can contribute field edges."""
    spec = annotations[aspect]
    return bool(spec.fine_grained or spec.field_operations)


def field_destinations(contributions: Iterable[Contribution]) -> set[str]:
    """The destinations of the field edges of these contributions."""
    return {edge.destination for c in contributions for edge in c.field_edges}


def fresh(changes: Iterable[AspectChange], current: Mapping[Owner, int], replace_equal: bool) -> list[AspectChange]:
    """The changes above the version the graph reflects (or equal to it, with `replace_equal`)."""
    out = []
    for change in changes:
        stored = current.get((change.urn, change.aspect))
        if stored is None or change.version > stored or (replace_equal and change.version == stored):
            out.append(change)
    return out


def divergences(annotations: Annotations, expected: Sequence[AspectChange], live: Mapping[Owner, int],
                stored: Mapping[Owner, set[Fact]]) -> list[Divergence]:
    """How a graph holding `live` versions and `stored` facts differs from the store's latest aspects."""
    wanted = {(c.urn, c.aspect): c for c in expected if annotations.traced(c.aspect)}
    out = []
    for key, change in wanted.items():
        version = live.get(key)
        if version is None:
            out.append(Divergence(MODEL, "missing", *key, f"version {change.version} not applied"))
        elif version != change.version:
            out.append(Divergence(MODEL, "stale", *key, f"graph has version {version}, store {change.version}"))
        elif stored.get(key, set()) != contribution(annotations, change).facts():
            out.append(Divergence(MODEL, "content", *key, f"edges of version {version} differ"))
    out.extend(Divergence(MODEL, "extra", *key, f"version {live[key]} applied, not live in the store")
               for key in live if key not in wanted)
    return out
