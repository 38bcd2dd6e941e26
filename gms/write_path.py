"""Applies validated proposals to the aspect store: change types, conditions, versions, MCLs.

One call applies a list of proposals in order inside one store batch; each proposal is
its own atomic unit (its version row, the entity's key aspect when new, and its MCLs are
written together or not at all), and one failing proposal does not stop the others. The
versions one call writes all carry the same time (`aspectModified`), as DataHub stamps the
aspects of one request (an MCE's, a batch's) alike: its timeline shows them as one transaction.
On a store without multi-partition transactions (Cassandra) atomicity stops at one entity:
the proposals of a call to one entity are written together (`AspectBatch.together`), as one
conditional write, all or none; a retry after another writer took one of their versions
applies them again on a fresh read, after a random pause that grows (so that racing writers
stop colliding), for up to CONFLICT_RETRY_S seconds before answering 409.

A proposal reads and writes its own entity only, so on a store with `entity_concurrency` > 1
the entities of a call are applied concurrently, up to that many at once, each entity's
proposals in order on one thread: the same versions, MCLs and results as in order, with the
store's round trips overlapped instead of one after the other. The batch is told of every
entity it will write versions of, and how many (`prefetch`), before the first is applied, so
such a store reads each entity once, and may read several together.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from gms.aspect_mutations import MUTATIONS
from gms.errors import ProposalFailed
from gms.patch import apply_patch, default_value
from gms.patch_stamps import fill_stamps
from gms.store import AspectBatch, AspectStore, OutboxMessage, StoredAspect
from gms.structured_properties import DEFINITION, check_definition_change, checked_assignments
from gms.validation import ProposalValidator, ValidProposal, canonical_json
from gms.version_sets import VERSION, mark_latest
from ingest import topics
from ingest.proposal import Proposal, ProposalError
from schemas.events import EventCodec
from schemas.mcl_wire import LODESTAR, mcl_encoder
from schemas.registry import EntityRegistry

CONFLICT_RETRY_S = 10.0  # how long a proposal retries while other writers keep taking its entity's versions
CONFLICT_PAUSE_MAX_S = 0.05


@dataclass(frozen=True, slots=True)
class Result:
    """What happened to one proposal."""

    status: str  # applied | noop | dropped | failed | skipped (not applied: another proposal failed its checks)
    version: int | None = None
    failure: ProposalFailed | None = None

    @property
    def http_status(self) -> int:
        return self.failure.http_status if self.failure else 200

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status}
        if self.version is not None:
            body["version"] = self.version
        if self.failure is not None:
            body.update(self.failure.to_json())
        return body


class _Conflict(Exception):
    """Another writer took the version; re-read and try again."""


class WritePath:
    def __init__(self, registry: EntityRegistry, store: AspectStore, codec: EventCodec,
                 validator: ProposalValidator | None = None):
        self.registry = registry
        self.store = store
        self.codec = codec
        #: encodes an MCL record in the topics' wire format (schemas.mcl_wire); GMS sets it
        self.encode_mcl = mcl_encoder(LODESTAR, codec=codec)
        self.validator = validator or ProposalValidator(registry)
        # Started by the first call with several entities, one per CPU priority of the calling
        # threads (a thread's niceness is inherited by the threads it starts: lodestar/api/writers.py).
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._pool_lock = threading.Lock()

    def check(self, proposals: Sequence[Proposal | ProposalError], request_headers: Mapping[str, str] | None = None,
              authorize: Callable[[ValidProposal], None] | None = None) -> list[ValidProposal | ProposalFailed]:
        """Each proposal validated (registry, URN, schema, size, headers) and, with `authorize`,
        authorized: what can be known of it before the stored state is read."""
        checked: list[ValidProposal | ProposalFailed] = []
        for proposal in proposals:
            try:
                item = self.validator.validate(proposal, request_headers)
                if authorize is not None:
                    authorize(item)
                checked.append(item)
            except ProposalFailed as failure:
                checked.append(failure)
        return checked

    def apply(self, proposals: Sequence[Proposal | ProposalError], actor: str,
              request_headers: Mapping[str, str] | None = None,
              authorize: Callable[[ValidProposal], None] | None = None, all_or_none: bool = False) -> list[Result]:
        """Validate and apply proposals in order; one Result each. `authorize` raises
        ProposalFailed for a valid proposal the actor may not make. With `all_or_none`, nothing
        is applied when any proposal fails those checks: the others' results are `skipped`."""
        results: list[Result | None] = [None] * len(proposals)
        valid: list[tuple[int, ValidProposal]] = []
        for i, item in enumerate(self.check(proposals, request_headers, authorize)):
            if isinstance(item, ProposalFailed):
                results[i] = Result("failed", failure=item)
            else:
                valid.append((i, item))
        if all_or_none and len(valid) < len(proposals):
            return [result or Result("skipped") for result in results]
        if valid:
            with self.store.batch() as batch:
                for i, result in self._apply_all(batch, valid, actor):
                    results[i] = result
        return results  # type: ignore[return-value]

    def delete_timeseries(self, urn: str, aspect_name: str, start_ms: int | None, end_ms: int | None,
                          actor: str) -> None:
        """Delete the points of a timeseries aspect of an entity in a window (a bound None is
        open): a DELETE MCL on the timeseries topic whose value is the window, which the MCL
        processor applies to the timeseries store (its only writer). Raises ProposalFailed for
        an unknown entity type, URN or aspect, or one that is not a timeseries aspect of it."""
        entity = self.registry.entity(urn.removeprefix("urn:li:").partition(":")[0])
        if entity is None:
            raise ProposalFailed("unknown_entity_type", f"urn: unknown entity type in {urn!r}")
        try:
            self.registry.parse_urn(urn, entity.name)
        except ValueError as err:
            raise ProposalFailed("invalid_urn", f"urn: {err}") from None
        aspect = self.registry.aspect(aspect_name)
        if aspect is None or aspect_name not in entity.aspects:
            raise ProposalFailed("aspect_not_in_entity", f"aspectName: {entity.name} has no aspect {aspect_name!r}")
        if not aspect.is_timeseries:
            raise ProposalFailed("unsupported_change_type", f"aspectName: {aspect_name} is not a timeseries aspect;"
                                 " only timeseries aspects are deleted by time window")
        now = int(time.time() * 1000)
        window = canonical_json({"startTimeMillis": start_ms, "endTimeMillis": end_ms})
        record = {
            "entityType": entity.name, "entityUrn": urn, "entityKeyAspect": None, "changeType": "DELETE",
            "aspectName": aspect_name, "aspect": {"value": window.encode(), "contentType": "application/json"},
            "systemMetadata": {"lastObserved": now, "runId": "no-run-id-provided"}, "headers": None,
            "previousAspectValue": None, "previousSystemMetadata": None, "created": {"time": now, "actor": actor},
        }
        with self.store.batch() as batch:
            batch.append_outbox([OutboxMessage(topics.MCL_TIMESERIES, urn, self.encode_mcl(record))])

    def close(self) -> None:
        """Stop the threads of concurrent applications, if any were started."""
        with self._pool_lock:
            for pool in self._pools.values():
                pool.shutdown()
            self._pools.clear()

    def _apply_all(self, batch: AspectBatch, valid: Sequence[tuple[int, ValidProposal]], actor: str
                   ) -> list[tuple[int, Result]]:
        """(position, result) of each proposal: in order, or by entity on up to the store's
        `entity_concurrency` threads (see the module docstring)."""
        keyed: set[str] = set()  # entities whose key aspect this batch knows to exist
        now = int(time.time() * 1000)

        def apply_in_order(items: Sequence[tuple[int, ValidProposal]]) -> list[tuple[int, Result]]:
            return [(i, self._apply_with_retries(batch, item, actor, keyed, now)) for i, item in items]

        def apply_entity(urn: str, items: Sequence[tuple[int, ValidProposal]]) -> list[tuple[int, Result]]:
            done: list[tuple[int, Result]] = []
            for _ in _attempts():
                while len(done) < len(items):
                    with batch.together(urn) as held:
                        results = []
                        for i, item in items[len(done):]:
                            results.append((i, self._apply_with_retries(batch, item, actor, keyed, now)))
                            if held.full:
                                break
                    if not held.applied:
                        keyed.discard(urn)
                        break  # another writer came in between: apply the rest again on a fresh read
                    done += results
                else:
                    return done
            return done + [(i, _conflict()) for i, _ in items[len(done):]]

        by_entity: dict[str, list[tuple[int, ValidProposal]]] = {}
        for i, item in valid:
            by_entity.setdefault(str(item.urn), []).append((i, item))
        for urn, items in by_entity.items():
            if versions := sum(not item.aspect.is_timeseries for _, item in items):
                batch.prefetch(urn, versions)
        if len(by_entity) == 1:
            return apply_entity(*next(iter(by_entity.items())))
        if self.store.entity_concurrency <= 1:
            return apply_in_order(valid)
        niceness = os.getpriority(os.PRIO_PROCESS, 0)  # on Linux, this thread's
        with self._pool_lock:
            pool = self._pools.get(niceness)
            if pool is None:
                pool = self._pools[niceness] = ThreadPoolExecutor(self.store.entity_concurrency,
                                                                  thread_name_prefix="write-path")
        futures = [pool.submit(apply_entity, urn, items) for urn, items in by_entity.items()]
        wait(futures)  # every entity settled before any error is raised, as in order
        return [pair for future in futures for pair in future.result()]

    def _apply_with_retries(self, batch: AspectBatch, item: ValidProposal, actor: str,
                            keyed: set[str], now: int) -> Result:
        for _ in _attempts():
            try:
                return _Application(self, batch, item, actor, keyed, now).run()
            except ProposalFailed as failure:
                return Result("failed", failure=failure)
            except _Conflict:
                continue
        return _conflict()


def _attempts() -> Iterator[int]:
    """Attempts at a conditional write that other writers may beat: the first at once, each
    next after a random pause of up to 1, 2, 4 ... ms (at most CONFLICT_PAUSE_MAX_S), until
    CONFLICT_RETRY_S have passed. Without the pauses, writers racing on one entity retry in
    step and can all lose again; with a fixed count, the last of N racers could run out."""
    deadline = time.monotonic() + CONFLICT_RETRY_S
    attempt = 0
    while True:
        yield attempt
        attempt += 1
        if time.monotonic() >= deadline:
            return
        time.sleep(random.uniform(0, min(CONFLICT_PAUSE_MAX_S, 0.001 * 2 ** attempt)))


def _conflict() -> Result:
    return Result("failed", failure=ProposalFailed("conflict", "the aspect kept changing under concurrent writers;"
                                                   " retry", 409))


class _Application:
    """The application of one proposal against the current state in a batch, at `now` (epoch ms)."""

    def __init__(self, path: WritePath, batch: AspectBatch, item: ValidProposal, actor: str,
                 keyed: set[str], now: int):
        self.path = path
        self.keyed = keyed
        self.batch = batch
        self.item = item
        self.proposal = item.proposal
        self.urn = str(item.urn)
        self.actor = actor
        self.now = now

    def run(self) -> Result:
        item, proposal = self.item, self.proposal
        if item.aspect.is_timeseries:  # a point of an entity: the entity exists from then on, as in DataHub
            self._ensure_key_aspect()
            self.batch.append_outbox([self._mcl(topics.MCL_TIMESERIES, "UPSERT", item.aspect.name,
                                                item.value_json, self._system_metadata(None, None))])
            return Result("applied")
        current = self.batch.latest(self.urn, item.aspect.name)
        live = current if current is not None and current.exists else None
        item.conditions.check(live.version if live else -1, live.modified_ms if live else None)
        change = proposal.change_type
        if change == "DELETE":
            return self._delete(current, live)
        if change == "CREATE" and live is not None:
            return self._exists("aspect_exists", f"CREATE: aspect {item.aspect.name} of {self.urn} already exists",
                                live.version)
        if change == "CREATE_ENTITY":
            existing = self.batch.live_aspects(self.urn)
            if existing:
                return self._exists("entity_exists", f"CREATE_ENTITY: entity {self.urn} already exists",
                                    max(a.version for a in existing))
        if change == "UPDATE" and live is None:
            raise ProposalFailed("aspect_missing", f"UPDATE: aspect {item.aspect.name} of {self.urn} does not exist",
                                 412, expected="exists", actual="absent")
        value_json = self._patched(live) if change == "PATCH" else item.value_json
        assert value_json is not None
        if (mutation := MUTATIONS.get(item.aspect.name)) is not None:
            value_json = canonical_json(mutation(json.loads(value_json)))
        if item.aspect.name == "structuredProperties":
            given = json.loads(value_json)
            if (checked := checked_assignments(given, self._live_value, live.value if live else None)) is not given:
                value_json = canonical_json(checked)
        elif item.aspect.name == DEFINITION:
            check_definition_change(self.urn, json.loads(value_json), self._live_value)
        elif item.aspect.name == VERSION:
            value_json = canonical_json(mark_latest(self.urn, json.loads(value_json), self._live_value))
        if live is not None and live.value_json == value_json:
            self.batch.refresh(self.urn, live.aspect, live.version, self._refreshed(live.system_metadata))
            return Result("noop", live.version)
        if item.aspect.key_for is None:
            self._ensure_key_aspect()
        mcl_change = "UPSERT" if change == "PATCH" else change
        version = self._write(current, value_json, mcl_change)
        return Result("applied", version)

    def _live_value(self, urn: str, aspect: str) -> dict[str, Any] | None:
        """The live value of an aspect of any entity, as this batch sees it."""
        row = self.batch.latest(urn, aspect)
        return row.value if row is not None and row.exists else None

    def _exists(self, code: str, message: str, version: int) -> Result:
        if self.item.conditions.none_match_any:
            return Result("dropped", version)
        raise ProposalFailed(code, message, 412, expected="absent", actual=f"version {version}")

    def _patched(self, live: StoredAspect | None) -> str:
        """The value after the patch: applied to the current value, or to the aspect's default
        value when it does not exist (gms.patch)."""
        document = self.path.validator.patch_operations(self.proposal.value)
        spec = self.item.aspect
        start = live.value if live else default_value(spec.schema, spec.named, self.actor, self.now)
        value = apply_patch(start, document, spec.name, self.path.validator.max_aspect_bytes)
        fill_stamps(value, spec.schema, spec.named, {"time": self.now, "actor": self.actor})
        return self.path.validator.check_value(spec, value, context="aspect after PATCH")

    def _delete(self, current: StoredAspect | None, live: StoredAspect | None) -> Result:
        if live is None:
            return Result("noop", current.version if current else None)
        if self.item.aspect.key_for is None:
            return Result("applied", self._write(current, None, "DELETE"))
        # Deleting the key aspect deletes the entity: every other aspect first, the key last.
        self.keyed.discard(self.urn)
        for aspect in sorted(self.batch.live_aspects(self.urn), key=lambda a: a.aspect == live.aspect):
            version = self._write(aspect, None, "DELETE", aspect_name=aspect.aspect)
        return Result("applied", version)

    def _ensure_key_aspect(self) -> None:
        if self.urn in self.keyed:
            return
        key_name = self.item.entity.key_aspect
        current = self.batch.latest(self.urn, key_name)
        if current is None or not current.exists:
            key_json = canonical_json(self.path.registry.key_value(self.item.urn))
            self._write(current, key_json, "UPSERT", aspect_name=key_name)
        self.keyed.add(self.urn)

    def _write(self, current: StoredAspect | None, value_json: str | None, change: str,
               aspect_name: str | None = None) -> int:
        aspect_name = aspect_name or self.item.aspect.name
        version = (current.version if current else 0) + 1
        system_metadata = self._system_metadata(current, version)
        mcl = self._mcl(topics.MCL_VERSIONED, change, aspect_name, value_json, system_metadata, current)
        row = StoredAspect(self.urn, aspect_name, version, value_json, system_metadata)
        if not self.batch.insert(row, [mcl]):
            raise _Conflict
        return version

    def _system_metadata(self, current: StoredAspect | None, version: int | None) -> dict[str, Any]:
        incoming = self.proposal.system_metadata or {}
        system_metadata: dict[str, Any] = {k: v for k, v in incoming.items() if k not in _SERVER_OWNED}
        system_metadata["lastObserved"] = incoming.get("lastObserved") or self.now
        system_metadata.setdefault("runId", "no-run-id-provided")
        stamp = {"time": self.now, "actor": self.actor}
        if version is not None:
            system_metadata["version"] = str(version)
            created = current.system_metadata.get("aspectCreated") if current else None
            system_metadata["aspectCreated"] = created or stamp
            system_metadata["aspectModified"] = stamp
        return system_metadata

    def _refreshed(self, stored: dict[str, Any]) -> dict[str, Any]:
        incoming = self.proposal.system_metadata or {}
        refreshed = dict(stored)
        refreshed["lastObserved"] = incoming.get("lastObserved") or self.now
        run_id = incoming.get("runId")
        if run_id and run_id != stored.get("runId"):
            refreshed["lastRunId"] = stored.get("runId")
            refreshed["runId"] = run_id
        return refreshed

    def _mcl(self, topic: str, change: str, aspect_name: str, value_json: str | None,
             system_metadata: dict[str, Any], previous: StoredAspect | None = None) -> OutboxMessage:
        record = {
            "entityType": self.item.entity.name,
            "entityUrn": self.urn,
            "entityKeyAspect": None,
            "changeType": change,
            "aspectName": aspect_name,
            "aspect": None if value_json is None else {"value": value_json.encode(), "contentType": "application/json"},
            "systemMetadata": system_metadata,
            "headers": logged_headers(self.proposal.headers),
            "previousAspectValue": None if previous is None or previous.value_json is None else {
                "value": previous.value_json.encode(), "contentType": "application/json"},
            "previousSystemMetadata": previous.system_metadata if previous else None,
            "created": {"time": self.now, "actor": self.actor},
        }
        return OutboxMessage(topic, self.urn, self.path.encode_mcl(record))


_SERVER_OWNED = frozenset({"version", "aspectCreated", "aspectModified"})
RESERVED_HEADER_PREFIX = "x-lodestar-"  # headers only Lodestar sets (X-Lodestar-Actor: who proposed)


def logged_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """A proposal's headers as its MCLs carry them: without the reserved `X-Lodestar-*` ones a
    caller may have set (who made a change is the MCL's `created.actor`)."""
    kept = {name: value for name, value in (headers or {}).items()
            if not name.lower().startswith(RESERVED_HEADER_PREFIX)}
    return kept or None
