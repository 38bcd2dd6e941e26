"""What GMS's MCP consumer reads from the MCP topic (and the MCE topic) as proposals:

- Lodestar's own MCP records (Avro single-object encoding, first bytes C3 01; schemas/events.py);
- DataHub's `MetadataChangeProposal` records in Confluent's wire format (first byte 0, then
  the writer schema's id in the schema registry: `datahub-kafka` sinks, `DatahubKafkaEmitter`),
  read with the writer schema from Lodestar's own registry (gms/schema_registry.py, read from
  the store, cached by id);
- DataHub's `MetadataChangeEvent` records (MCEs) in the same framing, split into one UPSERT
  proposal per aspect of the snapshot, as `?action=ingest` and MCE files are.

A DataHub record names no Lodestar actor unless its headers carry `X-Lodestar-Actor`; it is
applied as `DATAHUB_ACTOR` (with authorization on, that principal needs WRITE grants, as any).
Anything unreadable raises EventDecodeError, and the consumer sends the record to the failed
topic with the reason.
"""

from __future__ import annotations

from typing import Any

from gms.schema_registry import SchemaRegistry
from ingest.emitters import ACTOR_HEADER
from ingest.files import ProposalFileError, proposals_of_snapshot
from ingest.proposal import Proposal, ProposalError, parse_proposal
from schemas.confluent import ConfluentDecodeError, ConfluentDecoder, is_confluent
from schemas.events import MCP, EventCodec, EventDecodeError
from schemas.registry import EntityRegistry

DATAHUB_ACTOR = "urn:li:corpuser:datahub"  # who DataHub's records are applied as, unless their headers say
DATAHUB_MCP = "MetadataChangeProposal"
DATAHUB_MCE = "MetadataChangeEvent"


class ProposalReader:
    """Turns an MCP-topic record into proposals (several for an MCE); raises EventDecodeError
    or ProposalError."""

    def __init__(self, codec: EventCodec, registry: EntityRegistry, schemas: SchemaRegistry):
        self.codec = codec
        self.registry = registry
        self.confluent = ConfluentDecoder(lambda schema_id: _text(schemas, schema_id))

    def proposals(self, data: bytes) -> list[Proposal]:
        if not is_confluent(data):
            kind, mcp = self.codec.decode(data)
            if kind != MCP:
                raise EventDecodeError(f"a {kind} event, not a {MCP}")
            return [Proposal.from_record(mcp)]
        try:
            name, record = self.confluent.decode(data)
        except ConfluentDecodeError as err:
            raise EventDecodeError(str(err)) from None
        short = name.rsplit(".", 1)[-1]
        if short == DATAHUB_MCP:
            proposals = [_from_datahub_mcp(record)]
        elif short == DATAHUB_MCE:
            proposals = self._from_mce(record)
        else:
            raise EventDecodeError(f"a {name} record, neither a DataHub {DATAHUB_MCP} nor a {DATAHUB_MCE}")
        for proposal in proposals:
            proposal.headers.setdefault(ACTOR_HEADER, DATAHUB_ACTOR)
        return proposals

    def _from_mce(self, record: dict[str, Any]) -> list[Proposal]:
        system_metadata = record.get("systemMetadata")
        try:
            items = list(proposals_of_snapshot(record.get("proposedSnapshot"), self.registry, "MetadataChangeEvent",
                                               _clean(system_metadata) if isinstance(system_metadata, dict) else None))
        except ProposalFileError as err:
            raise EventDecodeError(str(err)) from None
        if not items:
            raise EventDecodeError("MetadataChangeEvent: the snapshot has no aspects")
        return [parse_proposal(item) for item in items]


def _from_datahub_mcp(record: dict[str, Any]) -> Proposal:
    aspect = record.get("aspect")
    if isinstance(aspect, dict) and isinstance(aspect.get("value"), bytes):
        aspect = {"value": aspect["value"].decode("utf-8", "replace"), "contentType": aspect.get("contentType")}
    system_metadata = record.get("systemMetadata")
    return parse_proposal({
        "entityType": record.get("entityType"), "entityUrn": record.get("entityUrn"),
        "changeType": record.get("changeType"), "aspectName": record.get("aspectName"), "aspect": aspect,
        "systemMetadata": _clean(system_metadata) if isinstance(system_metadata, dict) else None,
        "headers": record.get("headers") or {},
    })


def _clean(system_metadata: dict[str, Any]) -> dict[str, Any] | None:
    """DataHub's systemMetadata without its unset fields (Avro reads every field, nulls too)."""
    return {key: value for key, value in system_metadata.items() if value is not None} or None


def _text(schemas: SchemaRegistry, schema_id: int) -> str | None:
    found = schemas.schema(schema_id)
    return None if found is None else found.schema


__all__ = ["DATAHUB_ACTOR", "ProposalError", "ProposalReader"]
