"""The shared lineage walk: the answers of a plain breadth-first walk (expand a hop, then drop
the soft-deleted nodes it found), in hops + 1 rounds of reads whatever the width and direction.

The graphs here are in memory: the walk is a pure function of what its reader returns; the
adapters' own reads are covered by the contract in test_mcl_processor_lineage.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

import pytest

from mcl_processor.annotations import Edge
from mcl_processor.lineage import LineageResult
from mcl_processor.lineage.walk import walk


class Graph:
    def __init__(self, edges: list[Edge], hidden: set[str]):
        self.edges, self.hidden, self.rounds = edges, hidden, 0

    def read(self, expand: Mapping[str, Sequence[str]], status: Collection[str]) -> tuple[
            dict[str, list[Edge]], set[str]]:
        self.rounds += 1
        found = {side: [e for e in self.edges if (e.destination if side == "upstream" else e.source) in frontier]
                 for side, frontier in expand.items()}
        return found, self.hidden & set(status)

    def plain_walk(self, root: str, direction: str, max_hops: int) -> LineageResult:
        """The walk as the SQLite adapter did it before: a hop's edges, then the statuses of what they reach."""
        nodes: dict[str, tuple[int, str]] = {root: (0, "root")}
        walked: set[Edge] = set()
        for side in ("upstream", "downstream") if direction == "both" else (direction,):
            upstream = side == "upstream"
            seen, frontier = {root}, [root]
            for hop in range(1, max_hops + 1):
                found = [e for e in self.edges if (e.destination if upstream else e.source) in frontier]
                frontier = []
                for edge in found:
                    neighbour = edge.source if upstream else edge.destination
                    if neighbour in self.hidden:
                        continue
                    walked.add(edge)
                    if neighbour not in seen:
                        seen.add(neighbour)
                        frontier.append(neighbour)
                        nodes.setdefault(neighbour, (hop, side))
                if not frontier:
                    break
        return LineageResult(root, nodes, sorted(walked))


def random_graph(rng: random.Random) -> Graph:
    names = [f"n{i}" for i in range(rng.randint(2, 12))]
    edges = {Edge(rng.choice(names), rng.choice(names), rng.choice("AB"), rng.choice("xy"))
             for _ in range(rng.randint(0, 30))}
    return Graph(sorted(e for e in edges if e.source != e.destination),
                 set(rng.sample(names, rng.randint(0, len(names) // 3))))


@pytest.mark.parametrize("seed", range(300))
def test_the_walk_answers_as_the_plain_walk(seed):
    rng = random.Random(seed)
    graph = random_graph(rng)
    root, direction = f"n{rng.randint(0, 3)}", rng.choice(["upstream", "downstream", "both"])
    max_hops = rng.randint(1, 6)
    assert walk(root, direction, max_hops, graph.read) == graph.plain_walk(root, direction, max_hops)
    assert graph.rounds <= max_hops + 1


def test_a_five_hop_walk_both_ways_takes_six_rounds():
    chain = [Edge(f"n{i}", f"n{i + 1}", "DownstreamOf", "upstreamLineage") for i in range(10)]
    fan = [Edge("n5", f"wide{i}", "DownstreamOf", "upstreamLineage") for i in range(100)]
    graph = Graph(chain + fan, {"n2"})
    result = walk("n5", "both", 5, graph.read)
    assert graph.rounds == 6
    assert {urn: hops for urn, (hops, _) in result.nodes.items()} == {
        "n5": 0, "n4": 1, "n3": 2, **{f"n{5 + i}": i for i in range(1, 6)}, **{f"wide{i}": 1 for i in range(100)}}
