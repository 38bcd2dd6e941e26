"""Upstream tags: each field's search document knows the tags of the fields it is derived from.

A field (schemaField) is derived from the fields its incoming field edges come from (fine-grained
lineage, a run's field operations), transitively up to `FIELD_REACH` hops; a soft-deleted field
breaks the chain. Its upstream tags are the tags of those fields, but itself: what `tags:`
finds on a field (its globalTags, USER and SYSTEM tags). Search finds a field by them as
`upstreamTags:pii` (SYSTEM scope), so "every field derived from a PII field" is one query.

They are derived from the read models' state, not from the changes: after a batch is applied,
the fields whose upstream tags it may have changed are derived again and written where they
differ, so replays, duplicates and any order give the same result, and a restore re-derives
every field it touches. A batch may change them by

* a field's tags or soft-delete flag (or the field deleted): the fields downstream of it;
* a field edge added or removed (`LineageGraph.apply` says whose): its destination and the
  fields downstream of it;
* a field deleted: its document goes, so it is derived again too (still in lineage, it keeps
  a document of its upstream tags, like any field known only from lineage).

Changes that touch neither tags of a field nor field edges cost nothing here.

`lodestar check` derives the upstream tags of every field that holds some or is downstream of a
tagged field and reports where a document differs (`survey`); `restore-indices` writes them
(`rederive`), which also repairs a part a crash left stale on the distributed models (there, a
batch whose field edges were written before the process died is derived again when replayed,
but the destinations of edges it removed are known only to the first attempt).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache

from mcl_processor.annotations import REMOVED_FIELD, Annotations, entity_type_of
from mcl_processor.changes import ChangeBatch
from mcl_processor.divergence import Divergence
from mcl_processor.lineage import LineageGraph
from mcl_processor.search import TAG_FIELDS, SearchIndex
from mcl_processor.search.document import UPSTREAM_TAGS

FIELD = "schemaField"
PAGE = 1000


@cache
def tag_aspects(annotations: Annotations) -> frozenset[str]:
    """The aspects of a field that carry its tags or its soft-delete flag."""
    entity = annotations.registry.entities.get(FIELD)
    return frozenset(aspect for aspect in (entity.aspects if entity else ())
                     if any(s.name in TAG_FIELDS or s.name == REMOVED_FIELD for s in annotations[aspect].searchable))


def refresh(search: SearchIndex, lineage: LineageGraph, batch: ChangeBatch, moved: Collection[str]) -> None:
    """Derive again the upstream tags `batch` may have changed, once both models applied it;
    `moved`: the fields whose incoming field edges it changed (`LineageGraph.apply`)."""
    tagged = tag_aspects(search.annotations)
    deleted = {urn for urn in batch.resets if entity_type_of(urn) == FIELD}
    sources = {c.urn for c in batch.changes if c.aspect in tagged and c.entity_type == FIELD} | deleted
    roots = set(moved) | deleted
    if not (roots or sources):
        return
    affected = roots | lineage.fields_reached(sources | roots, "downstream")
    search.set_upstream_tags(derive(search, lineage, affected))


def derive(search: SearchIndex, lineage: LineageGraph, fields: Collection[str]) -> dict[str, set[str]]:
    """The upstream tags of these fields, from the models' current state: the tagged fields
    among all their upstream fields (one walk), then, from each, which of them it reaches."""
    out: dict[str, set[str]] = {urn: set() for urn in fields}
    for source, tags in search.field_tags(lineage.fields_reached(fields, "upstream")).items():
        for urn in lineage.fields_reached([source], "downstream") - {source}:
            if urn in out:
                out[urn] |= tags
    return out


def survey(search: SearchIndex, lineage: LineageGraph) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """For every field that holds upstream tags or is downstream of a tagged field: what its
    upstream tags are (derived now), and what its document holds."""
    fields = _found(search, "upstreamTags:*") | lineage.fields_reached(_found(search, "tags:*"), "downstream")
    return derive(search, lineage, fields), search.field_tags(fields, upstream=True)


def compare(search: SearchIndex, lineage: LineageGraph) -> list[Divergence]:
    """The fields whose documents hold other upstream tags than the models give."""
    expected, held = survey(search, lineage)
    out = []
    for urn in sorted(expected):
        want, have = expected[urn], held.get(urn, set())
        if want != have:
            kind = "missing" if not have else "extra" if not want else "content"
            out.append(Divergence("search", kind, urn, UPSTREAM_TAGS,
                                  f"holds upstream tags {sorted(have)}, lineage gives {sorted(want)}"))
    return out


def rederive(search: SearchIndex, lineage: LineageGraph) -> int:
    """Write the upstream tags of every field whose document differs (see `survey`); how many."""
    expected, held = survey(search, lineage)
    stale = {urn: tags for urn, tags in expected.items() if tags != held.get(urn, set())}
    if stale:
        search.set_upstream_tags(stale)
    return len(stale)


def _found(search: SearchIndex, query: str) -> set[str]:
    """Every field a filter-only query finds, soft-deleted ones too."""
    found: set[str] = set()
    start = 0
    while True:
        page = search.query(query, types=[FIELD], start=start, count=PAGE, include_removed=True, sort="urn")
        found.update(hit.urn for hit in page.hits)
        start += PAGE
        if not page.hits or start >= page.total:
            return found
