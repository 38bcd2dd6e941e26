"""From an MCL on the event log to the change it makes to the read models."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastavro.schema import fingerprint, load_schema, to_parsing_canonical_form

from mcl_processor.changes import AspectChange, TimeseriesDeletion, TimeseriesPoint
from schemas.events import MARKER, MCL, EventCodec, EventDecodeError
from schemas.projection import projection
from schemas.registry import SCHEMA_DIR, AspectSpec, EntityRegistry, EntitySpec, load_named_types


class PoisonRecord(ValueError):
    """A record that is no MCL this installation can apply."""


_WANT = {"entityType": True, "entityUrn": True, "changeType": True, "aspectName": True,
         "aspect": {"value": True}, "systemMetadata": {"version": True}}


class MclDecoder:
    """Decodes MCLs; those of the current MCL schema through a projection of the fields needed."""

    def __init__(self, registry: EntityRegistry, codec: EventCodec, schema_dir: Path = SCHEMA_DIR):
        self.registry = registry
        self.codec = codec
        named = load_named_types(schema_dir)
        self._fingerprint = MARKER + bytes.fromhex(fingerprint(to_parsing_canonical_form(
            load_schema(schema_dir / f"{MCL}.avsc")), "CRC-64-AVRO"))
        self._project = projection(named[MCL], named, _WANT)
        self._kinds: dict[tuple[str, str | None], tuple[EntitySpec, AspectSpec]] = {}

    def _kinds_of(self, entity_type: str, aspect_name: str | None) -> tuple[EntitySpec | None, AspectSpec | None]:
        """The entity and aspect of an MCL, (None, None) unless the entity has the aspect; known
        pairs are remembered."""
        entity = self.registry.entity(entity_type)
        spec = self.registry.aspect(aspect_name) if aspect_name else None
        if entity is None or spec is None or aspect_name not in entity.aspects:
            return None, None
        self._kinds[entity_type, aspect_name] = entity, spec
        return entity, spec

    def _mcl(self, data: bytes) -> dict:
        if data[:10] == self._fingerprint:
            try:
                return self._project(data[10:])
            except (IndexError, UnicodeDecodeError) as err:
                raise PoisonRecord(f"corrupt {MCL} body: {err!r}") from None
        try:
            type_name, mcl = self.codec.decode(data)
        except EventDecodeError as err:
            raise PoisonRecord(str(err)) from None
        if type_name != MCL:
            raise PoisonRecord(f"a {type_name}, not a MetadataChangeLog")
        return mcl

    def decode(self, data: bytes) -> AspectChange | TimeseriesPoint | TimeseriesDeletion:
        """The change an encoded MCL makes; raises PoisonRecord saying why it cannot be applied."""
        mcl = self._mcl(data)
        urn, aspect_name = mcl.get("entityUrn"), mcl.get("aspectName")
        entity, spec = self._kinds.get((mcl["entityType"], aspect_name)) or self._kinds_of(mcl["entityType"],
                                                                                           aspect_name)
        if not urn or entity is None or spec is None:  # (both or neither)
            raise PoisonRecord(f"unknown entity or aspect {mcl['entityType']}/{aspect_name}")
        if spec.is_timeseries and mcl["changeType"] == "DELETE":
            return _deletion(urn, aspect_name, mcl.get("aspect"))
        value = value_json = None
        if mcl["changeType"] != "DELETE":
            try:
                value_json = mcl["aspect"]["value"].decode()
                value = orjson.loads(value_json)
            except (TypeError, KeyError, UnicodeDecodeError, orjson.JSONDecodeError) as err:
                raise PoisonRecord(f"unreadable aspect value: {err}") from None
        if spec.is_timeseries:
            if not isinstance(value, dict) or not isinstance(value.get("timestampMillis"), int):
                raise PoisonRecord("timeseries value without timestampMillis")
            return TimeseriesPoint(urn, aspect_name, value["timestampMillis"], _partition(value),
                                   value.get("messageId") or "", value_json or "")
        version = int((mcl.get("systemMetadata") or {}).get("version") or 0)
        return AspectChange(urn, entity.name, aspect_name, version, value, value_json)


def _deletion(urn: str, aspect_name: str, aspect: dict | None) -> TimeseriesDeletion:
    """A timeseries DELETE: its value, if any, is the window {"startTimeMillis", "endTimeMillis"}."""
    window: object = {}
    if aspect is not None and aspect.get("value") is not None:
        try:
            window = orjson.loads(aspect["value"])
        except orjson.JSONDecodeError as err:
            raise PoisonRecord(f"unreadable timeseries deletion window: {err}") from None
    if not isinstance(window, dict):
        raise PoisonRecord("a timeseries deletion's window is not a JSON object")
    start, end = window.get("startTimeMillis"), window.get("endTimeMillis")
    if not all(bound is None or isinstance(bound, int) for bound in (start, end)):
        raise PoisonRecord("a timeseries deletion's bounds must be integers")
    return TimeseriesDeletion(urn, aspect_name, start, end)


def _partition(value: dict) -> str:
    spec = value.get("partitionSpec")
    if isinstance(spec, dict) and "partition" not in spec and len(spec) == 1:
        spec = next(iter(spec.values()))  # the union wrapper {"...PartitionSpec": {...}}
    return str(spec.get("partition", "")) if isinstance(spec, dict) else ""
