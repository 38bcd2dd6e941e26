"""A schema-compiled Avro binary encoder for the event envelopes.

fastavro spends most of its time on an MCL choosing union branches (it validates each
candidate record). Compiling the schema once into closures that know each union's
branches encodes an MCL about four times faster; fastavro still does all decoding, and
tests check that it reads back what this writes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from schemas.jsonform import PRIMITIVES, full_name

Encoder = Callable[[Any, bytearray], None]
_DOUBLE = struct.Struct("<d").pack
_FLOAT = struct.Struct("<f").pack


def _varint(n: int, out: bytearray) -> None:
    n = (n << 1) ^ (n >> 63)  # zigzag
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _write_null(value: Any, out: bytearray) -> None:
    return None


def _write_boolean(value: Any, out: bytearray) -> None:
    out.append(1 if value else 0)


def _write_long(value: Any, out: bytearray) -> None:
    _varint(value, out)


def _write_double(value: Any, out: bytearray) -> None:
    out += _DOUBLE(value)


def _write_float(value: Any, out: bytearray) -> None:
    out += _FLOAT(value)


def _write_bytes(value: Any, out: bytearray) -> None:
    _varint(len(value), out)
    out += value


def _write_string(value: Any, out: bytearray) -> None:
    data = value.encode()
    _varint(len(data), out)
    out += data


_PRIMITIVE_WRITERS: dict[str, Encoder] = {
    "null": _write_null, "boolean": _write_boolean, "int": _write_long, "long": _write_long,
    "float": _write_float, "double": _write_double, "bytes": _write_bytes, "string": _write_string,
}
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),), "boolean": (bool,), "int": (int,), "long": (int,), "float": (float, int),
    "double": (float, int), "bytes": (bytes, bytearray), "string": (str,), "enum": (str,), "fixed": (bytes,),
    "record": (dict,), "map": (dict,), "array": (list, tuple),
}


class _Compiler:
    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.cache: dict[str, Encoder] = {}

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        """A schema with named references replaced by their definitions."""
        if isinstance(schema, str) and schema not in PRIMITIVES:
            name = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            name = name if name in self.named else schema
            return self.named[name], name.rpartition(".")[0] or None
        return schema, namespace

    def compile(self, schema: Any, namespace: str | None) -> Encoder:
        schema, namespace = self.resolve(schema, namespace)
        if isinstance(schema, str):
            return _PRIMITIVE_WRITERS[schema]
        if isinstance(schema, list):
            return self._union(schema, namespace)
        kind = schema["type"]
        if kind in ("record", "error"):
            name = full_name(schema, namespace)
            if name not in self.cache:
                cell: list[Encoder] = []
                self.cache[name] = lambda value, out: cell[0](value, out)
                cell.append(self._record(schema, name.rpartition(".")[0] or None))
                self.cache[name] = cell[0]
            return self.cache[name]
        if kind == "enum":
            index = {symbol: i for i, symbol in enumerate(schema["symbols"])}
            return lambda value, out: _varint(index[value], out)
        if kind == "fixed":
            return lambda value, out: out.__iadd__(value)
        if kind == "array":
            return self._array(self.compile(schema["items"], namespace))
        if kind == "map":
            return self._map(self.compile(schema["values"], namespace))
        return self.compile(kind, namespace)

    def _record(self, schema: Mapping[str, Any], namespace: str | None) -> Encoder:
        fields = [(f["name"], self.compile(f["type"], namespace), f.get("default")) for f in schema["fields"]]

        def write_record(value: Any, out: bytearray) -> None:
            get = value.get
            for name, write, default in fields:
                write(get(name, default), out)  # an absent field takes its schema default
        return write_record

    @staticmethod
    def _array(write_item: Encoder) -> Encoder:
        def write_array(value: Any, out: bytearray) -> None:
            if value:
                _varint(len(value), out)
                for item in value:
                    write_item(item, out)
            out.append(0)
        return write_array

    @staticmethod
    def _map(write_value: Encoder) -> Encoder:
        def write_map(value: Any, out: bytearray) -> None:
            if value:
                _varint(len(value), out)
                for key, item in value.items():
                    _write_string(key, out)
                    write_value(item, out)
            out.append(0)
        return write_map

    def _union(self, branches: list[Any], namespace: str | None) -> Encoder:
        if len(branches) == 2 and branches[0] == "null":
            write_value = self.compile(branches[1], namespace)

            def write_optional(value: Any, out: bytearray) -> None:
                if value is None:
                    out.append(0)
                else:
                    out.append(2)  # zigzag(1)
                    write_value(value, out)
            return write_optional
        candidates = []
        for i, branch in enumerate(branches):
            resolved, ns = self.resolve(branch, namespace)
            kind = resolved if isinstance(resolved, str) else resolved["type"]
            candidates.append((i, _PYTHON_TYPES[kind], self.compile(branch, namespace)))

        def write_union(value: Any, out: bytearray) -> None:
            for i, types, write in candidates:
                if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
                    _varint(i, out)
                    write(value, out)
                    return
            raise ValueError(f"{value!r} fits no branch of {branches}")
        return write_union


def compile_encoder(schema: Any, named: Mapping[str, Any]) -> Encoder:
    """`encode(value, out)` appending the Avro binary encoding of value to the bytearray out."""
    return _Compiler(named).compile(schema, None)
