"""From an MCL on the event log to the change it makes to the read models."""

from __future__ import annotations

import orjson

from mcl_processor.changes import AspectChange, TimeseriesDeletion, TimeseriesPoint
from schemas.events import EventCodec, EventDecodeError
from schemas.mcl_wire import MclReader, UnresolvedSchema
from schemas.registry import AspectSpec, EntityRegistry, EntitySpec


class PoisonRecord(ValueError):
    """A record that is no MCL this installation can apply."""


_WANT = {"entityType": True, "entityUrn": True, "changeType": True, "aspectName": True,
         "aspect": {"value": True}, "systemMetadata": {"version": True}}


class MclDecoder:
    """Decodes MCLs of either wire format (schemas.mcl_wire); those of Lodestar's current MCL
    schema and of DataHub's through a projection of the fields needed. Given an EventCodec, it
    reads Confluent-framed MCLs whose schema id is the one Lodestar's registry gives DataHub's
    schema; given an MclReader, those its lookup finds."""

    def __init__(self, registry: EntityRegistry, reader: MclReader | EventCodec):
        self.registry = registry
        self.reader = reader if isinstance(reader, MclReader) else MclReader(reader)
        self._project = self.reader.projector(_WANT)
        self._kinds: dict[tuple[str, str | None], tuple[EntitySpec, AspectSpec]] = {}

    def detach(self) -> None:
        """Look no schema up from now on (see MclReader.detach)."""
        self.reader.detach()

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
        """Raises UnresolvedSchema (a detached reader's unknown schema id) or PoisonRecord."""
        try:
            projected = self._project(data)
        except (IndexError, UnicodeDecodeError) as err:
            raise PoisonRecord(f"corrupt MetadataChangeLog body: {err!r}") from None
        if projected is not None:
            return projected
        try:
            return self.reader.decode(data)
        except UnresolvedSchema:
            raise
        except EventDecodeError as err:
            raise PoisonRecord(str(err)) from None

    def decode(self, data: bytes) -> AspectChange | TimeseriesPoint | TimeseriesDeletion:
        """The change an encoded MCL makes; raises PoisonRecord saying why it cannot be applied
        (or UnresolvedSchema, see _mcl)."""
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
