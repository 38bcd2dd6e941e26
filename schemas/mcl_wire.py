"""The two wire formats of MetadataChangeLogs on the MCL topics, written and read.

- **lodestar** (the default): Avro single-object encoding with Lodestar's MCL schema (first
  bytes C3 01, then the schema's fingerprint: schemas/events.py).
- **confluent**: DataHub's own `MetadataChangeLog` schema, read from the pinned `acryl-datahub`
  package, in Confluent's framing (a zero byte and the schema's 4-byte id in a schema registry:
  schemas/confluent.py), as DataHub's deserializers and DataHub Actions read MCLs.

Lodestar's MCL schema is DataHub's field for field (DataHub's adds `auditHeader` and
`systemMetadata.schemaVersion`, which Lodestar leaves null), so one record dict encodes in
either format and reads back equal: nothing is lost, and nothing needs a side channel.

`MclReader` reads both, telling them apart by the first byte, into the record dict Lodestar's
own decoder gives (`EventCodec.decode`). A Confluent record's writer schema comes from `lookup`
(schema id -> schema text, e.g. Lodestar's registry over the store, or a registry's REST API);
without one, the id Lodestar's registry gives DataHub's schema is assumed to be it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from schemas.avro_binary import compile_encoder
from schemas.confluent import compact, first_id, frame, is_confluent, registry_fingerprint
from schemas.datahub_model import schema_directory
from schemas.events import MCL, EventCodec, EventDecodeError, default_codec
from schemas.projection import Want, projection
from schemas.registry import named_types

LODESTAR, CONFLUENT = "lodestar", "confluent"
WIRE_FORMATS = (LODESTAR, CONFLUENT)
DATAHUB_MCL_FILE = "MetadataChangeLog.avsc"
_DATAHUB_ONLY = ("auditHeader",)  # fields of DataHub's MCL Lodestar never sets
_DATAHUB_ONLY_SYSTEM = ("schemaVersion",)  # the same, of its SystemMetadata
Lookup = Callable[[int], "str | None"]


class UnresolvedSchema(EventDecodeError):
    """A Confluent record whose writer schema id this reader may not look up now (see detach)."""

    def __init__(self, schema_id: int):
        super().__init__(f"schema id {schema_id} is not resolved here")
        self.schema_id = schema_id


def subject(topic: str) -> str:
    """The registry subject of a topic's values (Confluent's TopicNameStrategy, as DataHub uses)."""
    return f"{topic}-value"


def _canonical_fingerprint(parsed: Any) -> str:
    return fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")


@dataclass(frozen=True)
class DataHubMclSchema:
    """DataHub's MCL schema as the pinned package ships it."""

    text: str  # compact JSON, as registered
    schema: dict[str, Any]
    named: dict[str, dict[str, Any]]
    parsed: Any  # fastavro's
    canonical: str  # CRC-64-AVRO of the parsing canonical form: the same schema under any id

    @property
    def default_id(self) -> int:
        """The id Lodestar's registry gives it (unless that id was taken first: then it probes on)."""
        return first_id(registry_fingerprint(self.text))


@cache
def datahub_mcl_schema(directory: Path | None = None) -> DataHubMclSchema:
    """DataHub's MCL schema from the installed acryl-datahub (DataHubModelError if it is missing)."""
    raw = json.loads(((directory or schema_directory()) / DATAHUB_MCL_FILE).read_text())
    parsed = parse_schema(raw)
    return DataHubMclSchema(compact(raw), raw, named_types(raw), parsed, _canonical_fingerprint(parsed))


class ConfluentMclEncoder:
    """Encodes Lodestar's MCL records with DataHub's schema under `schema_id`, Confluent-framed."""

    def __init__(self, schema_id: int, datahub: DataHubMclSchema | None = None):
        datahub = datahub or datahub_mcl_schema()
        self.schema_id = schema_id
        self._head = frame(schema_id, b"")
        self._encode = compile_encoder(datahub.schema, datahub.named)

    def encode(self, record: dict[str, Any]) -> bytes:
        out = bytearray(self._head)
        self._encode(record, out)  # DataHub's extra fields take their defaults (null)
        return bytes(out)


def mcl_encoder(wire_format: str, schema_id: int | None = None,
                codec: EventCodec | None = None) -> Callable[[dict[str, Any]], bytes]:
    """`encode(record) -> bytes` of an MCL record in a wire format (confluent needs the schema id)."""
    if wire_format == CONFLUENT:
        if schema_id is None:
            raise ValueError("the confluent wire format needs the schema id of DataHub's MCL schema")
        return ConfluentMclEncoder(schema_id).encode
    if wire_format != LODESTAR:
        raise ValueError(f"unknown wire format {wire_format!r} (one of {', '.join(WIRE_FORMATS)})")
    codec = codec or default_codec()
    return lambda record: codec.encode(MCL, record)


def from_datahub(record: dict[str, Any]) -> dict[str, Any]:
    """A DataHub MCL read with fastavro as Lodestar's record: DataHub's extra fields dropped when
    unset (a record from another writer keeps them, set)."""
    for name in _DATAHUB_ONLY:
        if record.get(name) is None:
            record.pop(name, None)
    for key in ("systemMetadata", "previousSystemMetadata"):
        system_metadata = record.get(key)
        if system_metadata is not None:
            for name in _DATAHUB_ONLY_SYSTEM:
                if system_metadata.get(name) is None:
                    system_metadata.pop(name, None)
    return record


@dataclass(frozen=True)
class _Writer:
    parsed: Any
    is_datahub: bool  # the pinned DataHub MCL schema (projections apply)
    name: str


class MclReader:
    """Reads MCLs of either wire format (and every Lodestar writer schema `codec` knows)."""

    def __init__(self, codec: EventCodec | None = None, lookup: Lookup | None = None,
                 datahub: DataHubMclSchema | None = None):
        self.codec = codec or default_codec()
        self.datahub = datahub or datahub_mcl_schema()
        self._lookup = lookup
        self._writers: dict[int, _Writer] = {}
        self._detached = False
        if lookup is None:  # no registry to ask: the id Lodestar's registry gives DataHub's schema
            self._writers[self.datahub.default_id] = _Writer(self.datahub.parsed, True, "MetadataChangeLog")

    def detach(self) -> None:
        """Look nothing up from now on (in a forked process, whose inherited connections must not
        be used): an id not resolved before raises UnresolvedSchema, for the parent to read."""
        self._detached = True

    def resolve(self, schema_id: int) -> _Writer:
        """The writer schema of an id (cached: ids never change); raises EventDecodeError."""
        writer = self._writers.get(schema_id)
        if writer is not None:
            return writer
        if self._detached:
            raise UnresolvedSchema(schema_id)
        text = self._lookup(schema_id) if self._lookup is not None else None
        if text is None:
            raise EventDecodeError(f"schema id {schema_id} is not in the schema registry")
        try:
            parsed = parse_schema(json.loads(text))
        except Exception as err:  # json and fastavro raise several types
            raise EventDecodeError(f"schema id {schema_id} is not a usable Avro schema: {err}") from None
        name = str(parsed.get("name", "")) if isinstance(parsed, dict) else ""
        if name.rsplit(".", 1)[-1] != "MetadataChangeLog":
            raise EventDecodeError(f"schema id {schema_id} is a {name or 'non-record'} schema, not a MetadataChangeLog")
        writer = _Writer(parsed, _canonical_fingerprint(parsed) == self.datahub.canonical, name)
        self._writers[schema_id] = writer
        return writer

    def decode(self, data: bytes) -> dict[str, Any]:
        """The MCL record of an encoded MCL, in Lodestar's form; raises EventDecodeError."""
        if not is_confluent(data):
            type_name, record = self.codec.decode(data)
            if type_name != MCL:
                raise EventDecodeError(f"a {type_name}, not a MetadataChangeLog")
            return record
        if len(data) < 5:
            raise EventDecodeError("a Confluent-framed record shorter than its 5-byte head")
        schema_id = int.from_bytes(data[1:5], "big")
        writer = self.resolve(schema_id)
        try:
            record = schemaless_reader(io.BytesIO(data[5:]), writer.parsed, None)
        except Exception as err:  # fastavro raises several types for truncated or corrupt bodies
            raise EventDecodeError(f"corrupt {writer.name} body (schema id {schema_id}): {err}") from None
        return from_datahub(record)

    def projector(self, want: Want) -> Callable[[bytes], dict[str, Any] | None]:
        """`project(data)`: the wanted fields of an MCL of Lodestar's current writer schema or of
        DataHub's pinned one, without decoding the rest; None for any other record (decode it).
        Raises IndexError or UnicodeDecodeError on a corrupt body, UnresolvedSchema as resolve."""
        lodestar_head = self.codec.head(MCL)
        lodestar = projection(self.codec.schema(MCL), self.codec.named, want)
        datahub = projection(self.datahub.schema, self.datahub.named, want)
        resolve = self.resolve

        def project(data: bytes) -> dict[str, Any] | None:
            if data[:10] == lodestar_head:
                return lodestar(data[10:])
            if is_confluent(data) and len(data) >= 5:
                try:
                    writer = resolve(int.from_bytes(data[1:5], "big"))
                except UnresolvedSchema:
                    raise
                except EventDecodeError:
                    return None  # the full decode says why
                if writer.is_datahub:
                    return datahub(data[5:])
            return None
        return project

