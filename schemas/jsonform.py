"""Validation of aspect values in their JSON form against Avro schemas.

A string field annotated `"Urn": [entity types]` must hold a URN of one of them (`[]`: of
any entity type).

The JSON form is DataHub's: optional fields (unions with null) are bare values or
absent; other unions are objects keyed by the branch's full type name
(`{"com.linkedin.schema.StringType": {}}`); bytes are strings. Unknown fields are
rejected so that typos never vanish silently.

`compile_validator` turns a schema into nested closures once, so validating a value
costs one call per JSON node. A failure raises `AspectValueError` naming the path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schemas.urns import Urn, UrnError

Check = Callable[[Any], None]
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "string", "bytes"}
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


class AspectValueError(ValueError):
    """A JSON value that does not match its Avro schema; `path` names the field.

    Checkers raise it with the innermost path segment only; each enclosing record, array
    or map adds its segment on the way out, so a valid value never builds a path string."""

    def __init__(self, problem: str, segment: str | None = None):
        self.problem = problem
        self.segments: list[str] = [] if segment is None else [segment]
        super().__init__(problem)

    def within(self, segment: str) -> AspectValueError:
        self.segments.append(segment)
        return self

    @property
    def path(self) -> str:
        return "".join(
            seg if seg.startswith("[") or i == 0 else f".{seg}"
            for i, seg in enumerate(reversed(self.segments))
        )

    def __str__(self) -> str:
        return f"field '{self.path}': {self.problem}" if self.segments else self.problem


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string" if len(value) > 40 else f"the string {value!r}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def full_name(schema: Mapping[str, Any], namespace: str | None) -> str:
    name = schema["name"]
    if "." in name:
        return name
    ns = schema.get("namespace", namespace)
    return f"{ns}.{name}" if ns else name


class _Compiler:
    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.cache: dict[str, Check] = {}

    def compile(self, schema: Any, namespace: str | None, urn_types: list[str] | None = None) -> Check:
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return self._primitive(schema, urn_types)
            return self._named(schema if "." in schema or not namespace else self._qualify(schema, namespace))
        if isinstance(schema, list):
            return self._union(schema, namespace, urn_types)
        kind = schema["type"]
        if kind in ("record", "error", "enum", "fixed"):
            name = full_name(schema, namespace)
            if name not in self.cache:
                self._define(name, schema, namespace)
            return self._named(name)
        if kind == "array":
            return self._array(schema, namespace, urn_types)
        if kind == "map":
            return self._map(schema, namespace)
        return self.compile(kind, namespace, urn_types)  # {"type": "string", "logicalType": ...}

    def _qualify(self, name: str, namespace: str) -> str:
        qualified = f"{namespace}.{name}"
        return qualified if qualified in self.named or qualified in self.cache else name

    def _named(self, name: str) -> Check:
        if name in self.cache:
            return self.cache[name]
        if name not in self.named:
            raise KeyError(f"unknown Avro type {name!r}")
        schema = self.named[name]
        self._define(name, schema, name.rpartition(".")[0] or None)
        return self.cache[name]

    def _define(self, name: str, schema: Mapping[str, Any], namespace: str | None) -> None:
        # A cell first, so recursive types resolve to the finished checker.
        cell: list[Check] = []
        self.cache[name] = lambda value: cell[0](value)
        ns = name.rpartition(".")[0] or namespace
        if schema["type"] == "enum":
            check = self._enum(schema)
        elif schema["type"] == "fixed":
            check = self._primitive("bytes", None)
        else:
            check = self._record(schema, ns)
        cell.append(check)
        self.cache[name] = check

    def _primitive(self, kind: str, urn_types: list[str] | None) -> Check:
        if kind == "null":
            def check_null(value: Any) -> None:
                if value is not None:
                    raise AspectValueError(f"expected null, got {_kind(value)}")
            return check_null
        if kind == "boolean":
            def check_bool(value: Any) -> None:
                if not isinstance(value, bool):
                    raise AspectValueError(f"expected a boolean, got {_kind(value)}")
            return check_bool
        if kind in _INT_RANGE:
            low, high = _INT_RANGE[kind]

            def check_int(value: Any) -> None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise AspectValueError(f"expected an integer ({kind}), got {_kind(value)}")
                if not low <= value <= high:
                    raise AspectValueError(f"{value} is out of range for {kind}")
            return check_int
        if kind in ("float", "double"):
            def check_float(value: Any) -> None:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise AspectValueError(f"expected a number, got {_kind(value)}")
            return check_float
        if urn_types is not None and not urn_types:  # a URN of any entity type
            def check_any_urn(value: Any) -> None:
                if not isinstance(value, str):
                    raise AspectValueError(f"expected a URN string, got {_kind(value)}")
                try:
                    Urn.parse(value)
                except UrnError as err:
                    raise AspectValueError(f"malformed URN: {err}") from None
            return check_any_urn
        if urn_types:
            allowed = frozenset(urn_types)

            def check_urn(value: Any) -> None:
                if not isinstance(value, str):
                    raise AspectValueError(f"expected a URN string, got {_kind(value)}")
                try:
                    urn = Urn.parse(value)
                except UrnError as err:
                    raise AspectValueError(f"malformed URN: {err}") from None
                if urn.entity_type not in allowed:
                    raise AspectValueError(
                        f"URN {value!r} is a {urn.entity_type}, expected {' or '.join(sorted(allowed))}"
                    )
            return check_urn

        def check_str(value: Any) -> None:
            if not isinstance(value, str):
                raise AspectValueError(f"expected a string, got {_kind(value)}")
        return check_str

    def _enum(self, schema: Mapping[str, Any]) -> Check:
        symbols = frozenset(schema["symbols"])
        listing = ", ".join(schema["symbols"])

        def check_enum(value: Any) -> None:
            if not isinstance(value, str) or value not in symbols:  # (an array or object is unhashable)
                shown = repr(value) if isinstance(value, str) else _kind(value)
                raise AspectValueError(f"{shown} is not one of {listing}")
        return check_enum

    def _record(self, schema: Mapping[str, Any], namespace: str | None) -> Check:
        members = _aliased_union_members(schema, self.named, namespace)
        if members is not None:
            return self._aliased_union(schema, namespace, members)
        return self._plain_record(schema, namespace)

    def _plain_record(self, schema: Mapping[str, Any], namespace: str | None) -> Check:
        checks = {field["name"]: self.compile(field["type"], namespace, field.get("Urn")) for field in schema["fields"]}
        required = frozenset(
            field["name"] for field in schema["fields"]
            if "default" not in field and not _is_nullable(field["type"])
        )
        order = [field["name"] for field in schema["fields"]]
        # Fields of a plain type (strings, booleans) are checked here, with no call: most fields are.
        plain = {field["name"]: kind for field in schema["fields"]
                 if (kind := _plain_type(field["type"], field.get("Urn"))) is not None}

        def check_record(value: Any) -> None:
            if not isinstance(value, dict):
                raise AspectValueError(f"expected an object, got {_kind(value)}")
            if not required <= value.keys():
                missing = next(name for name in order if name in required and name not in value)
                raise AspectValueError("required field is missing", missing)
            for name, item in value.items():  # usually fewer than the schema's fields
                kind = plain.get(name)
                if kind is not None and isinstance(item, kind):
                    continue
                check = checks.get(name)
                if check is None:
                    raise AspectValueError("unknown field", name)
                if item is None and name not in required:
                    continue
                try:
                    check(item)
                except AspectValueError as err:
                    raise err.within(name) from None
        return check_record

    def _aliased_union(self, schema: Mapping[str, Any], namespace: str | None, members: list[str]) -> Check:
        """A union with aliases (see _aliased_union_members): its Avro form, the record with
        `fieldDiscriminator` naming the member set, or its Pegasus form, an object of exactly
        one member and no discriminator (as DataHub's SDK sends it and GMS stores it)."""
        as_record = self._plain_record(schema, namespace)
        checks = {field["name"]: self.compile(field["type"], namespace, field.get("Urn"))
                  for field in schema["fields"] if field["name"] in members}
        listing = ", ".join(members)

        def check_aliased_union(value: Any) -> None:
            if not isinstance(value, dict) or DISCRIMINATOR in value:
                as_record(value)
                return
            unknown = next((name for name in value if name not in checks), None)
            if unknown is not None:
                raise AspectValueError("unknown field", unknown)
            present = [name for name, item in value.items() if item is not None]
            if len(present) != 1:
                raise AspectValueError(f"a union of {listing}: exactly one of them must be set, not {len(present)}")
            try:
                checks[present[0]](value[present[0]])
            except AspectValueError as err:
                raise err.within(present[0]) from None
        return check_aliased_union

    def _array(self, schema: Mapping[str, Any], namespace: str | None, urn_types: list[str] | None) -> Check:
        item_check = self.compile(schema["items"], namespace, urn_types)

        def check_array(value: Any) -> None:
            if not isinstance(value, list):
                raise AspectValueError(f"expected an array, got {_kind(value)}")
            for i, item in enumerate(value):
                try:
                    item_check(item)
                except AspectValueError as err:
                    raise err.within(f"[{i}]") from None
        return check_array

    def _map(self, schema: Mapping[str, Any], namespace: str | None) -> Check:
        value_check = self.compile(schema["values"], namespace)

        def check_map(value: Any) -> None:
            if not isinstance(value, dict):
                raise AspectValueError(f"expected an object (map), got {_kind(value)}")
            for key, item in value.items():
                try:
                    value_check(item)
                except AspectValueError as err:
                    raise err.within(key) from None
        return check_map

    def _union(self, branches: list[Any], namespace: str | None, urn_types: list[str] | None) -> Check:
        non_null = [b for b in branches if b != "null"]
        if len(non_null) == 1 and len(branches) == 2:
            inner = self.compile(non_null[0], namespace, urn_types)

            def check_optional(value: Any) -> None:
                if value is not None:
                    inner(value)
            return check_optional
        by_name = {self._branch_name(b, namespace): self.compile(b, namespace, urn_types) for b in non_null}
        allows_null = len(non_null) < len(branches)
        names = ", ".join(by_name)

        def check_union(value: Any) -> None:
            if value is None and allows_null:
                return
            if isinstance(value, dict) and len(value) == 1:
                (name, inner_value), = value.items()
                check = by_name.get(name) or by_name.get(name.replace(".pegasus2avro.", "."))
                if check is not None:
                    try:
                        check(inner_value)
                    except AspectValueError as err:
                        raise err.within(name) from None
                    return
            for check in by_name.values():  # a bare value that fits one branch
                try:
                    check(value)
                    return
                except AspectValueError:
                    continue
            raise AspectValueError(f"expected one of {names} (as {{\"<type name>\": value}}), got {_kind(value)}")
        return check_union

    def _branch_name(self, branch: Any, namespace: str | None) -> str:
        if isinstance(branch, str):
            if branch in PRIMITIVES or "." in branch or not namespace:
                return branch
            return self._qualify(branch, namespace)
        if branch["type"] in ("record", "error", "enum", "fixed"):
            return full_name(branch, namespace)
        return branch["type"]


def _plain_type(schema: Any, urn_types: list[str] | None) -> type | None:
    """The Python type every valid value of a field of this schema has, when that type is
    the whole check: strings (no URN to parse) and booleans, optional or not (a missing
    optional value, None, goes the general way)."""
    if isinstance(schema, list) and len(schema) == 2 and "null" in schema:
        schema = schema[0] if schema[1] == "null" else schema[1]
    if isinstance(schema, dict) and schema.get("type") in ("string", "bytes", "boolean"):
        schema = schema["type"]
    if schema in ("string", "bytes") and urn_types is None:
        return str
    return bool if schema == "boolean" else None


DISCRIMINATOR = "fieldDiscriminator"


def _aliased_union_members(schema: Mapping[str, Any], named: Mapping[str, Any], namespace: str | None
                           ) -> list[str] | None:
    """The members of a record that is Rest.li's Avro translation of a Pegasus union with
    aliases (one optional field per member, defaulting to null, and a required enum
    `fieldDiscriminator` whose symbols are exactly those fields' names), else None."""
    fields = {field["name"]: field for field in schema["fields"]}
    discriminator = fields.pop(DISCRIMINATOR, None)
    if discriminator is None or "default" in discriminator:
        return None
    kind = discriminator["type"]
    if isinstance(kind, str):
        kind = named.get(kind) or named.get(f"{namespace}.{kind}")
    if not isinstance(kind, Mapping) or kind.get("type") != "enum" or set(kind["symbols"]) != set(fields):
        return None
    if not all(_is_nullable(f["type"]) and f.get("default", ...) is None for f in fields.values()):
        return None
    return list(kind["symbols"])


def _is_nullable(schema: Any) -> bool:
    return isinstance(schema, list) and "null" in schema


def compile_validator(schema: Mapping[str, Any], named: Mapping[str, Any]) -> Check:
    """A function `check(value)` raising AspectValueError (with the field path) when value does not fit."""
    return _Compiler(named).compile(schema, None)
