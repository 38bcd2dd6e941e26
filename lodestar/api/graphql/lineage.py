"""Lineage searches of DataHub's GraphQL API (`searchAcrossLineage`, `scrollAcrossLineage`) on
Lodestar's lineage graph: the walk from an entity (or, from a schemaField URN, the field-level
walk), the nodes the caller may read, kept by degree, entity type and the filters (which the
search index checks among the nodes), ordered by degree then URN. Each result carries a
shortest path from the queried entity, with the query or data job data went through between two
nodes (`lineage_through.py`); a data job a field walk went through is a result too, at the
degree of the fields reached through it, with the paths that led to it. With a groupingSpec of
SCHEMA_FIELD, a field walk's fields are grouped into their datasets (DataHub's answer to the
SDK's column lineage): the nearest field's degree, every field's path."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import ENTITY_TYPES, EntityRef, entity_type_of
from lodestar.api.graphql.filters import Branch
from lodestar.api.graphql.lineage_through import field_dataset
from lodestar.api.graphql.search import both, query_text
from lodestar.api.limits import MAX_COUNT, MAX_HOPS
from lodestar.api.reads import visible_lineage
from mcl_processor.annotations import Edge
from mcl_processor.lineage import LineageGraph, LineageResult
from mcl_processor.search import SearchIndex
from mcl_processor.search.cdap import RESOURCE, Expr, any_of
from schemas.metadata_entity import resource_chain

CHECK_CHUNK = 200  # nodes checked against the filters by one index query


@dataclass(frozen=True)
class Node:
    urn: str
    degree: int
    paths: tuple[tuple[str, ...], ...]  # from the queried entity to this one, both included


def walk(graph: LineageGraph, urn: str, direction: str, max_hops: int, readable: frozenset[str] | None,
         group_fields: bool, through: Callable[[Edge], str | None] = lambda edge: None) -> list[Node]:
    """The nodes reached (the queried one left out), with their degree and shortest paths."""
    fields = entity_type_of(urn) == "schemaField"
    try:
        result = (graph.field_query if fields else graph.query)(urn, direction, max_hops)
    except ValueError as err:
        raise GraphQLError(str(err)) from None
    result = visible_lineage(result, readable)
    parents = _shortest_paths(result, direction)
    nodes: dict[str, Node] = {}
    for node, (hops, _) in result.nodes.items():
        if node == urn or node not in parents:
            continue
        path = _path(parents, node, through)
        nodes[node] = Node(node, hops, (path,))
        if fields and len(path) > 2 and entity_type_of(path[-2]) == "dataJob":  # the job it went through
            _add(nodes, Node(path[-2], hops, (path[:-1],)))
    found = list(nodes.values())
    if fields and group_fields:
        found = _grouped(found)
    return sorted(found, key=lambda n: (n.degree, n.urn))


def _add(nodes: dict[str, Node], node: Node) -> None:
    """A node, or more paths of one already there (its degree the least)."""
    known = nodes.get(node.urn)
    if known is not None:
        node = Node(node.urn, min(known.degree, node.degree),
                    known.paths + tuple(p for p in node.paths if p not in known.paths))
    nodes[node.urn] = node


def _shortest_paths(result: LineageResult, direction: str) -> dict[str, tuple[str, Edge] | None]:
    """Each node's predecessor on a shortest path from the root, and the edge between them."""
    forward: dict[str, list[tuple[str, Edge]]] = {}
    for edge in result.edges:
        a, b = (edge.source, edge.destination) if direction == "downstream" else (edge.destination, edge.source)
        forward.setdefault(a, []).append((b, edge))
    parents: dict[str, tuple[str, Edge] | None] = {result.root: None}
    queue = deque([result.root])
    while queue:
        at = queue.popleft()
        for nxt, edge in sorted(forward.get(at, ())):
            if nxt not in parents:
                parents[nxt] = (at, edge)
                queue.append(nxt)
    return parents


def _path(parents: dict[str, tuple[str, Edge] | None], node: str,
          through: Callable[[Edge], str | None]) -> tuple[str, ...]:
    path = [node]
    while (step := parents.get(path[-1])) is not None:
        up, edge = step
        via = through(edge)
        path += [via, up] if via is not None else [up]
    return tuple(reversed(path))


def _grouped(nodes: list[Node]) -> list[Node]:
    """Field nodes as their datasets (the nearest field's degree, every field's paths); others as they are."""
    grouped: dict[str, Node] = {}
    for node in sorted(nodes, key=lambda n: (n.degree, n.urn)):
        parent = field_dataset(node.urn) if entity_type_of(node.urn) == "schemaField" else node.urn
        if parent is not None:
            _add(grouped, Node(parent, node.degree, node.paths))
    return list(grouped.values())


def max_hops(branches: Sequence[Branch]) -> int:
    """How far to walk for the degrees the branches allow."""
    wanted: set[str] = set()
    for b in branches:
        if b.degrees is None:
            return MAX_HOPS
        wanted |= b.degrees
    if "3+" in wanted:
        return MAX_HOPS
    return max((int(d) for d in wanted), default=1)


def kept(nodes: list[Node], branches: Sequence[Branch], text: str | None, index: SearchIndex,
         within: Expr | None, types: frozenset[str] | None) -> list[Node]:
    """The nodes of served types some branch allows: its degrees and types here, its filters
    and the free text by the search index among the nodes."""
    text = query_text(text)
    served = [n for n in nodes if entity_type_of(n.urn) in ENTITY_TYPES
              and (types is None or entity_type_of(n.urn) in types)]
    keep: set[str] = set()
    for branch in branches:
        candidates = [n for n in served if _degree_allowed(branch, n.degree)
                      and (branch.types is None or entity_type_of(n.urn) in branch.types)
                      and (branch.urns is None or n.urn in branch.urns)]
        if branch.removed == "only":
            continue  # the walk leaves soft-deleted entities out
        if not branch.terms and text == "*":
            keep.update(n.urn for n in candidates)
            continue
        keep |= _matching([n.urn for n in candidates], branch, text, index, within)
    return [n for n in served if n.urn in keep]


def _degree_allowed(branch: Branch, degree: int) -> bool:
    return branch.degrees is None or str(degree) in branch.degrees or (degree >= 3 and "3+" in branch.degrees)


def _matching(urns: list[str], branch: Branch, text: str, index: SearchIndex, within: Expr | None) -> set[str]:
    found: set[str] = set()
    query = " ".join([text, *branch.terms])
    for i in range(0, len(urns), CHECK_CHUNK):
        chunk = urns[i:i + CHECK_CHUNK]
        wanted = set(chunk)
        restriction = both(within, any_of(RESOURCE, sorted({resource_chain(u)[0] for u in chunk})))
        types = sorted({entity_type_of(u) for u in chunk})
        start = 0
        while True:
            try:
                result = index.query(query, types, start, MAX_COUNT, True, "urn", None, restriction)
            except ValueError as err:
                raise GraphQLError(str(err)) from None
            found.update(h.urn for h in result.hits if h.urn in wanted)
            start += len(result.hits)
            if not result.hits or start >= result.total:
                break
    return found


def results(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    return [{"entity": EntityRef(n.urn), "degree": n.degree, "degrees": [n.degree],
             "paths": [{"path": [EntityRef(u) if entity_type_of(u) in ENTITY_TYPES else None for u in path]}
                       for path in n.paths],
             "explored": True, "truncatedChildren": False, "ignoredAsHop": False, "matchedFields": [],
             "insights": []} for n in nodes]


def facets(nodes: Sequence[Node]) -> dict[str, list[tuple[str, int]]]:
    """The facets a lineage answer counts exactly from its nodes: entity type and degree."""
    types = Counter(entity_type_of(n.urn) for n in nodes)
    degrees = Counter("3+" if n.degree >= 3 else str(n.degree) for n in nodes)
    return {"entityType": sorted(types.items(), key=lambda kv: (-kv[1], kv[0])),
            "degree": sorted(degrees.items())}

