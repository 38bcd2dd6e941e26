"""From an MCL on the event log to the change it makes to the read models."""

from __future__ import annotations

import orjson

from mcl_processor.changes import AspectChange, TimeseriesPoint
from schemas.events import MCL, EventCodec, EventDecodeError
from schemas.registry import EntityRegistry


class PoisonRecord(ValueError):
    """A record that is no MCL this installation can apply."""


class MclDecoder:
    def __init__(self, registry: EntityRegistry, codec: EventCodec):
        self.registry = registry
        self.codec = codec

    def decode(self, data: bytes) -> AspectChange | TimeseriesPoint:
        """The change an encoded MCL makes; raises PoisonRecord saying why it cannot be applied."""
        try:
            type_name, mcl = self.codec.decode(data)
        except EventDecodeError as err:
            raise PoisonRecord(str(err)) from None
        if type_name != MCL:
            raise PoisonRecord(f"a {type_name}, not a MetadataChangeLog")
        urn, aspect_name = mcl.get("entityUrn"), mcl.get("aspectName")
        entity = self.registry.entity(mcl["entityType"])
        spec = self.registry.aspect(aspect_name) if aspect_name else None
        if not urn or entity is None or spec is None or aspect_name not in entity.aspects:
            raise PoisonRecord(f"unknown entity or aspect {mcl['entityType']}/{aspect_name}")
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
        return AspectChange(urn, entity.name, aspect_name, version, value)


def _partition(value: dict) -> str:
    spec = value.get("partitionSpec")
    if isinstance(spec, dict) and "partition" not in spec and len(spec) == 1:
        spec = next(iter(spec.values()))  # the union wrapper {"...PartitionSpec": {...}}
    return str(spec.get("partition", "")) if isinstance(spec, dict) else ""
