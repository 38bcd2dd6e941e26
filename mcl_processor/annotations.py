"""What each aspect contributes to the read models, derived from its Avro schema's annotations.

Walking an aspect's schema (records, arrays, maps, unions, named references) finds:

* `Searchable` (and `SearchableRef`) fields -> values for the search document (index field name,
  field type, boost, facet), in Lodestar's form (`fieldType`, `boost`, `facet`) or DataHub's
  (`boostScore`, `addToFilters`, DataHub's field types read as Lodestar's, annotations keyed
  by paths into the field such as `"/*"` or `"/tags/*/tag"`);
* `Relationship` fields with `isLineage: true` -> lineage edges between the entity and the URNs
  the field holds. Data flows from source to destination: for "Produces" (or any relationship
  with `isUpstream: false`) the entity is the source, for every other lineage relationship
  ("DownstreamOf", "Consumes") the URN is;
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, NamedTuple

from schemas.field_operations import TRANSFORM, operations_from_json
from schemas.jsonform import PRIMITIVES, full_name
from schemas.registry import EntityRegistry
from schemas.urns import PREFIX

REMOVED_FIELD = "removed"  # the Searchable BOOLEAN that soft-deletes an entity (status.removed)
_FLOWS_OUT = frozenset({"Produces"})  # lineage relationships whose URN is downstream of the entity
_ANNOTATIONS = ("Searchable", "SearchableRef", "Relationship")  # SearchableRef: the referenced URN itself
ENTITY_NAME_ALIAS = "_entityName"  # DataHub's alias of the field that names an entity
# DataHub's search field types read as Lodestar's (TEXT_PARTIAL: names and words found by prefix;
# COUNT: numbers and times, filtered, not found by free text); any other type is a KEYWORD.
_FIELD_TYPES = {"TEXT": "TEXT", "TEXT_PARTIAL": "TEXT_PARTIAL", "WORD_GRAM": "TEXT_PARTIAL", "KEYWORD": "KEYWORD",
                "URN": "URN", "URN_PARTIAL": "URN", "BOOLEAN": "BOOLEAN", "COUNT": "COUNT", "DATETIME": "COUNT",
                "DOUBLE": "COUNT", "MAP": "MAP", "OBJECT": "MAP"}
_MAP_AS_ENTRIES = frozenset({"TEXT", "TEXT_PARTIAL", "KEYWORD", "MAP"})

# ("f", name) field | ("a",) array items | ("m",) map values | ("k",) map keys | ("u", names) union
Step = tuple[Any, ...]


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
    """Compiled paths sharing their prefixes, so a value's nodes are visited once. `collect` runs
    Python source generated from the trie on first use (`_compile`): each step's loop inlined,
    a field of a single value read without a list, the records of a list picked out once for
    the fields read from them."""

    __slots__ = ("children", "leaves", "_collect")

    def __init__(self) -> None:
        self.children: dict[Step, _Trie] = {}
        self.leaves: list[Any] = []
        self._collect: Callable[[Any], list[tuple[Any, list[Any]]]] | None = None

    def add(self, path: tuple[Step, ...], leaf: Any) -> None:
        node = self
        for step in path:
            node = node.children.setdefault(step, _Trie())
        node.leaves.append(leaf)
        self._collect = None

    def collect(self, value: Any) -> list[tuple[Any, list[Any]]]:
        """(leaf, values found at its path) for every leaf with values in `value`, depth first,
        a node's leaves before its children (in the order they were added)."""
        if self._collect is None:
            self._collect = _compile(self)
        return self._collect(value)

    def __getstate__(self) -> tuple[dict[Step, _Trie], list[Any]]:  # the compiled function is made again
        return self.children, self.leaves

    def __setstate__(self, state: tuple[dict[Step, _Trie], list[Any]]) -> None:
        self.children, self.leaves = state
        self._collect = None


def _compile(trie: _Trie) -> Callable[[Any], list[tuple[Any, list[Any]]]]:
    """`trie.collect` as straight-line Python: what `_advance` does at each step, inlined."""
    scope: dict[str, Any] = {}
    lines = ["def collect(v0):", "    out = []"]

    def constant(value: Any) -> str:
        name = f"_c{len(scope)}"
        scope[name] = value
        return name

    def visit(node: _Trie, var: str, single: bool, indent: str) -> None:
        # `var` holds one value (`single`) or a non-empty list of values
        listed = f"[{var}]" if single else var
        lines.extend(f"{indent}out.append(({constant(leaf)}, {listed}))" for leaf in node.leaves)
        records = None  # a list's records, picked out once for the fields of two or more children
        if not single and sum(step[0] == "f" for step in node.children) > 1:
            records = f"r{len(lines)}"
            lines.append(f"{indent}{records} = [i for i in {var} if isinstance(i, dict)]")
        for step, child in node.children.items():
            new = f"v{len(lines)}"
            kind = step[0]
            if single and kind == "f":
                lines.append(f"{indent}{new} = {var}.get({step[1]!r}) if isinstance({var}, dict) else None")
                lines.append(f"{indent}if {new} is not None:")
                visit(child, new, True, indent + "    ")
                continue
            if single and kind == "u":
                lines.append(f"{indent}{new} = next(iter({var}.values())) if isinstance({var}, dict)"
                             f" and len({var}) == 1 and next(iter({var})) in {constant(step[1])} else {var}")
                visit(child, new, True, indent)
                continue
            if kind == "f" and records is not None:
                found = f"[x for i in {records} if (x := i.get({step[1]!r})) is not None]"
            elif kind == "f":
                found = f"[x for i in {listed} if isinstance(i, dict) and (x := i.get({step[1]!r})) is not None]"
            elif kind == "a":
                found = f"[x for i in {listed} if isinstance(i, list) for x in i]"
            elif kind == "m":
                found = f"[x for i in {listed} if isinstance(i, dict) for x in i.values()]"
            elif kind == "k":
                found = f"[x for i in {listed} if isinstance(i, dict) for x in i]"
            else:
                found = (f"[next(iter(i.values())) if isinstance(i, dict) and len(i) == 1 and next(iter(i))"
                         f" in {constant(step[1])} else i for i in {listed}]")
            lines.extend([f"{indent}{new} = {found}", f"{indent}if {new}:"])
            visit(child, new, False, indent + "    ")

    visit(trie, "v0", True, "    ")
    lines.append("    return out")
    exec(compile("\n".join(lines), "<annotation paths>", "exec"), scope)  # noqa: S102  (generated from a schema)
    return scope["collect"]


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

    @cached_property  # asked of every change of every batch
    def traced(self) -> bool:
        """Whether the lineage graph needs this aspect: edges, field edges or the soft-delete flag."""
        return bool(self.lineage or self.fine_grained or self.field_operations
                    or any(s.name == REMOVED_FIELD for s in self.searchable))

    def found(self, value: Any) -> list[tuple[SearchField, list[Any]]]:
        """Each searchable field with values in `value`, and those values (strings, numbers,
        booleans; a MAP field's dicts)."""
        return self._search_paths.collect(value)  # type: ignore[attr-defined]

    def removed(self, value: Any) -> bool | None:
        """The soft-delete flag this aspect sets, or None when it carries none."""
        for spec in self.searchable:
            if spec.name == REMOVED_FIELD:
                return any(found is True for found in _resolve(value, spec.path))
        return None

    def edges(self, urn: str, value: Any) -> list[Edge]:
        out = []
        for spec, found in self._lineage_paths.collect(value):  # type: ignore[attr-defined]
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
    elif kind == "k":
        for item in values:
            if isinstance(item, dict):
                out.extend(item)
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


_Target = tuple[str, tuple[str, ...]]  # (annotation, place in the aspect: field names, "*" for items and values)


@dataclass(slots=True)
class _Override:
    """A path annotation of an enclosing field (with what fields further out say of the same
    place merged over it): merged over what the types below annotate at its place, or applied
    as it is when they annotate nothing there."""

    kind: str
    annotation: Mapping[str, Any]
    path: tuple[Step, ...]
    name: str
    schema: Any
    verbatim: bool = False  # its field name comes from an enclosing field: never renamed after a part
    used: bool = False


class _Walker:
    """Collects the annotations of one aspect schema.

    A field's `Searchable`, `SearchableRef` or `Relationship` annotation is either flat (it
    applies to the field's values, through optional unions and arrays) or, in DataHub's form,
    keyed by paths into the field's value (`"/*"`, `"/tags/*/tag"`, `"/$key"`, `"/time"`), each
    key holding a flat annotation. A path annotation on a field overrides what the types below
    it annotate at the same place (a schema field's `globalTags` names its tags `fieldTags`,
    where `globalTags` itself says `tags`). Annotations of shapes not understood (a path that
    leads nowhere in the schema, a value that is no object) are ignored."""

    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.searchable: list[SearchField] = []
        self.lineage: list[_Lineage] = []
        self.fine_grained: list[tuple[Step, ...]] = []
        self.field_operations: list[tuple[Step, ...]] = []

    def record(self, schema: Mapping[str, Any], namespace: str | None, path: tuple[Step, ...],
               prefix: str | None, stack: tuple[str, ...], fine: bool, where: tuple[str, ...] = (),
               overrides: Mapping[_Target, _Override] | None = None) -> None:
        name = full_name(schema, namespace)
        if name in stack:
            return  # a recursive type: its annotations were collected at the outer level
        overrides = overrides or {}
        ns = name.rpartition(".")[0] or None
        if path and "Aspect" in schema and prefix is None:
            prefix = _singular(next(step[1] for step in path if step[0] == "f"))
        if schema.get("FineGrainedLineage") is True:
            self.fine_grained.append(path)
            fine = True
        if schema.get("FieldOperations") is True:
            self.field_operations.append(path)
        for field in schema.get("fields", ()):
            field_name, field_type = field["name"], field["type"]
            field_path, field_where = (*path, ("f", field_name)), (*where, field_name)
            pending: dict[_Target, _Override] = {}
            for kind in _ANNOTATIONS:
                annotation = field.get(kind)
                if not isinstance(annotation, dict):
                    continue
                flat = {key: value for key, value in annotation.items() if not key.startswith("/")}
                if flat:
                    self._own(kind, flat, (kind, field_where), (*field_path, *self._scalar_steps(field_type, ns)),
                              field_name, field_type, prefix, fine, overrides)
                for key, inner in annotation.items():
                    if not key.startswith("/") or not isinstance(inner, dict):
                        continue
                    segments = tuple(key.strip("/").split("/"))
                    resolved = self._resolve(field_type, ns, segments)
                    if resolved is None:
                        continue
                    steps, last_name, last_type = resolved
                    target = (kind, (*field_where, *segments))
                    verbatim = False
                    outer = overrides.get(target)
                    if outer is not None:  # an enclosing field's path annotation says more of the same place
                        outer.used = True
                        inner = {**inner, **outer.annotation}
                        verbatim = outer.verbatim or "fieldName" in outer.annotation
                    # merged into what the types below annotate there, else applied as it is
                    pending[target] = _Override(kind, inner, (*field_path, *steps), last_name or field_name,
                                                last_type, verbatim)
            below = {**overrides, **pending} if pending else overrides
            self.type(field_type, ns, field_path, prefix, (*stack, name), fine, field_where, below)
            for override in pending.values():
                if not override.used:
                    self._add(override.kind, override.annotation, override.path, override.name, override.schema,
                              prefix, fine, override.verbatim)

    def _own(self, kind: str, annotation: Mapping[str, Any], target: _Target, path: tuple[Step, ...],
             default_name: str, schema: Any, prefix: str | None, fine: bool,
             overrides: Mapping[_Target, _Override]) -> None:
        """A field's own annotation, with what an enclosing field's path annotation says of the
        same place merged over it (its `fieldName` taken as it is, not renamed after the part)."""
        override = overrides.get(target)
        if override is None:
            self._add(kind, annotation, path, default_name, schema, prefix, fine)
            return
        override.used = True
        self._add(kind, {**annotation, **override.annotation}, path, default_name, schema, prefix, fine,
                  verbatim=override.verbatim or "fieldName" in override.annotation)

    def _add(self, kind: str, annotation: Mapping[str, Any], path: tuple[Step, ...], default_name: str,
             schema: Any, prefix: str | None, fine: bool, verbatim: bool = False) -> None:
        """One flat annotation of the values at `path` (of type `schema`)."""
        if kind == "Relationship":
            name = annotation.get("name")
            if annotation.get("isLineage") is True and isinstance(name, str) and prefix is None and not fine:
                flows_out = name in _FLOWS_OUT or annotation.get("isUpstream") is False
                self.lineage.append(_Lineage(path, name, flows_out))
            return
        index_name = annotation.get("fieldName")
        index_name = index_name if isinstance(index_name, str) and index_name else default_name
        if prefix is not None and not verbatim:
            index_name = prefix + index_name[:1].upper() + index_name[1:]
        boost = annotation.get("boost", annotation.get("boostScore", 1.0))
        boost = float(boost) if isinstance(boost, int | float) and not isinstance(boost, bool) else 1.0
        facet = annotation.get("facet") is True or annotation.get("addToFilters") is True
        field_type = self._field_type(annotation, schema, boost, facet)
        if path and path[-1] == ("m",) and field_type in _MAP_AS_ENTRIES and self._value_kind(schema) == "string":
            path, field_type = path[:-1], "MAP"  # DataHub's "/*" on a map of strings: its entries
        self.searchable.append(SearchField(path, index_name, field_type, boost, facet and prefix is None))

    def _field_type(self, annotation: Mapping[str, Any], schema: Any, boost: float, facet: bool) -> str:
        """Lodestar's field type (TEXT, TEXT_PARTIAL, KEYWORD, URN, MAP, BOOLEAN, COUNT) for an
        annotation: DataHub's types read as the nearest of those; a field DataHub names the
        entity by (`fieldNameAliases: [_entityName]`) is a name; a text field DataHub filters on
        (`addToFilters`) that is no name is a keyword, so that it is filtered and counted."""
        declared = annotation.get("fieldType")
        kind = self._value_kind(schema)
        if not isinstance(declared, str):
            declared = {"int": "COUNT", "long": "COUNT", "float": "COUNT", "double": "COUNT", "boolean": "BOOLEAN",
                        "map": "MAP"}.get(kind, "TEXT")
        field_type = _FIELD_TYPES.get(declared, "KEYWORD")
        if field_type in ("TEXT", "KEYWORD") and kind == "map" and declared in ("TEXT", "KEYWORD", "MAP"):
            return "MAP"
        aliases = annotation.get("fieldNameAliases")
        if isinstance(aliases, list) and ENTITY_NAME_ALIAS in aliases and field_type in ("KEYWORD", "TEXT"):
            return "TEXT_PARTIAL"
        if facet and field_type in ("TEXT", "TEXT_PARTIAL") and boost <= 1:
            return "KEYWORD"
        return field_type

    def _value_kind(self, schema: Any) -> str | None:
        """The Avro kind of a field's values (primitive name, record, enum, array, map), through
        optional unions and (for map values) the map itself."""
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            return self._value_kind(branches[0]) if len(branches) == 1 else None
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return schema
            try:
                return self._value_kind(self._named(schema, None))
            except KeyError:
                return None
        if isinstance(schema, dict):
            kind = schema.get("type")
            if kind == "map":
                return "map" if self._value_kind(schema.get("values")) in ("string", None) else None
            if kind == "array":
                return self._value_kind(schema.get("items"))
            return kind if isinstance(kind, str) else self._value_kind(kind)
        return None

    def _resolve(self, schema: Any, namespace: str | None,
                 segments: tuple[str, ...]) -> tuple[tuple[Step, ...], str | None, Any] | None:
        """Steps from a field's value along a DataHub annotation path (`*` an array's items, a
        map's values or a lone scalar itself, `$key` a map's keys, a name a record's field), then to its scalar values;
        the last field name on the way, and the schema reached. None: the path leads nowhere."""
        steps: list[Step] = []
        last_name = None
        for segment in segments:
            schema, namespace, union = self._unwrap(schema, namespace)
            if union is not None:
                steps.append(union)
            if segment in ("*", "$key"):
                kind = schema.get("type") if isinstance(schema, dict) else None
                if segment == "*" and kind == "array":
                    steps.append(("a",))
                    schema = schema["items"]
                elif kind == "map":
                    steps.append(("m",) if segment == "*" else ("k",))
                    schema = schema["values"] if segment == "*" else "string"
                elif segment == "*" and isinstance(schema, str) and schema in PRIMITIVES:
                    pass  # DataHub's "/*" on a single URN or string (a run's `parentTemplate`): the value itself
                else:
                    return None
                continue
            if not (isinstance(schema, dict) and schema.get("type") in ("record", "error")):
                return None
            found = next((f for f in schema.get("fields", ()) if f["name"] == segment), None)
            if found is None:
                return None
            namespace = full_name(schema, namespace).rpartition(".")[0] or None
            steps.append(("f", segment))
            schema, last_name = found["type"], segment
        steps.extend(self._scalar_steps(schema, namespace))
        return tuple(steps), last_name, schema

    def _unwrap(self, schema: Any, namespace: str | None) -> tuple[Any, str | None, Step | None]:
        """A schema without its optional-union wrapper and with named references resolved; a
        union of several branches resolves to its one record branch (and the step into it)."""
        union = None
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            if len(branches) > 1:
                union = ("u", self._branch_names(branches, namespace))
                records = [r for b in branches if isinstance(r := self._deref(b, namespace), dict)
                           and r.get("type") in ("record", "error")]
                return (records[0] if len(records) == 1 else None), namespace, union
            schema = branches[0] if branches else None
        return self._deref(schema, namespace), namespace, union

    def _deref(self, schema: Any, namespace: str | None) -> Any:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            try:
                return self._named(schema, namespace)
            except KeyError:
                return None
        return schema

    def type(self, schema: Any, namespace: str | None, path: tuple[Step, ...], prefix: str | None,
             stack: tuple[str, ...], fine: bool, where: tuple[str, ...] = (),
             overrides: Mapping[_Target, _Override] | None = None) -> None:
        if isinstance(schema, str):
            if schema not in PRIMITIVES:
                resolved = self._named(schema, namespace)
                if resolved.get("type") in ("record", "error"):
                    self.record(resolved, namespace, path, prefix, stack, fine, where, overrides)
        elif isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            step: tuple[Step, ...] = () if len(branches) == 1 else (("u", self._branch_names(branches, namespace)),)
            for branch in branches:
                self.type(branch, namespace, (*path, *step), prefix, stack, fine, where, overrides)
        elif schema["type"] in ("record", "error"):
            self.record(schema, namespace, path, prefix, stack, fine, where, overrides)
        elif schema["type"] == "array":
            self.type(schema["items"], namespace, (*path, ("a",)), prefix, stack, fine, (*where, "*"), overrides)
        elif schema["type"] == "map":
            self.type(schema["values"], namespace, (*path, ("m",)), prefix, stack, fine, (*where, "*"), overrides)

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
