"""DataHub's relationships, read from the `Relationship` annotations of the aspect schemas, as
Lodestar answers them (`GET /openapi/relationships/v1/`, `POST /entities?action=deleteReferences`).

A relationship goes from the entity whose aspect holds a URN to that URN: a dataset whose
`globalTags` name `urn:li:tag:pii` is `TaggedWith` it (OUTGOING from the dataset, INCOMING to
the tag). Answers come from:

* outgoing: the entity's stored aspects, read through the annotated paths (exact, always);
* incoming, lineage relationships (`isLineage`: DownstreamOf, Consumes, Produces, ...): the
  lineage graph's edges one hop from the entity (soft-deleted entities are left out, as in
  every lineage walk);
* incoming, other relationships whose field is also `Searchable` as a filterable field
  (TaggedWith -> `tags`, OwnedBy -> `owners`, IsPartOf -> `container`, ...): the search index
  finds the candidates (`<field>:"<urn>"`), and each candidate's stored aspects confirm it.

An incoming relationship with neither (no lineage edge, no searchable field: `IsMemberOfGroup`,
`ForeignKeyTo`, ...) cannot be answered without scanning every aspect: `incoming_unanswerable`
names them, and the route refuses them rather than answer an empty list that looks complete.

The annotation walk is the read models' own (`mcl_processor.annotations`), so a path
annotation such as `"/tags/*/tag"` and the renaming of a nested aspect's fields read the same
here as they do for the search index.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcl_processor.annotations import _FLOWS_OUT, Step, _resolve, _Walker  # the read models' own walk
from mcl_processor.search import SCHEMA_FIELDS, TAG_FIELDS
from mcl_processor.search.document import TAGS_KEY
from schemas.registry import EntityRegistry

# Searchable field types whose values the search index keeps as exact filter terms (`key:value`).
_FILTERABLE = frozenset({"URN", "KEYWORD", "BOOLEAN", "COUNT"})


@dataclass(frozen=True)
class RelationshipField:
    """One annotated place of an aspect that holds URNs of one relationship type."""

    aspect: str
    name: str  # the relationship type, e.g. "TaggedWith"
    path: tuple[Step, ...]
    lineage: bool  # an edge of the lineage graph
    flows_out: bool  # its lineage edge goes from the entity to the URN (Produces), else from the URN
    search_key: str | None  # the search filter key holding the same URNs, None when there is none
    targets: tuple[str, ...] = ()  # the entity types its URNs may name (none: any)

    def aims_at(self, entity_type: str) -> bool:
        return not self.targets or entity_type in self.targets

    def urns(self, value: Any) -> list[str]:
        """The URNs this place holds in an aspect value."""
        return [found for found in _resolve(value, self.path) if isinstance(found, str)]


class _RelationshipWalker(_Walker):
    """The read models' annotation walk, keeping every relationship (named), not only lineage."""

    def __init__(self, named: Mapping[str, Any]):
        super().__init__(named)
        self.relationships: list[tuple[str, tuple[Step, ...], bool, bool, tuple[str, ...]]] = []

    def _add(self, kind: str, annotation: Mapping[str, Any], path: tuple[Step, ...], default_name: str,
             schema: Any, prefix: str | None, fine: bool, verbatim: bool = False) -> None:
        if kind != "Relationship":
            super()._add(kind, annotation, path, default_name, schema, prefix, fine, verbatim)
            return
        name = annotation.get("name")
        if isinstance(name, str) and name and not fine:
            lineage = annotation.get("isLineage") is True and prefix is None
            flows_out = name in _FLOWS_OUT or annotation.get("isUpstream") is False
            targets = annotation.get("entityTypes")
            targets = tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else ()
            self.relationships.append((name, path, lineage, flows_out, targets))


def _search_key(walker: _Walker, path: tuple[Step, ...]) -> str | None:
    for spec in walker.searchable:
        if spec.path != path or spec.field_type == "MAP" or spec.name in SCHEMA_FIELDS:
            continue
        if spec.field_type in _FILTERABLE or spec.boost > 1:  # keywords and URNs; names (boosted text)
            return TAGS_KEY if spec.name in TAG_FIELDS else spec.name.lower()
    return None


class Relationships:
    """Every aspect's relationship fields, compiled once per registry."""

    def __init__(self, registry: EntityRegistry):
        self.registry = registry
        self.by_aspect: dict[str, tuple[RelationshipField, ...]] = {}
        by_name: dict[str, list[RelationshipField]] = defaultdict(list)
        for aspect, spec in registry.aspects.items():
            walker = _RelationshipWalker(registry.named_types)
            walker.record(spec.schema, None, (), None, (), False)
            fields = tuple(RelationshipField(aspect, name, path, lineage, flows_out, _search_key(walker, path), targets)
                           for name, path, lineage, flows_out, targets in walker.relationships
                           if not any(path[:len(f)] == f for f in walker.fine_grained))  # field edges, not the entity's
            if fields:
                self.by_aspect[aspect] = fields
                for field in fields:
                    by_name[field.name].append(field)
        self.by_name = dict(by_name)

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def outgoing(self, aspects: Iterable[tuple[str, Any]], types: Sequence[str] | None = None
                 ) -> list[tuple[str, str, str]]:
        """(relationship type, URN, aspect) of every relationship the aspect values hold, of
        `types` only when given, without repeats."""
        wanted = None if types is None else frozenset(types)
        seen: dict[tuple[str, str, str], None] = {}
        for aspect, value in aspects:
            for field in self.by_aspect.get(aspect, ()):
                if wanted is None or field.name in wanted:
                    for urn in field.urns(value):
                        seen.setdefault((field.name, urn, aspect))
        return list(seen)

    def _aiming(self, types: Iterable[str], entity_type: str) -> Iterator[RelationshipField]:
        for name in types:
            yield from (f for f in self.by_name.get(name, ()) if f.aims_at(entity_type))

    def incoming_unanswerable(self, types: Iterable[str], entity_type: str) -> list[str]:
        """The relationship types some aspect may hold toward an entity of this type in a place
        neither the lineage graph nor the search index keeps."""
        return sorted({f.name for f in self._aiming(types, entity_type) if not f.lineage and f.search_key is None})

    def search_keys(self, types: Iterable[str], entity_type: str) -> dict[str, set[str]]:
        """Search filter key -> the non-lineage relationship types toward this entity type whose URNs it holds."""
        keys: dict[str, set[str]] = defaultdict(set)
        for field in self._aiming(types, entity_type):
            if not field.lineage and field.search_key is not None:
                keys[field.search_key].add(field.name)
        return dict(keys)

    def lineage_names(self, types: Iterable[str], entity_type: str) -> set[str]:
        return {f.name for f in self._aiming(types, entity_type) if f.lineage}

    def flows_out(self, aspect: str, name: str) -> bool:
        return any(f.flows_out for f in self.by_aspect.get(aspect, ()) if f.name == name)


@cache
def relationships_of(registry: EntityRegistry) -> Relationships:
    return Relationships(registry)


def without_references(value: Any, path: tuple[Step, ...], urn: str) -> Any:
    """A copy of `value` without its references to `urn` at `path`: the items of the innermost
    array on the path that lead to it, or, with no array on the path, the field that holds it."""
    arrays = [i for i, step in enumerate(path) if step[0] == "a"]
    fields = [i for i, step in enumerate(path) if step[0] == "f"]
    cut = arrays[-1] if arrays else fields[-1] if fields else -1

    def leads(node: Any, rest: tuple[Step, ...]) -> bool:
        return urn in _resolve(node, rest)

    def walk(node: Any, i: int) -> Any:
        if i >= len(path):
            return node
        step = path[i]
        if step[0] == "f" and isinstance(node, dict) and step[1] in node:
            if i == cut:
                return {k: v for k, v in node.items() if k != step[1] or not leads(v, path[i + 1:])}
            return {**node, step[1]: walk(node[step[1]], i + 1)}
        if step[0] == "a" and isinstance(node, list):
            if i == cut:
                return [item for item in node if not leads(item, path[i + 1:])]
            return [walk(item, i + 1) for item in node]
        if step[0] == "m" and isinstance(node, dict):
            return {k: walk(v, i + 1) for k, v in node.items()}
        if step[0] == "u" and isinstance(node, dict) and len(node) == 1 and next(iter(node)) in step[1]:
            key = next(iter(node))
            return {key: walk(node[key], i + 1)}
        if step[0] == "u":
            return walk(node, i + 1)
        return node

    return walk(value, 0)
