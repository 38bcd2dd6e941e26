"""What data went through on a lineage edge, as DataHub's lineage paths show it: the query an
`upstreamLineage` names for an upstream dataset or a fine-grained lineage record (`query`), or
the data job whose `dataJobInputOutput` declares a field-level edge. Lodestar's lineage graph
keeps the edges themselves; what they went through is read from the declaring aspects when a
lineage search asks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mcl_processor.annotations import Edge, entity_type_of
from mcl_processor.lineage import LineageGraph

UPSTREAM_LINEAGE, JOB_IO = "upstreamLineage", "dataJobInputOutput"
AspectReader = Callable[[str, str], Any]  # (urn, aspect name) -> its value, None when absent or not readable


def field_dataset(urn: str) -> str | None:
    """The dataset of a schemaField URN, None for another URN."""
    inner = urn.removeprefix("urn:li:schemaField:(")
    if inner == urn:
        return None
    return inner.rpartition(",")[0] or None


class Through:
    """The node (a query or a data job) data went through on an edge, or None when it went
    straight; nodes `readable` leaves out are never named."""

    def __init__(self, graph: LineageGraph, aspect: AspectReader, readable: Callable[[str], bool]):
        self.graph = graph
        self.aspect = aspect
        self.readable = readable
        self._found: dict[tuple[str, str], str | None] = {}

    def __call__(self, edge: Edge) -> str | None:
        key = (edge.source, edge.destination)
        if key not in self._found:
            node = self._field_edge(edge) if entity_type_of(edge.destination) == "schemaField" \
                else self._dataset_edge(edge)
            self._found[key] = node if node is not None and self.readable(node) else None
        return self._found[key]

    def _dataset_edge(self, edge: Edge) -> str | None:
        if edge.via != UPSTREAM_LINEAGE:
            return None
        for upstream in _records(self.aspect(edge.destination, UPSTREAM_LINEAGE), "upstreams"):
            if upstream.get("dataset") == edge.source and isinstance(upstream.get("query"), str):
                return upstream["query"]
        return None

    def _field_edge(self, edge: Edge) -> str | None:
        dataset = field_dataset(edge.destination)
        if dataset is None:
            return None
        if edge.via == UPSTREAM_LINEAGE:
            record = _declaring(self.aspect(dataset, UPSTREAM_LINEAGE), edge)
            return record.get("query") if record is not None and isinstance(record.get("query"), str) else None
        if edge.via == JOB_IO:
            return next((job for job in self._producers(dataset)
                         if _declaring(self.aspect(job, JOB_IO), edge) is not None), None)
        return None

    def _producers(self, dataset: str) -> Iterator[str]:
        """The data jobs with the dataset among their outputs, in URN order."""
        found = self.graph.query(dataset, "upstream", 1)
        yield from sorted(u for u, (hops, _) in found.nodes.items() if hops == 1 and entity_type_of(u) == "dataJob")


def _records(value: Any, name: str) -> list[dict[str, Any]]:
    items = value.get(name) if isinstance(value, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _declaring(value: Any, edge: Edge) -> dict[str, Any] | None:
    """The fine-grained lineage record of an aspect value that declares a field edge."""
    return next((record for record in _records(value, "fineGrainedLineages")
                 if edge.source in (record.get("upstreams") or ()) and edge.destination in (
                     record.get("downstreams") or ())), None)
