"""What each aspect contributes to the read models, derived from its Avro schema's annotations.

Walking an aspect's schema (records, arrays, maps, unions, named references) finds:

* `Searchable` fields -> values for the search document (index field name, field type, boost, facet);
* `Relationship` fields with `isLineage: true` -> lineage edges between the entity and the URNs
  the field holds. Data flows from source to destination: for "Produces" the entity is the
  source, for every other lineage relationship ("DownstreamOf", "Consumes") the URN is;
* records annotated `"FineGrainedLineage": true` -> field-level edges, every URN of
  `upstreams` to every URN of `downstreams`, typed by `transformOperation`;
* records annotated `"FieldOperations": true` (a run's field operations) -> field-level edges
  from each source field to each destination field it reaches, typed by the transforms on the
  way (`parse,concat,create`; `IDENTITY` when none).

An aspect record embedded in another aspect (the `globalTags` of a schema field) describes
the part it sits in, not the entity: its relationships are skipped and its searchable
fields are renamed after the enclosing field (`fields[].globalTags.tags` -> `fieldTags`).
Nothing here knows a particular aspect, so annotated aspects need no processor code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from schemas.field_operations import TRANSFORM, operations_from_json
from schemas.jsonform import PRIMITIVES, full_name
from schemas.registry import EntityRegistry
from schemas.urns import PREFIX

REMOVED_FIELD = "removed"  # the Searchable BOOLEAN that soft-deletes an entity (status.removed)
_FLOWS_OUT = frozenset({"Produces"})  # lineage relationships whose URN is downstream of the entity

Step = tuple[Any, ...]  # ("f", name) field | ("a",) array items | ("m",) map values | ("u", names) union


class Edge(NamedTuple):
    """A lineage edge: data flows from source to destination; `via` is the declaring aspect."""

    source: str
    destination: str
    type: str
    via: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "destination": self.destination, "type": self.type, "via": self.via}


@dataclass(frozen=True, slots=True)
class SearchField:
    """A `Searchable` schema field: where it is in the aspect and how it is indexed."""

    path: tuple[Step, ...]
    name: str  # index field name, e.g. "name", "tags", "customProperties"
    field_type: str  # TEXT | TEXT_PARTIAL | KEYWORD | URN | MAP | BOOLEAN | COUNT
    boost: float
    facet: bool


@dataclass(frozen=True, slots=True)
class _Lineage:
    path: tuple[Step, ...]
    name: str
    flows_out: bool


class _Trie:
    """Compiled paths sharing their prefixes, so a value's nodes are visited once."""

    __slots__ = ("children", "leaves")

    def __init__(self) -> None:
        self.children: dict[Step, _Trie] = {}
        self.leaves: list[Any] = []

    def add(self, path: tuple[Step, ...], leaf: Any) -> None:
        node = self
        for step in path:
            node = node.children.setdefault(step, _Trie())
        node.leaves.append(leaf)

    def collect(self, values: list[Any], out: list[tuple[Any, list[Any]]]) -> list[tuple[Any, list[Any]]]:
        """(leaf, values found at its path) for every leaf with values."""
        for leaf in self.leaves:
            out.append((leaf, values))
        for step, child in self.children.items():
            found = _advance(step, values)
            if found:
                child.collect(found, out)
        return out


@dataclass(frozen=True)
class AspectAnnotations:
    """The read-model contributions of one aspect, compiled from its schema."""

    aspect: str
    searchable: tuple[SearchField, ...]
    lineage: tuple[_Lineage, ...]
    fine_grained: tuple[tuple[Step, ...], ...]
    field_operations: tuple[tuple[Step, ...], ...] = ()

    def __post_init__(self) -> None:
        for name, specs in (("_search_paths", self.searchable), ("_lineage_paths", self.lineage)):
            trie = _Trie()
            for spec in specs:
                trie.add(spec.path, spec)
            object.__setattr__(self, name, trie)

    @property
    def searched(self) -> bool:
        return bool(self.searchable)

    @property
    def traced(self) -> bool:
        """Whether the lineage graph needs this aspect: edges, field edges or the soft-delete flag."""
        return bool(self.lineage or self.fine_grained or self.field_operations
                    or any(s.name == REMOVED_FIELD for s in self.searchable))

    def found(self, value: Any) -> list[tuple[SearchField, list[Any]]]:
        """Each searchable field with values in `value`, and those values (strings, numbers,
        booleans; a MAP field's dicts)."""
        return self._search_paths.collect([value], [])  # type: ignore[attr-defined]

    def removed(self, value: Any) -> bool | None:
        """The soft-delete flag this aspect sets, or None when it carries none."""
        for spec in self.searchable:
            if spec.name == REMOVED_FIELD:
                return any(found is True for found in _resolve(value, spec.path))
        return None

    def edges(self, urn: str, value: Any) -> list[Edge]:
        out = []
        for spec, found in self._lineage_paths.collect([value], []):  # type: ignore[attr-defined]
            for other in found:
                if isinstance(other, str) and other != urn:
                    source, destination = (urn, other) if spec.flows_out else (other, urn)
                    out.append(Edge(source, destination, spec.name, self.aspect))
        return out

    def field_edges(self, value: Any) -> list[Edge]:
        out = []
        for path in self.fine_grained:
            for record in _resolve(value, path):
                if not isinstance(record, dict):
                    continue
                kind = record.get("transformOperation") or "DownstreamOf"
                for upstream in record.get("upstreams") or ():
                    out.extend(Edge(upstream, downstream, kind, self.aspect)
                               for downstream in record.get("downstreams") or () if downstream != upstream)
        for path in self.field_operations:
            for record in _resolve(value, path):
                if isinstance(record, dict):
                    out.extend(Edge(*edge, self.aspect) for edge in operation_field_edges(record))
        return out


def schema_field_urn(dataset: str, field: str) -> str:
    return f"urn:li:schemaField:({dataset},{field})"


def operation_field_edges(value: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(source field URN, destination field URN, transforms) for each source field of a run's
    field operations and each destination field it reaches."""
    from mcl_processor.runs.field_graph import FieldGraph  # here: mcl_processor.runs imports this module

    graph = FieldGraph(operations_from_json(value))
    out = []
    for source, field in sorted(graph.source_fields):
        path = graph.outgoing(source, field)
        for destination, destination_field in sorted(path.ends):
            transforms = [op.name for op in graph.incoming(destination, destination_field).operations
                          if op.type == TRANSFORM and op in path.operations]
            out.append((schema_field_urn(source, field), schema_field_urn(destination, destination_field),
                        ",".join(transforms) or "IDENTITY"))
    return out


def simple_id(urn: str) -> str | None:
    """The id of a one-part URN (`urn:li:tag:pii` -> `pii`), else None."""
    _, sep, ident = urn.removeprefix(PREFIX).partition(":")
    return ident if sep and ident and urn.startswith(PREFIX) and not ident.startswith("(") else None


def entity_type_of(urn: str) -> str:
    return urn.removeprefix("urn:li:").partition(":")[0]


def _advance(step: Step, values: list[Any]) -> list[Any]:
    """The values one step further: a field of records, array items, map values, or union
    branches without their {"type name": value} wrapper."""
    kind = step[0]
    out: list[Any] = []
    if kind == "f":
        name = step[1]
        for item in values:
            if isinstance(item, dict):
                found = item.get(name)
                if found is not None:
                    out.append(found)
    elif kind == "a":
        for item in values:
            if isinstance(item, list):
                out.extend(item)
    elif kind == "m":
        for item in values:
            if isinstance(item, dict):
                out.extend(item.values())
    else:
        for item in values:
            if isinstance(item, dict) and len(item) == 1 and next(iter(item)) in step[1]:
                out.append(next(iter(item.values())))
            else:
                out.append(item)
    return out


def _resolve(value: Any, path: tuple[Step, ...]) -> list[Any]:
    """Every value at a compiled path."""
    values = [value]
    for step in path:
        values = _advance(step, values)
    return values


class _Walker:
    """Collects the annotations of one aspect schema."""

    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.searchable: list[SearchField] = []
        self.lineage: list[_Lineage] = []
        self.fine_grained: list[tuple[Step, ...]] = []
        self.field_operations: list[tuple[Step, ...]] = []

    def record(self, schema: Mapping[str, Any], namespace: str | None, path: tuple[Step, ...],
               prefix: str | None, stack: tuple[str, ...], fine: bool) -> None:
        name = full_name(schema, namespace)
        if name in stack:
            return  # a recursive type: its annotations were collected at the outer level
        ns = name.rpartition(".")[0] or None
        if path and "Aspect" in schema and prefix is None:
            prefix = _singular(next(step[1] for step in path if step[0] == "f"))
        if schema.get("FineGrainedLineage") is True:
            self.fine_grained.append(path)
            fine = True
        if schema.get("FieldOperations") is True:
            self.field_operations.append(path)
        for field in schema.get("fields", ()):
            field_path = (*path, ("f", field["name"]), *self._scalar_steps(field["type"], ns))
            searchable = field.get("Searchable")
            if searchable:
                index_name = searchable.get("fieldName", field["name"])
                if prefix is not None:
                    index_name = prefix + index_name[:1].upper() + index_name[1:]
                self.searchable.append(SearchField(
                    field_path, index_name, searchable.get("fieldType", "KEYWORD"),
                    float(searchable.get("boost", 1.0)), bool(searchable.get("facet")) and prefix is None))
            relationship = field.get("Relationship")
            if relationship and relationship.get("isLineage") and prefix is None and not fine:
                self.lineage.append(_Lineage(field_path, relationship["name"], relationship["name"] in _FLOWS_OUT))
            self.type(field["type"], ns, (*path, ("f", field["name"])), prefix, (*stack, name), fine)

    def type(self, schema: Any, namespace: str | None, path: tuple[Step, ...], prefix: str | None,
             stack: tuple[str, ...], fine: bool) -> None:
        if isinstance(schema, str):
            if schema not in PRIMITIVES:
                resolved = self._named(schema, namespace)
                if resolved.get("type") in ("record", "error"):
                    self.record(resolved, namespace, path, prefix, stack, fine)
        elif isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            step: tuple[Step, ...] = () if len(branches) == 1 else (("u", self._branch_names(branches, namespace)),)
            for branch in branches:
                self.type(branch, namespace, (*path, *step), prefix, stack, fine)
        elif schema["type"] in ("record", "error"):
            self.record(schema, namespace, path, prefix, stack, fine)
        elif schema["type"] == "array":
            self.type(schema["items"], namespace, (*path, ("a",)), prefix, stack, fine)
        elif schema["type"] == "map":
            self.type(schema["values"], namespace, (*path, ("m",)), prefix, stack, fine)

    def _scalar_steps(self, schema: Any, namespace: str | None) -> tuple[Step, ...]:
        """Steps from an annotated field to its scalar values (through optional unions and arrays)."""
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            if len(branches) == 1:
                return self._scalar_steps(branches[0], namespace)
            return (("u", self._branch_names(branches, namespace)),)
        if isinstance(schema, dict) and schema.get("type") == "array":
            return (("a",), *self._scalar_steps(schema["items"], namespace))
        return ()

    def _named(self, name: str, namespace: str | None) -> Mapping[str, Any]:
        if "." not in name and namespace and f"{namespace}.{name}" in self.named:
            name = f"{namespace}.{name}"
        return self.named[name]

    def _branch_names(self, branches: list[Any], namespace: str | None) -> frozenset[str]:
        names = set()
        for branch in branches:
            if isinstance(branch, str):
                qualified = branch if branch in PRIMITIVES else full_name(self._named(branch, namespace), None)
            elif branch.get("type") in ("record", "error", "enum", "fixed"):
                qualified = full_name(branch, namespace)
            else:
                qualified = branch["type"]
            names.add(qualified)
            names.add(qualified.replace("com.linkedin.", "com.linkedin.pegasus2avro."))
        return frozenset(names)


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else name


def compile_aspect(registry: EntityRegistry, aspect: str) -> AspectAnnotations:
    spec = registry.aspects[aspect]
    walker = _Walker(registry.named_types)
    walker.record(spec.schema, None, (), None, (), False)
    return AspectAnnotations(aspect, tuple(walker.searchable), tuple(walker.lineage), tuple(walker.fine_grained),
                             tuple(walker.field_operations))


class Annotations:
    """The compiled annotations of every aspect of a registry."""

    def __init__(self, registry: EntityRegistry):
        self.registry = registry
        self.by_aspect = {name: compile_aspect(registry, name) for name in registry.aspects}
        self.key_aspects = frozenset(e.key_aspect for e in registry.entities.values())

    def __getitem__(self, aspect: str) -> AspectAnnotations:
        return self.by_aspect[aspect]

    def searched(self, aspect: str) -> bool:
        """Whether the search index keeps this aspect (key aspects always: they make the document)."""
        return aspect in self.key_aspects or self.by_aspect[aspect].searched

    def traced(self, aspect: str) -> bool:
        return self.by_aspect[aspect].traced


@cache
def annotations_of(registry: EntityRegistry) -> Annotations:
    return Annotations(registry)
