"""Timeseries points on OpenSearch: one index per aspect, `<prefix>_timeseries_<aspect>`.

A staging model NAME is the index family `<prefix>_timeseries-NAME_<aspect>`; the switch makes
the live names aliases of its indices in one atomic alias change (IndexFamily.adopt).

A point's document id is a hash of (urn, aspect, timestampMillis, partition, messageId), so
appending it again replaces it. Appends to the live indices refresh the indices they touched
before returning (`refresh_interval` is off), so a point is readable once the batch that carried
it is applied; a staging model is refreshed only before its own queries and at the switch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import Any

import orjson
from opensearchpy import OpenSearch

from mcl_processor.changes import TimeseriesDeletion, TimeseriesPoint
from mcl_processor.opensearch.indices import DEFAULT_PREFIX, MISSING_OK, IndexFamily, bulk, search_page
from mcl_processor.timeseries import TimeseriesStore

MODEL = "timeseries"
BODY = {"mappings": {"dynamic": "strict", "properties": {
    "urn": {"type": "keyword"},
    "timestampMillis": {"type": "long"},
    "partition": {"type": "keyword"},
    "messageId": {"type": "keyword"},
    "value": {"type": "object", "enabled": False},
}}}


def point_id(point: TimeseriesPoint) -> str:
    key = orjson.dumps([point.urn, point.aspect, point.timestamp_ms, point.partition, point.message_id])
    return hashlib.sha256(key).hexdigest()


class OpenSearchTimeseriesStore(TimeseriesStore):
    """Timeseries points in the OpenSearch indices `<prefix>_timeseries_<aspect>`."""

    def __init__(self, client: OpenSearch, prefix: str = DEFAULT_PREFIX, shards: int = 1, replicas: int = 0,
                 indices: IndexFamily | None = None):
        self.client = client
        self.indices = indices or IndexFamily(client, prefix, MODEL, lambda _: BODY, shards, replicas)

    def append(self, points: Sequence[TimeseriesPoint]) -> None:
        if not points:
            return
        names = {aspect: self.indices.name(aspect) for aspect in {p.aspect for p in points}}
        self.indices.ensure(names)
        bulk(self.client, [({"index": {"_index": names[p.aspect], "_id": point_id(p)}},
                            {"urn": p.urn, "timestampMillis": p.timestamp_ms, "partition": p.partition,
                             "messageId": p.message_id, "value": orjson.Fragment(p.value_json)}) for p in points])
        self.indices.written(names.values())

    def remove_entities(self, urns: Sequence[str]) -> None:
        if urns:
            self.indices.delete_where({"terms": {"urn": list(urns)}})

    def remove_points(self, deletions: Sequence[TimeseriesDeletion]) -> None:
        by_aspect: dict[str, list[TimeseriesDeletion]] = {}
        for deletion in deletions:
            if self.indices.valid(deletion.aspect):
                by_aspect.setdefault(deletion.aspect, []).append(deletion)
        for aspect, some in by_aspect.items():
            windows = [{"bool": {"filter": _filters(d.urn, d.start_ms, d.end_ms)}} for d in some]
            query = {"bool": {"should": windows, "minimum_should_match": 1}}
            self.client.delete_by_query(index=self.indices.name(aspect), body={"query": query},
                                        params={**MISSING_OK, "refresh": "true", "conflicts": "proceed"})

    def count(self, urn: str, aspect: str | None = None, start: int | None = None, end: int | None = None) -> int:
        if aspect is not None and not self.indices.valid(aspect):
            return 0
        targets = self.indices.name(aspect) if aspect is not None else self.indices.pattern
        self.indices.readable()
        found = self.client.count(index=targets, body={"query": {"bool": {"filter": _filters(urn, start, end)}}},
                                  params=MISSING_OK)
        return int(found["count"])

    def query(self, urn: str, aspect: str, start: int | None = None, end: int | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        if not self.indices.valid(aspect):
            return []
        self.indices.readable()
        body = {"query": {"bool": {"filter": _filters(urn, start, end)}}, "_source": ["value"],
                "track_total_hits": False,
                "sort": [{"timestampMillis": "asc"}, {"partition": "asc"}, {"messageId": "asc"}]}
        _, hits = search_page(self.client, self.indices.name(aspect), body, 0, max(0, limit))
        return [hit["_source"]["value"] for hit in hits]

    def clear(self) -> None:
        self.indices.delete_where({"match_all": {}})

    def staging(self, name: str, fresh: bool) -> OpenSearchTimeseriesStore:
        if fresh and self.indices.adopted(name):
            raise ValueError(f"{name!r} names the live timeseries indices now: choose another name")
        store = OpenSearchTimeseriesStore(self.client, indices=self.indices.staging(name))
        if fresh:
            store.drop()
        return store

    def switched(self, name: str) -> bool:
        return not self.indices.building(name)

    def building(self, name: str) -> bool:
        return self.indices.building(name)

    def switch_to(self, name: str, aspects: Collection[str] | None = None) -> None:
        self.indices.adopt(self.indices.staging(name), aspects)

    def drop(self) -> None:
        """Delete this prefix's timeseries indices."""
        self.indices.drop()


def _filters(urn: str, start: int | None, end: int | None) -> list[dict[str, Any]]:
    """The points of an entity with start <= timestampMillis <= end (a bound None is open)."""
    bounds = {key: bound for key, bound in (("gte", start), ("lte", end)) if bound is not None}
    filters: list[dict[str, Any]] = [{"term": {"urn": urn}}]
    if bounds:
        filters.append({"range": {"timestampMillis": bounds}})
    return filters
