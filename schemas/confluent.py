"""Confluent's wire format, as DataHub's Kafka clients write it (`DatahubKafkaEmitter`, the
`datahub-kafka` sink): byte 0 is 0, bytes 1-4 the writer schema's id in a schema registry (big
endian), then the Avro binary body. Lodestar's own records use Avro single-object encoding,
which starts C3 01 (schemas/events.py), so the first byte tells the two apart.

`ConfluentDecoder` reads such a record with its writer schema, fetched by id through a lookup
(the registry's schema by id; parsed schemas are cached by id, as ids never change). The record
is read into DataHub's JSON form, as DataHub's clients serialize an aspect to JSON: a union with
more than one record branch as `{"<full name>": value}` with DataHub's model names
(`com.linkedin.pegasus2avro.X` is `com.linkedin.X`), a union of null and one type as the value
itself, fields that are null left out; bytes stay bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Callable
from typing import Any

from fastavro import schemaless_reader
from fastavro.schema import parse_schema

MAGIC = 0
MAX_ID = 2**31 - 1


class ConfluentDecodeError(ValueError):
    """Bytes that are not a readable record in Confluent's wire format."""


def is_confluent(data: bytes) -> bool:
    """Whether a record is in Confluent's framing (its first byte is 0)."""
    return len(data) > 0 and data[0] == MAGIC


def frame(schema_id: int, body: bytes) -> bytes:
    return struct.pack(">bI", MAGIC, schema_id) + body


def compact(schema: Any) -> str:
    """A schema (parsed JSON) as the compact JSON text Lodestar's registry keeps."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def registry_fingerprint(compact_text: str, schema_type: str = "AVRO") -> str:
    """The fingerprint Lodestar's registry keeps a schema under (SHA-256 of type and compact text)."""
    return hashlib.sha256(f"{schema_type}\n{compact_text}".encode()).hexdigest()


def first_id(fingerprint: str) -> int:
    """The id Lodestar's registry gives a schema unless another holds it (then it probes on):
    the fingerprint's first 31 bits, 0 becoming 1."""
    return int(fingerprint[:8], 16) >> 1 or 1


def schema_id_of(data: bytes) -> int:
    if len(data) < 5 or data[0] != MAGIC:
        raise ConfluentDecodeError("not in Confluent's wire format (a zero byte and a 4-byte schema id)")
    return struct.unpack(">I", data[1:5])[0]


class ConfluentDecoder:
    """Reads Confluent-framed records; `lookup(id)` is the writer schema's JSON text (None: unknown)."""

    def __init__(self, lookup: Callable[[int], str | None]):
        self._lookup = lookup
        self._parsed: dict[int, tuple[str, Any]] = {}

    def writer(self, schema_id: int) -> tuple[str, Any]:
        """(full name, parsed schema) of a writer schema by id."""
        cached = self._parsed.get(schema_id)
        if cached is not None:
            return cached
        text = self._lookup(schema_id)
        if text is None:
            raise ConfluentDecodeError(f"schema id {schema_id} is not in the schema registry")
        try:
            parsed = parse_schema(json.loads(text))
        except Exception as err:  # json and fastavro raise several types
            raise ConfluentDecodeError(f"schema id {schema_id} is not a usable Avro schema: {err}") from None
        name = parsed.get("name", parsed.get("type")) if isinstance(parsed, dict) else str(parsed)
        self._parsed[schema_id] = (name, parsed)
        return name, parsed

    def decode(self, data: bytes) -> tuple[str, Any]:
        """(the writer schema's full name, the record in DataHub's JSON form)."""
        schema_id = schema_id_of(data)
        name, parsed = self.writer(schema_id)
        try:
            record = schemaless_reader(io.BytesIO(data[5:]), parsed, None, return_record_name=True,
                                       return_record_name_override=True)
        except Exception as err:  # fastavro raises several types for truncated or corrupt bodies
            raise ConfluentDecodeError(f"corrupt {name} body (schema id {schema_id}): {err}") from None
        return name, _json_form(record)


PEGASUS = "com.linkedin.pegasus2avro."


def _json_form(value: Any) -> Any:
    """fastavro's (name, value) pairs of record unions as DataHub's {"<name>": value}, nulls left out."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        name = value[0]
        return {"com.linkedin." + name.removeprefix(PEGASUS) if name.startswith(PEGASUS) else name:
                _json_form(value[1])}
    if isinstance(value, dict):
        return {key: _json_form(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_json_form(item) for item in value]
    return value
