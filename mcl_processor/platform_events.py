"""DataHub's platform events: the EntityChangeEvents of every versioned MCL
(mcl_processor/change_events.py) on `PlatformEvent_v1`, as DataHub's `PlatformEvent` records
(name `entityChangeEvent`, the event as the JSON payload) in Confluent's framing, the schema
registered in the schema registry under `<prefix>PlatformEvent_v1-value`: what DataHub Actions'
Kafka event source reads.

The publisher is a consumer group of its own (`platform-events`) on
`MetadataChangeLog_Versioned_v1`, on the consume loop every consumer uses
(ingest/eventlog/loop.py). It runs beside the MCL processor, in the process that has that
role, but apart from it: neither waits for the other, and each commits its own offsets.

- **No loss**: a batch's offsets are committed once its events were appended; a failure (the
  log or the registry down) reads again from the committed offsets after RETRY_AFTER seconds.
- **Exactly once**: the events of one MCL partition are appended as producer
  `platform-events.<topic>.<partition>`, event i of the MCL at offset o with sequence
  `o * PER_MCL + i`; the log drops what it stored already (EventLog.append), so a batch
  handled again after a crash or a rebalance adds only what was missing. (So the sequences
  follow the MCL topic's offsets: an MCL topic deleted and made again, its offsets starting
  over, needs the producers' sequences dropped too, else its events count as published.)
- **In order per entity**: an event is keyed by its MCL's entity URN (a schema field's event
  by its dataset's), so all of an entity's events share a partition, appended in the order
  of its MCLs (which a partition of the MCL topic holds in version order).

A record that is no readable MCL is logged with its position and skipped, as the MCL
processor does.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import orjson
from fastavro import parse_schema, schemaless_writer

from ingest import topics
from ingest.eventlog import EventLog, LogMessage, LogRecord
from ingest.eventlog.loop import ConsumeLoop, Retry
from ingest.faults import crash_point
from mcl_processor.change_events import entity_change_events
from schemas.confluent import frame
from schemas.datahub_model import schema_directory
from schemas.events import EventDecodeError

log = logging.getLogger(__name__)
GROUP = topics.PLATFORM_EVENT_GROUP
PER_MCL = 1 << 20  # events one MCL may give (sequence numbers are offset * PER_MCL + index)
RETRY_AFTER = 1.0
EVENT_NAME = "entityChangeEvent"
CONTENT_TYPE = "application/json"
ReadMcl = Callable[[bytes], dict[str, Any]]  # an encoded MCL as its record; raises EventDecodeError
Register = Callable[[str, str], int]  # (subject, schema text) -> the schema's id in the registry


def platform_event_schema() -> str:
    """DataHub's PlatformEvent schema, as the pinned acryl-datahub package ships it."""
    return (schema_directory() / "PlatformEvent.avsc").read_text()


class PlatformEventPublisher:
    """Publishes the EntityChangeEvents of the MCLs on `log_`; `read` decodes an MCL record,
    `register` registers the PlatformEvent schema (once, on the first batch), `prefix` is the
    Kafka topic prefix (the registry subject names the topic as Kafka knows it)."""

    def __init__(self, log_: EventLog, read: ReadMcl, register: Register, key_aspects: frozenset[str],
                 prefix: str = ""):
        self.log = log_
        self.read = read
        self.register = register
        self.key_aspects = key_aspects
        self.subject = f"{prefix}{topics.PLATFORM_EVENT}-value"
        self._schema_text = platform_event_schema()
        _check_layout(parse_schema(json.loads(self._schema_text)))
        self._head: bytes | None = None  # the framing, once the schema's id is known

    def run(self, stop: threading.Event, poll_timeout: float = 0.5, max_records: int = 1000) -> None:
        """Publish until stop is set (see the module docstring)."""
        ConsumeLoop(self.log, GROUP, [topics.MCL_VERSIONED], max_records=max_records, poll_timeout=poll_timeout,
                    retry=Retry(RETRY_AFTER, _failed)).run(self.publish, stop)

    def publish(self, records: list[LogRecord]) -> None:
        """Append the events of records (in log order, each partition's as its own producer)."""
        if self._head is None:
            self._head = frame(self.register(self.subject, self._schema_text), b"")
        batches: dict[tuple[str, int], list[LogMessage]] = {}
        for record in records:
            try:
                mcl = _Mcl(self.read(record.value))
                events = entity_change_events(mcl, self.key_aspects)
            except (ValueError, TypeError, AttributeError) as err:  # EventDecodeError, and what no GMS writes
                log.warning("no platform events of the record at %s/%d@%d: %s", record.topic, record.partition,
                            record.offset, err)
                continue
            if len(events) > PER_MCL:
                log.warning("MCL at %s/%d@%d gives %d events; the first %d are published", record.topic,
                            record.partition, record.offset, len(events), PER_MCL)
            messages = batches.setdefault((record.topic, record.partition), [])
            messages += [LogMessage(mcl.urn, self.encode(event), record.offset * PER_MCL + index)
                         for index, event in enumerate(events[:PER_MCL])]
        for (topic, partition), messages in batches.items():
            if messages:
                self.log.append(topics.PLATFORM_EVENT, messages, producer=f"{GROUP}.{topic}.{partition}")
                crash_point("platform-events-after-append")

    def encode(self, event: dict[str, Any]) -> bytes:
        """An EntityChangeEvent as a Confluent-framed PlatformEvent."""
        assert self._head is not None
        return self._head + platform_event_body(event["auditStamp"]["time"], orjson.dumps(event))


def platform_event_body(timestamp: int, payload: bytes) -> bytes:
    """The Avro encoding of a PlatformEvent {header: {timestampMillis}, name: EVENT_NAME, payload:
    {value, contentType: JSON}}, written directly: a tenth of what a general encoder's call costs
    (`_check_layout` makes sure the pinned schema is still laid out so)."""
    return b"".join((_avro_long(timestamp), _NAME, _avro_long(len(payload)), payload, _CONTENT_TYPE))


def _avro_long(n: int) -> bytes:
    """Avro's long: zigzag, then base-128 varint, low groups first."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_string(text: str) -> bytes:
    data = text.encode()
    return _avro_long(len(data)) + data


_NAME = _avro_string(EVENT_NAME)
_CONTENT_TYPE = _avro_string(CONTENT_TYPE)


def _check_layout(schema: Any) -> None:
    """Fail at start-up, not with unreadable events, if the pinned PlatformEvent schema is not
    the layout `platform_event_body` writes: compared with the general encoder on a sample."""
    sample = {"header": {"timestampMillis": -1_700_000_000_123}, "name": EVENT_NAME,
              "payload": {"value": b"{}", "contentType": CONTENT_TYPE}}
    out = io.BytesIO()
    schemaless_writer(out, schema, sample)
    if out.getvalue() != platform_event_body(-1_700_000_000_123, b"{}"):
        raise RuntimeError("the pinned PlatformEvent schema is not laid out as platform_events.py writes it")


class _Mcl:
    """An MCL record as change_events reads it (values parsed)."""

    def __init__(self, mcl: dict[str, Any]):
        if not isinstance(mcl.get("entityUrn"), str) or mcl["entityUrn"].count(":") < 3:
            raise EventDecodeError(f"an MCL without an entity URN: {mcl.get('entityUrn')!r}")
        self.urn: str = mcl["entityUrn"]
        self.aspect: str | None = mcl.get("aspectName")
        self.change_type: str = mcl.get("changeType") or "UPSERT"
        self.created: dict[str, Any] | None = mcl.get("created")
        try:
            self.value = _json(mcl.get("aspect"))
            self.previous_value = _json(mcl.get("previousAspectValue"))
        except (UnicodeDecodeError, orjson.JSONDecodeError) as err:
            raise EventDecodeError(f"unreadable aspect value: {err}") from None


def _json(aspect: dict[str, Any] | None) -> Any:
    return None if aspect is None or aspect.get("value") is None else orjson.loads(aspect["value"])


def _failed(batch: list[LogRecord]) -> None:
    where = f"MCL batch at {batch[0].topic}/{batch[0].partition}@{batch[0].offset}" if batch \
        else f"reading {topics.MCL_VERSIONED}"
    log.exception("platform events of %s failed; retrying", where)
