"""Reading only some fields of Avro binary records, skipping the rest without decoding them.

The processor needs six fields of an MCL (and one of its system metadata); a full decode
also builds the previous value, headers and audit stamps. A `Projection` is compiled once
from the writer schema into closures that read the wanted fields and stop after the last.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from schemas.jsonform import PRIMITIVES, full_name

Reader = Callable[[bytes, int], tuple[Any, int]]  # (value, next position)
Want = Mapping[str, "bool | Want"]  # field -> True (the value) or the wanted fields of a record


def _long(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _long(buf, pos)
    return buf[pos:pos + size], pos + size


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    size, pos = _long(buf, pos)
    return buf[pos:pos + size].decode(), pos + size


_SIMPLE: dict[str, Reader] = {
    "null": lambda buf, pos: (None, pos),
    "boolean": lambda buf, pos: (buf[pos] != 0, pos + 1),
    "float": lambda buf, pos: (struct.unpack_from("<f", buf, pos)[0], pos + 4),
    "double": lambda buf, pos: (struct.unpack_from("<d", buf, pos)[0], pos + 8),
    "int": _long, "long": _long, "string": _string, "bytes": _bytes,
}


class _Compiler:
    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.cache: dict[tuple[str, bool] | None, Reader] = {}

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            name = schema if "." in schema or not namespace or schema in self.named else f"{namespace}.{schema}"
            found = self.named[name]
            return found, name.rpartition(".")[0] or None
        if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
            return schema, full_name(schema, namespace).rpartition(".")[0] or None
        return schema, namespace

    def reader(self, schema: Any, namespace: str | None, want: bool | Want = True, last: bool = False) -> Reader:
        """Reads a value (of a record: only the wanted fields, as a dict); skips when want is False.
        With `last`, a record stops after its last wanted field (nothing after it is read)."""
        schema, namespace = self.resolve(schema, namespace)
        if isinstance(schema, list):
            branches = [self.reader(b, namespace, want) for b in schema]

            def union(buf: bytes, pos: int) -> tuple[Any, int]:
                index, pos = _long(buf, pos)
                return branches[index](buf, pos)
            return union
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind in _SIMPLE:
            return _SIMPLE[kind]
        if kind == "enum":
            symbols = schema["symbols"]

            def enum(buf: bytes, pos: int) -> tuple[Any, int]:
                index, pos = _long(buf, pos)
                return symbols[index], pos
            return enum
        if kind == "fixed":
            size = schema["size"]
            return lambda buf, pos: (buf[pos:pos + size], pos + size)
        if kind in ("array", "map"):
            return self._blocks(schema, namespace, kind == "map")
        if kind in ("record", "error"):
            return self._record(schema, namespace, want, last)
        return self.reader(kind, namespace, want)  # {"type": "string", "logicalType": ...}

    def _blocks(self, schema: Any, namespace: str | None, is_map: bool) -> Reader:
        item = self.reader(schema["values" if is_map else "items"], namespace)

        def blocks(buf: bytes, pos: int) -> tuple[Any, int]:
            out: Any = {} if is_map else []
            while True:
                count, pos = _long(buf, pos)
                if count == 0:
                    return out, pos
                if count < 0:
                    count = -count
                    _, pos = _long(buf, pos)  # the block's size in bytes
                for _ in range(count):
                    if is_map:
                        key, pos = _string(buf, pos)
                        out[key], pos = item(buf, pos)
                    else:
                        value, pos = item(buf, pos)
                        out.append(value)
        return blocks

    def _record(self, schema: Mapping[str, Any], namespace: str | None, want: bool | Want, last: bool) -> Reader:
        key = (full_name(schema, namespace), want) if isinstance(want, bool) and not last else None
        if key in self.cache:
            return self.cache[key]
        if key is not None:  # a cell first, so a recursive type refers to the finished reader
            cell: list[Reader] = []
            self.cache[key] = lambda buf, pos: cell[0](buf, pos)
        fields = schema["fields"]
        wanted = {f["name"]: True for f in fields} if want is True else dict(want or {})
        if last and wanted:
            fields = fields[:max(i for i, f in enumerate(fields) if f["name"] in wanted) + 1]
        steps = [(f["name"] if f["name"] in wanted else None,
                  self.reader(f["type"], namespace, wanted.get(f["name"], False))) for f in fields]

        def record(buf: bytes, pos: int) -> tuple[Any, int]:
            out = {}
            for name, read in steps:
                value, pos = read(buf, pos)
                if name is not None:
                    out[name] = value
            return out, pos
        if key is not None:
            cell.append(record)
            self.cache[key] = record
        return record


def projection(schema: Mapping[str, Any], named: Mapping[str, Any], want: Want) -> Callable[[bytes], dict[str, Any]]:
    """A function reading the wanted fields of a record (wanted nested records as dicts of
    their wanted fields) from its Avro binary body, stopping after the last wanted field."""
    read = _Compiler(named).reader(schema, None, want, last=True)
    return lambda body: read(body, 0)[0]
