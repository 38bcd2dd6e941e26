"""Lineage searches of DataHub's GraphQL API (`searchAcrossLineage`, `scrollAcrossLineage`) on
Lodestar's lineage graph: the walk from an entity (or, from a schemaField URN, the field-level
walk), the nodes the caller may read, kept by degree, entity type and the filters (which the
search index checks among the nodes), ordered by degree then URN. Each result carries one
shortest path from the queried entity. With a groupingSpec of SCHEMA_FIELD, a field walk's
fields are grouped into their datasets (DataHub's answer to the SDK's column lineage)."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import ENTITY_TYPES, EntityRef, entity_type_of
from lodestar.api.graphql.filters import Branch
from lodestar.api.graphql.search import both, query_text
from lodestar.api.limits import MAX_COUNT, MAX_HOPS
from lodestar.api.reads import visible_lineage
from mcl_processor.lineage import LineageGraph, LineageResult
from mcl_processor.search import SearchIndex
from mcl_processor.search.cdap import RESOURCE, Expr, any_of
from schemas.metadata_entity import resource_chain

CHECK_CHUNK = 200  # nodes checked against the filters by one index query


@dataclass(frozen=True)
class Node:
    urn: str
    degree: int
    path: tuple[str, ...]  # from the queried entity to this one, both included


def walk(graph: LineageGraph, urn: str, direction: str, max_hops: int, readable: frozenset[str] | None,
         group_fields: bool) -> list[Node]:
    """The nodes reached (the queried one left out), with their degree and a shortest path."""
    fields = entity_type_of(urn) == "schemaField"
    try:
        result = (graph.field_query if fields else graph.query)(urn, direction, max_hops)
    except ValueError as err:
        raise GraphQLError(str(err)) from None
    result = visible_lineage(result, readable)
    parents = _shortest_paths(result, direction)
    nodes = []
    for node, (hops, _) in result.nodes.items():
        if node == urn or node not in parents:
            continue
        nodes.append(Node(node, hops, _path(parents, node)))
    if fields and group_fields:
        nodes = _grouped(nodes)
    return sorted(nodes, key=lambda n: (n.degree, n.urn))


def _shortest_paths(result: LineageResult, direction: str) -> dict[str, str | None]:
    """Each node's predecessor on a shortest path from the root, over the edges walked."""
    forward: dict[str, list[str]] = {}
    for edge in result.edges:
        a, b = (edge.source, edge.destination) if direction == "downstream" else (edge.destination, edge.source)
        forward.setdefault(a, []).append(b)
    parents: dict[str, str | None] = {result.root: None}
    queue = deque([result.root])
    while queue:
        at = queue.popleft()
        for nxt in sorted(forward.get(at, ())):
            if nxt not in parents:
                parents[nxt] = at
                queue.append(nxt)
    return parents


def _path(parents: dict[str, str | None], node: str) -> tuple[str, ...]:
    path = [node]
    while (up := parents.get(path[-1])) is not None:
        path.append(up)
    return tuple(reversed(path))


def _grouped(nodes: list[Node]) -> list[Node]:
    """Field nodes as their datasets: the nearest field's degree and path."""
    best: dict[str, Node] = {}
    for node in sorted(nodes, key=lambda n: (n.degree, n.urn)):
        parent = _field_parent(node.urn)
        if parent is not None and parent not in best:
            best[parent] = Node(parent, node.degree, node.path)
    return list(best.values())


def _field_parent(urn: str) -> str | None:
    inner = urn.removeprefix("urn:li:schemaField:(")
    if inner == urn:
        return None
    return inner.rpartition(",")[0] or None


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
             "paths": [{"path": [EntityRef(u) if entity_type_of(u) in ENTITY_TYPES else None for u in n.path]}],
             "explored": True, "truncatedChildren": False, "ignoredAsHop": False, "matchedFields": [],
             "insights": []} for n in nodes]


def facets(nodes: Sequence[Node]) -> dict[str, list[tuple[str, int]]]:
    """The facets a lineage answer counts exactly from its nodes: entity type and degree."""
    types = Counter(entity_type_of(n.urn) for n in nodes)
    degrees = Counter("3+" if n.degree >= 3 else str(n.degree) for n in nodes)
    return {"entityType": sorted(types.items(), key=lambda kv: (-kv[1], kv[0])),
            "degree": sorted(degrees.items())}

