"""A schema-compiled Avro binary encoder for the event envelopes.

fastavro spends most of its time on an MCL choosing union branches (it validates each
candidate record). This module generates, once per schema, plain Python source that
writes each record field by field with union branches resolved at generation time, and
compiles it; an MCL encodes several times faster. The encodings of strings and longs are
kept (`CACHED` of each): an MCL's names, URNs, stamps and lengths mostly repeat an earlier
one's. fastavro still does all decoding, and tests check that it reads back exactly what
this writes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from schemas.jsonform import PRIMITIVES, full_name

CACHED = 4096  # encodings of strings and of longs kept: names, URNs, stamps, lengths repeat from record to record
CACHED_LENGTH = 512  # characters of the longest string kept
Encoder = Callable[[Any, bytearray], None]
_PYTHON_TYPES = {
    "null": "type(None)", "boolean": "bool", "int": "int", "long": "int", "float": "(float, int)",
    "double": "(float, int)", "bytes": "(bytes, bytearray)", "string": "str", "enum": "str", "fixed": "bytes",
    "record": "dict", "map": "dict", "array": "(list, tuple)",
}


_LONGS: dict[int, bytes] = {}  # encodings kept, up to CACHED of each (then they start over)
_STRINGS: dict[str, bytes] = {}


def _long(n: int) -> bytes:
    """A long's encoding: zigzag, then 7 bits a byte (kept in _LONGS)."""
    zigzag = (n << 1) ^ (n >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    if len(_LONGS) >= CACHED:
        _LONGS.clear()
    encoded = _LONGS[n] = bytes(out)
    return encoded


def _string(value: str) -> bytes:
    """A string's encoding: its UTF-8 length, then the bytes (kept in _STRINGS unless longer
    than CACHED_LENGTH, so what is kept stays small whatever writers send)."""
    data = value.encode()
    encoded = (_LONGS.get(len(data)) or _long(len(data))) + data
    if len(value) <= CACHED_LENGTH:
        if len(_STRINGS) >= CACHED:
            _STRINGS.clear()
        _STRINGS[value] = encoded
    return encoded


def _bytes(value: bytes, out: bytearray) -> None:
    out += _LONGS.get(len(value)) or _long(len(value))
    out += value


def _long_of(expression: str) -> str:
    """Source of the encoding of a long: the kept one, else made (and kept)."""
    return f"(_known_long({expression}) or _long({expression}))"


def _string_of(expression: str) -> str:
    return f"(_known_string({expression}) or _string({expression}))"


class _Generator:
    """Writes one Python function per named record; other types are inlined."""

    def __init__(self, named: Mapping[str, Any]):
        self.named = named
        self.functions: dict[str, str] = {}  # record full name -> function name
        self.sources: list[str] = []
        self.constants: dict[str, Any] = {}

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            name = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            name = name if name in self.named else schema
            return self.named[name], name.rpartition(".")[0] or None
        return schema, namespace

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def record_function(self, schema: Mapping[str, Any], namespace: str | None) -> str:
        name = full_name(schema, namespace)
        if name in self.functions:
            return self.functions[name]
        function = f"_w{len(self.functions)}"
        self.functions[name] = function
        ns = name.rpartition(".")[0] or None
        lines = [f"def {function}(v, out):", "    get = v.get"]
        for i, field in enumerate(schema["fields"]):
            default = self.constant(field.get("default"))
            lines.append(f"    x{i} = get({field['name']!r}, {default})")
            lines.extend(self.statements(field["type"], ns, f"x{i}", "    "))
        self.sources.append("\n".join(lines))
        return function

    def statements(self, schema: Any, namespace: str | None, var: str, indent: str) -> list[str]:
        """Lines that append the encoding of the value in `var`."""
        schema, namespace = self.resolve(schema, namespace)
        if isinstance(schema, list):
            return self.union(schema, namespace, var, indent)
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind == "null":
            return []
        if kind == "boolean":
            return [f"{indent}out.append(1 if {var} else 0)"]
        if kind in ("int", "long"):
            return [f"{indent}out += {_long_of(var)}"]
        if kind == "float":
            return [f"{indent}out += _pack_float({var})"]
        if kind == "double":
            return [f"{indent}out += _pack_double({var})"]
        if kind == "string":
            return [f"{indent}out += {_string_of(var)}"]
        if kind == "bytes":
            return [f"{indent}_bytes({var}, out)"]
        if kind == "fixed":
            return [f"{indent}out += {var}"]
        if kind == "enum":
            index = self.constant({symbol: i for i, symbol in enumerate(schema["symbols"])})
            return [f"{indent}out += {_long_of(f'{index}[{var}]')}"]
        if kind in ("record", "error"):
            return [f"{indent}{self.record_function(schema, namespace)}({var}, out)"]
        item = f"i{len(indent)}"
        if kind == "array":
            body = self.statements(schema["items"], namespace, item, indent + "        ")
            return [f"{indent}if {var}:", f"{indent}    out += {_long_of(f'len({var})')}",
                    f"{indent}    for {item} in {var}:", *(body or [f"{indent}        pass"]),
                    f"{indent}out.append(0)"]
        if kind == "map":
            body = self.statements(schema["values"], namespace, item, indent + "        ")
            return [f"{indent}if {var}:", f"{indent}    out += {_long_of(f'len({var})')}",
                    f"{indent}    for k{len(indent)}, {item} in {var}.items():",
                    f"{indent}        out += {_string_of(f'k{len(indent)}')}", *body, f"{indent}out.append(0)"]
        return self.statements(kind, namespace, var, indent)

    def union(self, branches: list[Any], namespace: str | None, var: str, indent: str) -> list[str]:
        lines = []
        for i, branch in enumerate(branches):
            resolved, _ = self.resolve(branch, namespace)
            kind = resolved if isinstance(resolved, str) else resolved["type"]
            test = f"{var} is None" if kind == "null" else f"isinstance({var}, {_PYTHON_TYPES[kind]})"
            if kind in ("int", "long", "float", "double"):
                test += f" and not isinstance({var}, bool)"
            lines.append(f"{indent}{'if' if i == 0 else 'elif'} {test}:")
            lines.append(f"{indent}    out.append({i << 1})")
            lines.extend(self.statements(branch, namespace, var, indent + "    "))
        lines.append(f"{indent}else:")
        lines.append(f"{indent}    raise ValueError(f'{{{var}!r}} fits no branch of the union')")
        return lines


def compile_encoder(schema: Mapping[str, Any], named: Mapping[str, Any]) -> Encoder:
    """`encode(record, out)` appending the Avro binary encoding of a record to the bytearray out."""
    generator = _Generator(named)
    entry = generator.record_function(schema, None)
    namespace: dict[str, Any] = {
        "_long": _long, "_string": _string, "_bytes": _bytes,
        "_known_long": _LONGS.get, "_known_string": _STRINGS.get,
        "_pack_float": struct.Struct("<f").pack, "_pack_double": struct.Struct("<d").pack,
        **generator.constants,
    }
    exec(compile("\n\n".join(generator.sources), f"<avro encoder {schema['name']}>", "exec"), namespace)
    return namespace[entry]
