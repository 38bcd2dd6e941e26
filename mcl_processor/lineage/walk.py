"""The breadth-first walk every lineage adapter answers queries with, one round of reads per hop.

Each round asks the adapter, all at once, for the edges of every node to expand (per side)
and for which of the nodes found in the previous round are soft-deleted. Nodes are expanded
as soon as they are found, before their status is known, so finding the nodes at distance
h costs h rounds and the last hop one more (statuses only), whatever the fan-out and
whichever directions: an adapter answers a round with one batch of concurrent queries.

The result is that of the plain walk: a soft-deleted node is not reached (nor expanded, nor
any edge to it kept); every edge from a reached node to a reached node is kept, including the
ones that close cycles; a node's hop count is its first distance; with direction "both"
each side is walked separately and a node reached on both keeps its upstream distance.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from mcl_processor.annotations import Edge
from mcl_processor.lineage import LineageResult, check_walk

Node = TypeVar("Node", bound=Hashable)


class RoundReader(Protocol):
    def __call__(self, expand: Mapping[str, Sequence[str]], status: Collection[str]) -> tuple[
            Mapping[str, Iterable[Edge]], set[str]]:
        """Edges of the `expand` nodes per side ("upstream": edges into them, "downstream": out of
        them), and which of the `status` nodes are soft-deleted."""


class _Side:
    def __init__(self, name: str, root: str):
        self.name = name
        self.upstream = name == "upstream"
        self.seen = {root}
        self.hops: dict[str, int] = {}
        self.edges: set[Edge] = set()
        self.expand: list[str] = [root]
        self.pending: dict[str, list[Edge]] = {}  # found in the last round, status not yet known

    def advance(self, hop: int, found: Iterable[Edge], hidden: set[str], expand_next: bool) -> None:
        """Settle the nodes found at hop - 1, then take the edges found from them (at `hop`)."""
        for urn, incoming in self.pending.items():
            if urn not in hidden:
                self.seen.add(urn)
                self.hops[urn] = hop - 1
                self.edges.update(incoming)
        pending: dict[str, list[Edge]] = {}
        for edge in found:
            near, far = (edge.destination, edge.source) if self.upstream else (edge.source, edge.destination)
            if near not in self.seen or far in hidden:
                continue  # expanded before it turned out soft-deleted, or leads to a soft-deleted node
            if far in self.seen:
                self.edges.add(edge)
            else:
                pending.setdefault(far, []).append(edge)
        self.pending = pending
        self.expand = list(pending) if expand_next else []


def walk(root: str, direction: str, max_hops: int, read: RoundReader) -> LineageResult:
    """Walk from `root` up to `max_hops` (see the module docstring), reading through `read`."""
    check_walk(direction, max_hops)
    sides = [_Side(name, root) for name in (("upstream", "downstream") if direction == "both" else (direction,))]
    hidden: set[str] = set()
    known: set[str] = set()  # statuses already read
    status = {root}
    for hop in range(1, max_hops + 2):
        expand = {side.name: side.expand for side in sides if side.expand}
        if not (expand or status or any(side.pending for side in sides)):
            break
        found, newly_hidden = read(expand, status) if expand or status else ({}, set())
        hidden |= newly_hidden
        known |= status
        for side in sides:
            side.advance(hop, found.get(side.name, ()), hidden, expand_next=hop < max_hops)
        status = {urn for side in sides for urn in side.pending} - known
    nodes: dict[str, tuple[int, str]] = {root: (0, "root")}
    for side in sides:
        for urn, hops in side.hops.items():
            nodes.setdefault(urn, (hops, side.name))
    return LineageResult(root, nodes, sorted(set().union(*(side.edges for side in sides))))


def reach(roots: Collection[str], direction: str, max_hops: int, read: RoundReader) -> set[str]:
    """Every node reached from any of `roots` in up to `max_hops` along ("downstream") or against
    ("upstream") the edges, by the walk's rules (a soft-deleted node is neither reached nor
    passed through); a root is in it only when reached from a root (itself, by a cycle, too).
    Two rounds of reads per hop (edges, then the statuses of the nodes they lead to), whatever
    the number of roots."""
    check_walk(direction, max_hops)
    upstream = direction == "upstream"

    def neighbours(frontier: list[str]) -> set[str]:
        found, _ = read({direction: frontier}, ())
        return {edge.source if upstream else edge.destination for edge in found.get(direction, ())}

    return reach_by(roots, max_hops, neighbours, lambda candidates: read({}, candidates)[1])


def reach_by(roots: Iterable[Node], max_hops: int, neighbours: Callable[[list[Node]], Collection[Node]],
             hidden: Callable[[set[Node]], Collection[Node]]) -> set[Node]:
    """`reach`'s walk on any kind of node (an adapter's own numbers, say): `neighbours` gives the
    nodes one hop from a frontier (the walk's direction is the adapter's), `hidden` which of
    some nodes are soft-deleted."""
    reached: set[Node] = set()
    expanded = set(roots)
    frontier = list(expanded)
    for _ in range(max_hops):
        if not frontier:
            break
        candidates = set(neighbours(frontier)) - reached
        if not candidates:
            break
        shown = candidates - set(hidden(candidates))
        reached |= shown
        frontier = [node for node in shown if node not in expanded]
        expanded.update(frontier)
    return reached
