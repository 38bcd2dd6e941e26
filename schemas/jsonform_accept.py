"""A fast yes/no check of an aspect value in its JSON form: the quick path of validation.

`compile_acceptor` generates, once per schema, plain Python source with one function per
named record and per union (field checks inlined, as `schemas.avro_binary` does for encoding)
and compiles it. The acceptor answers True only for values `schemas.jsonform`'s checker
accepts too; it may answer False for some the checker accepts (a dict or str subclass), so a
False is followed by the checker, which raises the error naming the path or accepts after all.
Its rules are the checker's, field for field (see that module's docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schemas.jsonform import _INT_RANGE, PRIMITIVES, Check, _is_nullable, _plain_type, compile_validator, full_name
from schemas.urns import Urn, UrnError

Acceptor = Callable[[Any], bool]
FIELD_BY_FIELD = 4  # a record of at most this many fields is checked field by field, not in a loop
_MISSING = object()


def _urn_type(value: str) -> str | None:
    """The entity type of a URN, None when it is malformed."""
    try:
        return Urn.parse(value).entity_type
    except UrnError:
        return None


class _Generator:
    """Writes the acceptor's source: `_r<n>` per named type, `_u<n>` per union of several branches."""

    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.functions: dict[str, str] = {}  # named type's full name -> its function
        self.sources: list[str] = []
        self.constants: dict[str, Any] = {"_M": _MISSING, "_urn_type": _urn_type}
        self.unions = 0

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def qualify(self, name: str, namespace: str | None) -> str:
        if "." in name or not namespace:
            return name
        qualified = f"{namespace}.{name}"
        return qualified if qualified in self.named or qualified in self.functions else name

    def named_function(self, name: str, schema: Mapping[str, Any] | None = None,
                       namespace: str | None = None) -> str:
        """The function accepting a named type, written on first use (a recursive type calls
        itself by name)."""
        if name in self.functions:
            return self.functions[name]
        if schema is None:
            if name not in self.named:
                raise KeyError(f"unknown Avro type {name!r}")
            schema = self.named[name]
        function = f"_r{len(self.functions)}"
        self.functions[name] = function
        if schema["type"] == "enum":
            symbols = self.constant(frozenset(schema["symbols"]))
            body = [f"    if v.__class__ is not str or v not in {symbols}:", "        return False"]
        elif schema["type"] == "fixed":
            body = self.primitive("bytes", None, "v", "    ")
        else:
            body = self.record(schema, name.rpartition(".")[0] or namespace)
        self.sources.append("\n".join([f"def {function}(v):", *body, "    return True"]))
        return function

    def record(self, schema: Mapping[str, Any], namespace: str | None) -> list[str]:
        """A loop over the value's fields (usually fewer than the schema's): plain strings and
        booleans by set membership, the others by name; a record of a few fields is read field
        by field instead."""
        fields = schema["fields"]
        required = frozenset(f["name"] for f in fields if "default" not in f and not _is_nullable(f["type"]))
        if len(fields) <= FIELD_BY_FIELD:
            return self.small_record(fields, required, namespace)
        plain: dict[type, set[str]] = {str: set(), bool: set()}
        branches = []
        for field in fields:
            kind = _plain_type(field["type"], field.get("Urn"))
            if kind is not None:
                plain[kind].add(field["name"])
                continue
            check = self.statements(field["type"], namespace, field.get("Urn"), "x", "            ")
            branches += [f"        {'if' if not branches else 'elif'} k == {field['name']!r}:",
                         *(check or ["            pass"])]
        req = self.constant(required)
        lines = ["    if v.__class__ is not dict:", "        return False"]
        if required:
            lines += [f"    if not {req} <= v.keys():", "        return False"]
        lines.append("    for k, x in v.items():")
        for kind, names in plain.items():
            if names:
                lines += [f"        if k in {self.constant(frozenset(names))}:",
                          f"            if x.__class__ is {kind.__name__} or x is None and k not in {req}:",
                          "                continue", "            return False"]
        if branches:
            optional = self.constant(frozenset(f["name"] for f in fields) - required)
            lines += [f"        if x is None and k in {optional}:",
                      "            continue", *branches, "        else:", "            return False"]
        else:
            lines.append("        return False")
        return lines

    def small_record(self, fields: list[Mapping[str, Any]], required: frozenset[str], namespace: str | None
                     ) -> list[str]:
        """Each field looked up in turn; the count of those found must be the object's size."""
        exact = len(required) == len(fields)  # every field required: the size alone tells of others
        lines = ["    if v.__class__ is not dict:", "        return False",
                 *([f"    if len(v) != {len(fields)}:", "        return False"] if exact else ["    n = len(v)"])]
        for field in fields:
            lines.append(f"    x = v.get({field['name']!r}, _M)")
            if field["name"] in required:
                lines += ["    if x is _M:", "        return False", *([] if exact else ["    n -= 1"]),
                          *self.statements(field["type"], namespace, field.get("Urn"), "x", "    ")]
            else:
                check = self.statements(field["type"], namespace, field.get("Urn"), "x", "            ")
                lines += ["    if x is not _M:", "        n -= 1",
                          *(["        if x is not None:", *check] if check else [])]
        return lines if exact else [*lines, "    if n:", "        return False"]

    def statements(self, schema: Any, namespace: str | None, urn_types: list[str] | None, var: str,
                   indent: str) -> list[str]:
        """Lines that return False when the value in `var` does not fit the schema."""
        fail = f"{indent}    return False"
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return [f"{indent}if not {self.named_function(self.qualify(schema, namespace))}({var}):", fail]
        if isinstance(schema, list):
            non_null = [b for b in schema if b != "null"]
            if len(non_null) == 1 and len(schema) == 2:
                inner = self.statements(non_null[0], namespace, urn_types, var, indent + "    ")
                return [f"{indent}if {var} is not None:", *inner] if inner else []
            return [f"{indent}if not {self.union(schema, namespace, urn_types)}({var}):", fail]
        if isinstance(schema, dict):
            kind = schema["type"]
            if kind in ("record", "error", "enum", "fixed"):
                function = self.named_function(full_name(schema, namespace), schema, namespace)
                return [f"{indent}if not {function}({var}):", fail]
            item = f"i{len(indent)}"
            if kind == "array":
                body = self.statements(schema["items"], namespace, urn_types, item, indent + "    ")
                return [f"{indent}if {var}.__class__ is not list:", fail,
                        *([f"{indent}for {item} in {var}:", *body] if body else [])]
            if kind == "map":
                body = self.statements(schema["values"], namespace, None, item, indent + "    ")
                return [f"{indent}if {var}.__class__ is not dict:", fail,
                        *([f"{indent}for {item} in {var}.values():", *body] if body else [])]
            return self.statements(kind, namespace, urn_types, var, indent)
        return self.primitive(schema, urn_types, var, indent)

    def primitive(self, kind: str, urn_types: list[str] | None, var: str, indent: str) -> list[str]:
        if kind == "null":
            test = f"{var} is not None"
        elif kind == "boolean":
            test = f"{var} is not True and {var} is not False"
        elif kind in _INT_RANGE:
            low, high = _INT_RANGE[kind]
            test = f"{var}.__class__ is not int or not {low} <= {var} <= {high}"
        elif kind in ("float", "double"):
            test = f"{var}.__class__ is not float and {var}.__class__ is not int"
        elif urn_types is None:
            test = f"{var}.__class__ is not str"
        elif not urn_types:
            test = f"{var}.__class__ is not str or _urn_type({var}) is None"
        else:
            test = f"{var}.__class__ is not str or _urn_type({var}) not in {self.constant(frozenset(urn_types))}"
        return [f"{indent}if {test}:", f"{indent}    return False"]

    def union(self, branches: list[Any], namespace: str | None, urn_types: list[str] | None) -> str:
        """The function of a union of several branches: a one-key object whose key names a
        branch (a `.pegasus2avro.` name too) is that branch's value; anything else must be a
        bare value of some branch."""
        self.unions += 1
        function = f"_u{self.unions}"
        table = {}
        for i, branch in enumerate(b for b in branches if b != "null"):
            name = self.branch_name(branch, namespace)  # before the branch is written, as the checker names it
            resolved = self.qualify(branch, namespace) if isinstance(branch, str) else None
            if resolved is not None and resolved not in PRIMITIVES:  # a named type's own function
                table[name] = self.named_function(resolved)
                continue
            body = self.statements(branch, namespace, urn_types, "v", "    ")
            self.sources.append("\n".join([f"def {function}_{i}(v):", *body, "    return True"]))
            table[name] = f"{function}_{i}"
        self.sources.append("\n".join([
            f"{function}_by_name = {{{', '.join(f'{name!r}: {check}' for name, check in table.items())}}}",
            f"def {function}(v):",
            *(["    if v is None:", "        return True"] if "null" in branches else []),
            "    if v.__class__ is dict and len(v) == 1:",
            "        for name, inner in v.items():",
            f"            check = {function}_by_name.get(name) or {function}_by_name.get("
            "name.replace('.pegasus2avro.', '.'))",
            "            if check is not None:",
            "                return check(inner)",
            f"    for check in {function}_by_name.values():",
            "        if check(v):",
            "            return True",
            "    return False",
        ]))
        return function

    def branch_name(self, branch: Any, namespace: str | None) -> str:
        if isinstance(branch, str):
            return branch if branch in PRIMITIVES else self.qualify(branch, namespace)
        if branch["type"] in ("record", "error", "enum", "fixed"):
            return full_name(branch, namespace)
        return branch["type"]


def compile_acceptor(schema: Mapping[str, Any], named: Mapping[str, Any]) -> Acceptor:
    """`accepts(value)`: True only when `schemas.jsonform`'s checker accepts the value."""
    generator = _Generator(named)
    body = generator.statements(schema, None, None, "v", "    ")
    source = "\n\n".join([*generator.sources, "\n".join(["def _accept(v):", *body, "    return True"])])
    namespace: dict[str, Any] = dict(generator.constants)
    exec(compile(source, f"<acceptor {schema.get('name', 'value') if isinstance(schema, dict) else schema}>",
                 "exec"), namespace)
    return namespace["_accept"]


def compile_fast_validator(schema: Mapping[str, Any], named: Mapping[str, Any]) -> Check:
    """`schemas.jsonform`'s validator with the acceptor in front: a valid value costs the
    acceptor's one pass, an invalid one also the checker's, which raises the error naming the path."""
    accepts = compile_acceptor(schema, named)
    explain = compile_validator(schema, named)

    def check(value: Any) -> None:
        if not accepts(value):
            explain(value)
    return check
