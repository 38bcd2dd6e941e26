"""GMS assembled: registry, aspect store, event log, write path, outbox relay, MCP intake."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from gms import tracing
from gms.access import AccessControl, needed, target
from gms.access.audit import change_events, watched
from gms.errors import ProposalFailed
from gms.external_registry import ExternalSchemaRegistry
from gms.intake import ProposalReader
from gms.metrics import count_results
from gms.outbox import OutboxRelay
from gms.schema_registry import SchemaRegistry, store_reader
from gms.store import AspectStore
from gms.store.sqlite import SqliteAspectStore
from gms.validation import DEFAULT_MAX_ASPECT_BYTES, ProposalValidator, ValidProposal
from gms.version_sets import follow_ups
from gms.write_path import Result, WritePath
from ingest import topics
from ingest.backends.errors import BackendUnavailable
from ingest.emitters import ACTOR_HEADER
from ingest.eventlog import EventLog, LogMessage, LogRecord
from ingest.eventlog.loop import ConsumeLoop, Retry
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.faults import crash_point, fail_point
from ingest.proposal import Proposal, ProposalError
from schemas.events import FAILED_MCP, MCP, EventCodec, EventDecodeError, default_codec
from schemas.mcl_wire import CONFLUENT, LODESTAR, MclReader, datahub_mcl_schema, mcl_encoder, subject
from schemas.registry import EntityRegistry, default_registry

log = logging.getLogger(__name__)
UNKNOWN_ACTOR = "urn:li:corpuser:unknown"
SYSTEM_ACTOR = "urn:li:corpuser:__lodestar"  # who GMS's own writes (registering the MCL schema) are made as
MCP_GROUP = topics.MCP_GROUP
RETRY_AFTER = 1.0  # seconds before the MCP consumer reads again after a failed batch
MCP_BATCH = 500  # proposals the MCP consumer polls at most at a time
DATABASE = "lodestar.db"


@dataclass(frozen=True)
class Limits:
    max_aspect_bytes: int = DEFAULT_MAX_ASPECT_BYTES
    max_request_bytes: int = 64 * 1024 * 1024
    max_batch: int = 10_000
    #: the longest tag, property key or value of the v3 metadata API (CDAP's default: 50)
    metadata_max_length: int = 50


class Gms:
    """The write and read side of the metadata service over one store and one log."""

    def __init__(self, store: AspectStore, log_: EventLog, registry: EntityRegistry | None = None,
                 codec: EventCodec | None = None, limits: Limits = Limits(), wire_format: str = LODESTAR,
                 schema_registry: ExternalSchemaRegistry | None = None):
        self.registry = registry or default_registry()
        self.codec = codec or default_codec()
        self.store = store
        self.log = log_
        self.limits = limits
        self.writes = WritePath(self.registry, store, self.codec,
                                ProposalValidator(self.registry, limits.max_aspect_bytes))
        self.relay = OutboxRelay(store, log_)
        self.access = AccessControl(store)
        #: where schemas are registered and looked up: the registry of /schema-registry/api/, kept in
        #: the store, or an external one (`kafka.schema_registry_url`)
        self.schema_registry = schema_registry or SchemaRegistry(
            lambda proposals, actor: self.apply(proposals, actor), store_reader(store))
        #: what the MCP consumer reads: Lodestar's MCPs, DataHub's MCPs and MCEs in Confluent framing
        self.proposal_reader = ProposalReader(self.codec, self.registry, self.schema_registry)
        #: reads MCLs of both wire formats, Confluent's writer schemas from the registry
        self.mcl_reader = MclReader(self.codec, self.schema_text)
        self.wire_format = wire_format
        if wire_format == CONFLUENT:
            self.writes.encode_mcl = mcl_encoder(CONFLUENT, self._register_mcl_schema())
        elif wire_format != LODESTAR:
            raise ValueError(f"unknown wire format {wire_format!r} (one of {LODESTAR}, {CONFLUENT})")
        #: whether proposals from the MCP topic are checked against their actor's grants
        #: (`lodestar serve` and `lodestar gms` turn it on; library users are trusted)
        self.authorize_consumed = False
        self._publish_left_pending()

    def _publish_left_pending(self) -> None:
        """Publish what a previous process committed but did not publish. The backends being
        unavailable (a lightweight transaction timing out on a busy ring, the log's brokers down)
        does not stop the start: it is published by the next write or the relay's next sweep."""
        try:
            self.relay.publish_pending()
        except BackendUnavailable as err:
            log.warning("publishing the MCLs a previous process left pending: %s; left to the next write or"
                        " relay sweep", err)

    def schema_text(self, schema_id: int) -> str | None:
        """The text of a schema in the registry (None: no such id): the lookup of MCL readers."""
        found = self.schema_registry.schema(schema_id)
        return None if found is None else found.schema

    def _register_mcl_schema(self) -> int:
        """The id of DataHub's MCL schema, registered under both MCL topics' subjects. The
        registration's own MCLs are written with the id it is about to get (another instance
        registering a colliding schema in that instant is the one case where they would not be)."""
        text = datahub_mcl_schema().text
        if isinstance(self.schema_registry, SchemaRegistry):  # (an external one writes no MCLs)
            self.writes.encode_mcl = mcl_encoder(CONFLUENT, self.schema_registry.planned_id(text))
        ids = {self.schema_registry.register(SYSTEM_ACTOR, subject(topic), text) for topic in topics.MCL_TOPICS}
        (schema_id,) = ids
        return schema_id

    @classmethod
    def embedded(cls, data_dir: Path, limits: Limits = Limits(), wire_format: str = LODESTAR,
                 schema_registry: ExternalSchemaRegistry | None = None) -> Gms:
        """GMS on the embedded adapters: aspects and topics in `lodestar.db` in data_dir, so a
        version and its MCL commit in one transaction."""
        data_dir.mkdir(parents=True, exist_ok=True)
        log_ = SqliteEventLog(data_dir / DATABASE)
        return cls(SqliteAspectStore(data_dir / DATABASE, colocated_log=log_), log_, limits=limits,
                   wire_format=wire_format, schema_registry=schema_registry)

    def apply(self, proposals: Sequence[Proposal | ProposalError], actor: str,
              request_headers: Mapping[str, str] | None = None, authorize: bool = False,
              privileges: frozenset[str] | None = None, all_or_none: bool = False) -> list[Result]:
        """Apply proposals synchronously; their MCLs are published before this returns. With
        `authorize`, a proposal the actor may not make fails (403 forbidden): it needs one of
        `privileges`, or by default what `access.needed` says for its change. With
        `all_or_none`, nothing is applied if any proposal fails the checks made before the
        stored state is read (validation, authorization): see WritePath.apply. Changes to
        users, tokens, grants, policies and ingestion sources are recorded in the audit log
        (gms/access/audit.py)."""
        existed = {p.entity_urn for p in proposals if watched(p) and self._exists(p.entity_urn, p.entity_type)}
        results = self.writes.apply(proposals, actor, request_headers,
                                    self._authorizer(actor, privileges) if authorize else None, all_or_none)
        for follow_up in follow_ups(proposals, [r.status for r in results], self.store):  # version sets
            if follow_up:
                self.writes.apply(follow_up, actor)
        if audit := change_events(proposals, [r.status for r in results], actor, existed, self._key_aspect):
            self.writes.apply(audit, actor)
        crash_point("after-commit")
        self.relay.publish_pending()
        count_results(results)
        if log.isEnabledFor(logging.INFO):
            _log_failures(proposals, results)
        return results

    def _key_aspect(self, entity_type: str) -> str | None:
        spec = self.registry.entity(entity_type)
        return spec.key_aspect if spec is not None else None

    def _exists(self, urn: str, entity_type: str) -> bool:
        key = self._key_aspect(entity_type)
        row = self.store.get(urn, key) if key else None
        return row is not None and row.exists

    def check(self, proposals: Sequence[Proposal | ProposalError], actor: str,
              request_headers: Mapping[str, str] | None = None) -> list[ValidProposal | ProposalFailed]:
        """Each proposal validated and authorized for the actor, nothing applied (what can be
        refused before a proposal is queued)."""
        return self.writes.check(proposals, request_headers, self._authorizer(actor, None))

    def _authorizer(self, actor: str, privileges: frozenset[str] | None) -> Callable[[ValidProposal], None]:
        """Checks a proposal as the actor: each aspect it changes needs `privileges`, or by
        default what `access.needed` says; deleting a key aspect deletes every live aspect of
        the entity, so it is checked as the deletion of each (SYSTEM-scope metadata, a
        principal's status: ADMIN)."""
        def check(item: ValidProposal) -> None:
            urn, change = str(item.urn), item.proposal.change_type
            aspects = [item.aspect.name]
            if change == "DELETE" and item.aspect.key_for is not None:
                aspects += [row.aspect for row in self.store.entity(urn) if row.exists and row.aspect not in aspects]
            self.authorize_change(actor, urn, change, aspects, privileges)
        return check

    def authorize_change(self, actor: str, urn: str, change: str, aspects: Iterable[str],
                         privileges: frozenset[str] | None = None) -> None:
        """Raises ProposalFailed (403) unless the actor may make `change` (UPSERT, DELETE, ...)
        to each of the aspects of `urn`: `privileges`, or by default what `access.needed` says."""
        entity = urn.removeprefix("urn:li:").partition(":")[0]
        for aspect in aspects:
            wanted = privileges or needed(entity, change, aspect)
            self.access.require(actor, wanted, target(entity, urn, (aspect,)), urn)

    def delete_entity(self, urn: str, hard: bool, actor: str, authorize: bool = False) -> Result | None:
        """Soft delete (status.removed = true) or, with hard, delete every aspect and purge
        its history. With `authorize`, checked as the actor's (a soft delete as a deletion of
        `status`, a hard one as the deletion of every aspect). None when the entity does not exist."""
        entity_type = urn.removeprefix("urn:li:").partition(":")[0]
        spec = self.registry.entity(entity_type)
        if spec is None or not self.store.entity(urn):
            return None
        if not hard:
            (result,) = self.apply([Proposal(entity_type, urn, "UPSERT", "status", {"removed": True})], actor,
                                   authorize=authorize, privileges=needed(entity_type, "DELETE", "status"))
            return result
        (result,) = self.apply([Proposal(entity_type, urn, "DELETE", spec.key_aspect)], actor, authorize=authorize)
        if result.failure is None:
            with self.store.batch() as batch:
                batch.purge(urn)
        return result

    def delete_timeseries(self, urn: str, aspect: str, start_ms: int | None, end_ms: int | None,
                          actor: str) -> None:
        """Delete the points of a timeseries aspect in a window: a DELETE MCL on the timeseries
        topic, published before this returns (see WritePath.delete_timeseries)."""
        self.writes.delete_timeseries(urn, aspect, start_ms, end_ms, actor)
        self.relay.publish_pending()

    def enqueue(self, proposals: Sequence[Proposal], actor: str) -> None:
        """Append proposals to the MCP topic for asynchronous application."""
        self.log.append(topics.MCP, [
            LogMessage(p.entity_urn, self.codec.encode(MCP, {**p.to_record(), "headers": {
                **(p.headers or {}), ACTOR_HEADER: actor}}))
            for p in proposals
        ])

    def consume_proposals(self, stop: threading.Event, poll_timeout: float = 0.5,
                          retry_after: float = RETRY_AFTER) -> None:
        """Apply proposals from the MCP topic until stop is set; failures go to the FailedMCP topic.
        Offsets are committed after the proposals are applied (at least once). When a batch
        fails (a backend down), the consumer starts again from the committed offsets after
        `retry_after` seconds, so an outage pauses consumption instead of ending it."""
        def failed(_: list[LogRecord]) -> None:
            log.exception("applying proposals from %s failed; reading again from the committed offsets"
                          " in %gs", topics.MCP, retry_after)

        ConsumeLoop(self.log, MCP_GROUP, list(topics.PROPOSAL_TOPICS), max_records=MCP_BATCH, poll_timeout=poll_timeout,
                    retry=Retry(retry_after, failed)).run(self._consume, stop)

    def _consume(self, records: list[LogRecord]) -> None:
        """Apply a batch of the MCP topic (the loop commits it once this returned)."""
        tracing.begin(f"{records[0].topic}/{records[0].partition}@{records[0].offset}")
        self._apply_records(records)
        fail_point("mcp-before-commit")

    def _apply_records(self, records: Sequence[LogRecord]) -> None:
        failed: list[tuple[int, LogMessage]] = []  # by position, so the FailedMCP topic keeps their order
        readable: list[tuple[str, int, Proposal]] = []
        for position, record in enumerate(records):
            try:
                proposals = self.proposal_reader.proposals(record.value)  # an MCE gives several
            except (EventDecodeError, ProposalError) as err:
                log.warning("skipping unreadable proposal at %s/%d@%d: %s",
                            record.topic, record.partition, record.offset, err)
                failed.append((position, self._failed(_unreadable(record), f"unreadable proposal: {err}")))
                continue
            readable.extend((proposal.headers.pop(ACTOR_HEADER, UNKNOWN_ACTOR), position, proposal)
                            for proposal in proposals)
        for actor, group in groupby(readable, key=lambda item: item[0]):  # one batch per run of one actor
            items = list(group)
            results = self.apply([proposal for _, _, proposal in items], actor, authorize=self.authorize_consumed)
            for (_, position, proposal), result in zip(items, results, strict=True):
                if result.failure is not None:
                    failed.append((position, self._failed(proposal.to_record(), _reason(result.failure))))
        if failed:
            self.log.append(topics.FAILED_MCP, [message for _, message in sorted(failed, key=lambda f: f[0])])

    def _failed(self, mcp: dict, error: str) -> LogMessage:
        return LogMessage(mcp.get("entityUrn") or "", self.codec.encode(FAILED_MCP, {"mcp": mcp, "error": error}))

    def close(self) -> None:
        self.writes.close()
        self.store.close()
        self.log.close()


def _log_failures(proposals: Sequence[Proposal | ProposalError], results: Sequence[Result]) -> None:
    """One log line per failed proposal, with its URN and aspect (and the trace id)."""
    for proposal, result in zip(proposals, results, strict=True):
        if result.failure is not None:
            log.info("proposal failed: %s: %s", result.failure.code, result.failure.message,
                     extra={"urn": getattr(proposal, "entity_urn", None),
                            "aspect": getattr(proposal, "aspect_name", None)})


def _reason(failure: ProposalFailed) -> str:
    return f"{failure.code}: {failure.message}"


def _unreadable(record: LogRecord) -> dict:
    return {"entityType": "unknown", "entityUrn": record.key, "changeType": "UPSERT", "aspectName": None,
            "aspect": None, "entityKeyAspect": None, "systemMetadata": None, "headers": None}
