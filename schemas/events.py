"""Binary form of the event envelopes (MCP, MCL, FailedMCP) on the event log.

Values use Avro single-object encoding: the marker `C3 01`, the writer schema's 8-byte
CRC-64-AVRO fingerprint, then the Avro binary body. A reader resolves the fingerprint
to its writer schema and reads with the current schema of that type (Avro schema
resolution), so older writers stay readable: their schemas are kept, self-contained, in
`avro/history/<type name>.<n>.avsc`.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader
from fastavro.schema import fingerprint, load_schema, parse_schema, to_parsing_canonical_form

from schemas.avro_binary import Encoder, compile_encoder
from schemas.registry import SCHEMA_DIR, load_named_types

MARKER = b"\xc3\x01"
MCP = "com.linkedin.mxe.MetadataChangeProposal"
MCL = "com.linkedin.mxe.MetadataChangeLog"
FAILED_MCP = "com.linkedin.mxe.FailedMetadataChangeProposal"
EVENT_TYPES = (MCP, MCL, FAILED_MCP)


class EventDecodeError(ValueError):
    """Bytes that are not a Lodestar event of a known schema."""


@dataclass(frozen=True)
class _Writer:
    type_name: str
    schema: Any
    fingerprint: bytes
    encode: Encoder | None  # None: an older writer schema, read only


def _fingerprint(parsed: Any) -> bytes:
    return bytes.fromhex(fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO"))


class EventCodec:
    """Encodes events with the current schemas; decodes any known writer schema."""

    def __init__(self, schema_dir: Path = SCHEMA_DIR):
        self._current: dict[str, _Writer] = {}
        self._by_fingerprint: dict[bytes, _Writer] = {}
        named = load_named_types(schema_dir)
        self.named = named  # every named type of Lodestar's schemas, by full name
        for type_name in EVENT_TYPES:
            parsed = load_schema(schema_dir / f"{type_name}.avsc")
            writer = _Writer(type_name, parsed, _fingerprint(parsed), compile_encoder(named[type_name], named))
            self._current[type_name] = writer
            self._by_fingerprint[writer.fingerprint] = writer
        for path in sorted((schema_dir / "history").glob("*.avsc")):
            old = parse_schema(json.loads(path.read_text()))
            type_name = path.name.split(".avsc")[0].rsplit(".", 1)[0]
            if type_name not in self._current:
                raise ValueError(f"{path}: not a writer schema of an event type ({', '.join(EVENT_TYPES)})")
            self._by_fingerprint[_fingerprint(old)] = _Writer(type_name, old, _fingerprint(old), None)

    def encode(self, type_name: str, record: dict[str, Any]) -> bytes:
        writer = self._current[type_name]
        out = bytearray(MARKER)
        out += writer.fingerprint
        assert writer.encode is not None
        writer.encode(record, out)
        return bytes(out)

    def schema(self, type_name: str) -> dict[str, Any]:
        """The current writer schema of an event type (its JSON, named types by name)."""
        return self.named[type_name]

    def head(self, type_name: str) -> bytes:
        """The first 10 bytes of an event of this type written now: marker and fingerprint."""
        return MARKER + self._current[type_name].fingerprint

    def decode(self, data: bytes) -> tuple[str, dict[str, Any]]:
        """(type name, record) of an encoded event; raises EventDecodeError."""
        if len(data) < 10 or data[:2] != MARKER:
            raise EventDecodeError("not Avro single-object encoded (missing C3 01 marker)")
        writer = self._by_fingerprint.get(bytes(data[2:10]))
        if writer is None:
            raise EventDecodeError(f"unknown writer schema fingerprint {bytes(data[2:10]).hex()}")
        current = self._current[writer.type_name]
        reader = None if writer is current else current.schema  # no resolution needed for the current one
        try:
            record = schemaless_reader(io.BytesIO(data[10:]), writer.schema, reader)
        except Exception as err:  # fastavro raises several types for truncated or corrupt bodies
            raise EventDecodeError(f"corrupt {writer.type_name} body: {err}") from None
        return writer.type_name, record


@cache
def default_codec() -> EventCodec:
    return EventCodec()
