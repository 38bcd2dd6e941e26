"""Emitters: send proposals to Lodestar over REST (applied synchronously by GMS) or append them
to the MCP topic of the event log (applied by GMS's MCP consumer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ingest import topics
from ingest.eventlog import LogMessage
from ingest.proposal import Proposal
from ingest.rest import LodestarError, RestClient

if TYPE_CHECKING:
    from ingest.eventlog import EventLog

ACTOR_HEADER = "X-Lodestar-Actor"  # the MCP header naming who proposed (GMS records it as the actor)


class EmitError(Exception):
    """Proposals that were not delivered, or that Lodestar refused; the message says which and why."""


class Emitter(Protocol):
    def emit(self, proposals: Sequence[Proposal]) -> None:
        """Deliver the proposals; raises EmitError if any was not delivered or was refused."""

    def close(self) -> None: ...


class RestEmitter:
    """POST /v1/proposals on a GMS."""

    def __init__(self, server: str, token: str | None = None, timeout: float = 10.0):
        self.client = RestClient(server, token, timeout)

    def emit(self, proposals: Sequence[Proposal]) -> None:
        try:
            results = self.client.propose([p.to_json() for p in proposals])
        except LodestarError as err:
            raise EmitError(str(err)) from None
        failed = [(p, r) for p, r in zip(proposals, results, strict=False) if r.get("status") == "failed"]
        if failed:
            p, r = failed[0]
            raise EmitError(f"{len(failed)} of {len(proposals)} proposals refused; first: {p.aspect_name} of"
                            f" {p.entity_urn}: {r.get('message') or r}")

    def close(self) -> None:
        self.client.close()


class KafkaEmitter:
    """Appends to the MCP topic (key: the entity URN, so one entity's proposals keep their order)."""

    def __init__(self, log: EventLog, actor: str):
        from schemas.events import MCP, default_codec

        self.log, self.actor = log, actor
        self._type, self._codec = MCP, default_codec()

    @classmethod
    def connect(cls, bootstrap: str, prefix: str, actor: str) -> KafkaEmitter:
        from ingest.eventlog.kafka import KafkaEventLog

        return cls(KafkaEventLog(bootstrap, prefix), actor)

    def emit(self, proposals: Sequence[Proposal]) -> None:
        from ingest.backends.errors import BackendError

        messages = [LogMessage(p.entity_urn, self._codec.encode(self._type, {
            **p.to_record(), "headers": {**(p.headers or {}), ACTOR_HEADER: self.actor}})) for p in proposals]
        try:
            self.log.append(topics.MCP, messages)
        except BackendError as err:
            raise EmitError(str(err)) from None

    def close(self) -> None:
        self.log.close()
