"""Reading only some fields of Avro binary records, skipping the rest without decoding them.

The processor needs six fields of an MCL (and one of its system metadata); a full decode
also builds the previous value, headers and audit stamps. A projection is compiled once from
the writer schema into Python source: one function per record read, its fields read or
skipped in straight-line code (a varint of one byte, the usual length or union branch, costs
no call), stopping after the last wanted field.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from schemas.jsonform import PRIMITIVES, full_name

Want = Mapping[str, "bool | Want"]  # field -> True (the value) or the wanted fields of a record


def _long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (the generated code inlines the one-byte case)."""
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


_FIXED_SIZE = {"float": 4, "double": 8}


class _Generator:
    """Python source of the readers of a schema: `read(schema, ..., target)` returns the lines
    that read a value into variable `target` (None: skip it) and advance `pos`."""

    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.scope: dict[str, Any] = {"_long": _long, "_float": struct.Struct("<f").unpack_from,
                                      "_double": struct.Struct("<d").unpack_from}
        self.functions: list[str] = []
        self.cache: dict[tuple[str, bool], str] = {}
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def constant(self, value: Any) -> str:
        name = self.fresh("_c")
        self.scope[name] = value
        return name

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            name = schema if "." in schema or not namespace or schema in self.named else f"{namespace}.{schema}"
            return self.named[name], name.rpartition(".")[0] or None
        if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
            return schema, full_name(schema, namespace).rpartition(".")[0] or None
        return schema, namespace

    def varint(self, target: str) -> list[str]:
        byte = self.fresh("b")
        return [f"{byte} = buf[pos]",
                f"if {byte} < 128:",
                f"    {target} = ({byte} >> 1) ^ -({byte} & 1)",
                "    pos += 1",
                "else:",
                f"    {target}, pos = _long(buf, pos)"]

    def read(self, schema: Any, namespace: str | None, want: bool | Want, target: str | None) -> list[str]:
        schema, namespace = self.resolve(schema, namespace)
        if isinstance(schema, list):
            return self.union(schema, namespace, want, target)
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind == "null":
            return [f"{target} = None"] if target else []
        if kind == "boolean":
            return ([f"{target} = buf[pos] != 0"] if target else []) + ["pos += 1"]
        if kind in ("int", "long"):
            return self.varint(target or "_")
        if kind in _FIXED_SIZE:
            return ([f"{target} = _{kind}(buf, pos)[0]"] if target else []) + [f"pos += {_FIXED_SIZE[kind]}"]
        if kind in ("string", "bytes"):
            size = self.fresh("n")
            value = f"buf[pos:pos + {size}]" + (".decode()" if kind == "string" else "")
            return self.varint(size) + ([f"{target} = {value}"] if target else []) + [f"pos += {size}"]
        if kind == "enum":
            index = self.fresh("i")
            return self.varint(index) + ([f"{target} = {self.constant(tuple(schema['symbols']))}[{index}]"]
                                         if target else [])
        if kind == "fixed":
            return ([f"{target} = buf[pos:pos + {schema['size']}]"] if target else []) + [f"pos += {schema['size']}"]
        if kind in ("array", "map"):
            return self.blocks(schema, namespace, kind == "map", target)
        if kind in ("record", "error"):
            function = self.record(schema, namespace, want, last=False)
            return [f"{target or '_'}, pos = {function}(buf, pos)"]
        return self.read(kind, namespace, want, target)  # {"type": "string", "logicalType": ...}

    def union(self, branches: list[Any], namespace: str | None, want: bool | Want, target: str | None) -> list[str]:
        index = self.fresh("u")
        lines = self.varint(index)
        for number, branch in enumerate(branches):
            body = self.read(branch, namespace, want, target) or ["pass"]
            lines += [f"{'if' if number == 0 else 'elif'} {index} == {number}:", *("    " + line for line in body)]
        return [*lines, "else:", f"    raise IndexError('union branch ' + str({index}))"]

    def blocks(self, schema: Mapping[str, Any], namespace: str | None, is_map: bool, target: str | None) -> list[str]:
        count, size, item, key = self.fresh("k"), self.fresh("s"), self.fresh("v"), self.fresh("m")
        if target is None:  # a block with its size in bytes is skipped whole
            body = self.read(schema["values" if is_map else "items"], namespace, False, None)
            keys = self.read("string", None, False, None) if is_map else []
            return ["while True:", *("    " + line for line in [
                *self.varint(count), f"if {count} == 0:", "    break", f"if {count} < 0:",
                *("    " + line for line in self.varint(size)), f"    pos += {size}", "    continue",
                f"for _ in range({count}):", *("    " + line for line in keys + body or ["pass"])])]
        body = self.read(schema["values" if is_map else "items"], namespace, True, item)
        keys = self.read("string", None, True, key) if is_map else []
        store = f"{target}[{key}] = {item}" if is_map else f"{target}.append({item})"
        return [f"{target} = {'{}' if is_map else '[]'}", "while True:", *("    " + line for line in [
            *self.varint(count), f"if {count} == 0:", "    break", f"if {count} < 0:", f"    {count} = -{count}",
            *("    " + line for line in self.varint("_")),
            f"for _ in range({count}):", *("    " + line for line in [*keys, *body, store])])]

    def record(self, schema: Mapping[str, Any], namespace: str | None, want: bool | Want, last: bool) -> str:
        """The name of a function (buf, pos) -> (dict of the wanted fields, or None, next pos)."""
        key = (full_name(schema, namespace), want) if isinstance(want, bool) and not last else None
        if key is not None and key in self.cache:
            return self.cache[key]
        function = self.fresh("_record")
        if key is not None:
            self.cache[key] = function  # before the body: a recursive type calls this same function
        fields = schema["fields"]
        wanted = {f["name"]: True for f in fields} if want is True else dict(want or {})
        if last and wanted:
            fields = fields[:max(i for i, f in enumerate(fields) if f["name"] in wanted) + 1]
        body = ["out = {}"] if wanted else []
        for f in fields:
            if f["name"] in wanted:
                value = self.fresh("f")
                body += [*self.read(f["type"], namespace, wanted[f["name"]], value), f"out[{f['name']!r}] = {value}"]
            else:
                body += self.read(f["type"], namespace, False, None)
        body.append(f"return {'out' if wanted else 'None'}, pos")
        self.functions.append("\n".join([f"def {function}(buf, pos):", *("    " + line for line in body)]))
        return function

    def compile(self, function: str) -> Callable[[bytes, int], tuple[Any, int]]:
        exec("\n\n".join(self.functions), self.scope)  # noqa: S102  (source generated from a schema)
        return self.scope[function]


def projection(schema: Mapping[str, Any], named: Mapping[str, Any], want: Want) -> Callable[[bytes], dict[str, Any]]:
    """A function reading the wanted fields of a record (wanted nested records as dicts of
    their wanted fields) from its Avro binary body, stopping after the last wanted field;
    raises IndexError or UnicodeDecodeError on a truncated or corrupt body."""
    generator = _Generator(named)
    read = generator.compile(generator.record(schema, None, want, last=True))
    return lambda body: read(body, 0)[0]
