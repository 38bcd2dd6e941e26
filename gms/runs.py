"""Ingestion runs as DataHub's clients see them (`datahub ingest list-runs | show | rollback`),
read from the aspect store: every version's system metadata holds the `runId` that wrote it.

A run's rows are the latest live versions whose `runId` is the run's. They are found by a scan
of the store's latest versions (`AspectStore.scan_latest`), so listing or rolling back costs a
pass over the store, whatever the run's size.

Rolling a run back restores each of its rows to the version before the run:
- walking an aspect's versions from the newest, those written by the run are skipped; the first
  one written by another run is restored (a new version with its value and its run's system
  metadata; when its value is the current one, only the system metadata is put back). A
  version the run merely observed again (an equal write: `runId` the run, `lastRunId` the run
  that wrote it) counts as that earlier run's. No such version: the aspect is deleted.
- an entity whose key aspect the run wrote (the run created it) is deleted (its key aspect
  deleted, so all of its aspects: history stays readable) when nothing else of it comes from
  another run. When other runs wrote some of its aspects too (an "unsafe" entity), it is
  soft-deleted (`status.removed = true`) with `safe` (the default), keeping their aspects
  (hidden), and deleted like the others without it (`--nuke`).
Timeseries points a run wrote are kept (their store keeps no run ids); DataHub does the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gms.errors import ProposalFailed
from gms.service import Gms
from gms.store import StoredAspect
from ingest.proposal import Proposal

NO_RUN = "no-run-id-provided"
SCAN_PAGE = 1000
MAX_SUMMARIES = 1000  # rows a rollback's answer lists (its counts cover them all)
_SERVER_OWNED = ("version", "aspectCreated", "aspectModified")


def run_of(row: StoredAspect) -> str | None:
    return row.system_metadata.get("runId")


def _observed_only(row: StoredAspect, run_id: str) -> bool:
    """Whether the run only observed this version again (an equal write refreshed its runId)."""
    last = row.system_metadata.get("lastRunId")
    return run_of(row) == run_id and last not in (None, "", NO_RUN, run_id)


@dataclass
class RunRow:
    """One latest version a run wrote, in DataHub's AspectRowSummary form."""

    row: StoredAspect
    key: bool

    def to_json(self, with_aspect: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {
            "runId": run_of(self.row), "urn": self.row.urn, "aspectName": self.row.aspect,
            "timestamp": int(self.row.system_metadata.get("lastObserved") or self.row.modified_ms),
            "version": self.row.version, "keyAspect": self.key,
        }
        if with_aspect:
            body["aspect"] = self.row.value
        return body


@dataclass
class RollbackPlan:
    run_id: str
    rows: list[RunRow] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # entities the rollback deletes
    unsafe: list[str] = field(default_factory=list)  # entities the run created that other runs wrote to
    others: int = 0  # aspects of other runs on the unsafe entities

    def summary(self, dry_run: bool) -> dict[str, Any]:
        return {
            "runId": self.run_id, "dryRun": dry_run, "entitiesAffected": len(self.deleted),
            "aspectsReverted": len(self.rows), "aspectsAffected": self.others,
            "unsafeEntitiesCount": len(self.unsafe), "unsafeEntities": [{"urn": urn} for urn in self.unsafe],
            "aspectRowSummaries": [row.to_json() for row in self.rows[:MAX_SUMMARIES]],
        }


class RollbackFailed(Exception):
    """Some of the rollback's writes were refused; `failures` (urn, aspect, reason) says which."""

    def __init__(self, status: int, failures: list[tuple[str, str | None, str]], applied: int):
        self.status = status
        self.failures = failures
        self.applied = applied
        listing = "; ".join(f"{urn} {aspect}: {reason}" for urn, aspect, reason in failures[:10])
        super().__init__(f"{len(failures)} of the rollback's writes failed ({applied} applied): {listing}")


class IngestionRuns:
    def __init__(self, gms: Gms):
        self.gms = gms

    def _key_aspect(self, urn: str) -> str | None:
        entity = self.gms.registry.entity(urn.removeprefix("urn:li:").partition(":")[0])
        return entity.key_aspect if entity else None

    def entities(self) -> Iterator[list[StoredAspect]]:
        """The latest live versions of every entity, one entity at a time."""
        after: tuple[str, str] | None = None
        group: list[StoredAspect] = []
        while True:
            page = list(self.gms.store.scan_latest(after, SCAN_PAGE))
            for row in page:
                if group and row.urn != group[0].urn:
                    yield group
                    group = []
                group.append(row)
            if len(page) < SCAN_PAGE:
                break
            after = (page[-1].urn, page[-1].aspect)
        if group:
            yield group

    @staticmethod
    def _soft_deleted(rows: list[StoredAspect]) -> bool:
        return any(r.aspect == "status" and isinstance(r.value, dict) and r.value.get("removed") for r in rows)

    def list(self, start: int, count: int, include_soft: bool, readable: Any = None) -> list[dict[str, Any]]:
        """Runs newest first (by the latest lastObserved of their rows): runId, rows, timestamp."""
        runs: dict[str, list[int]] = {}
        for rows in self._visible(include_soft, readable):
            for row in rows:
                run_id = run_of(row)
                if run_id and run_id != NO_RUN:
                    seen = runs.setdefault(run_id, [0, 0])
                    seen[0] += 1
                    seen[1] = max(seen[1], int(row.system_metadata.get("lastObserved") or row.modified_ms))
        ordered = sorted(runs.items(), key=lambda item: (-item[1][1], item[0]))
        return [{"runId": run_id, "rows": rows, "timestamp": last}
                for run_id, (rows, last) in ordered[start:start + count]]

    def describe(self, run_id: str, start: int, count: int, include_soft: bool, with_aspect: bool,
                 readable: Any = None) -> list[dict[str, Any]]:
        """The run's rows, by URN and aspect."""
        rows = [RunRow(row, row.aspect == self._key_aspect(row.urn))
                for entity in self._visible(include_soft, readable) for row in entity if run_of(row) == run_id]
        rows.sort(key=lambda r: (r.row.urn, r.row.aspect))
        return [r.to_json(with_aspect) for r in rows[start:start + count]]

    def _visible(self, include_soft: bool, readable: Any) -> Iterator[list[StoredAspect]]:
        from gms.access import can_read

        for rows in self.entities():
            if (include_soft or not self._soft_deleted(rows)) and can_read(readable, rows[0].urn):
                yield rows

    def plan(self, run_id: str, safe: bool = True) -> RollbackPlan:
        """What rolling the run back writes (see the module docstring)."""
        plan = RollbackPlan(run_id)
        for rows in self.entities():
            mine = [row for row in rows if run_of(row) == run_id]
            if not mine:
                continue
            urn = rows[0].urn
            key = self._key_aspect(urn)
            entity_type = urn.removeprefix("urn:li:").partition(":")[0]
            plan.rows += [RunRow(row, row.aspect == key) for row in mine]
            created = any(row.aspect == key and not _observed_only(row, run_id) for row in mine)
            others = [row for row in rows
                      if row.aspect != key and (run_of(row) != run_id or _observed_only(row, run_id))]
            if created and (not others or not safe):
                plan.deleted.append(urn)
                plan.proposals.append(Proposal(entity_type, urn, "DELETE", key))
                continue
            plan.proposals += [p for row in mine if row.aspect != key
                               for p in [self._revert(entity_type, row, run_id)] if p is not None]
            if created:
                plan.unsafe.append(urn)
                plan.others += len(others)
                entity = self.gms.registry.entity(entity_type)
                if entity is not None and "status" in entity.aspects:  # hidden; else left as it is
                    plan.proposals.append(Proposal(entity_type, urn, "UPSERT", "status", {"removed": True}))
        return plan

    def _revert(self, entity_type: str, row: StoredAspect, run_id: str) -> Proposal | None:
        """The proposal restoring an aspect to its version before the run."""
        for version in reversed(self.gms.store.history(row.urn, row.aspect)):
            if run_of(version) == run_id and not _observed_only(version, run_id):
                continue
            if not version.exists:
                break
            metadata = {k: v for k, v in version.system_metadata.items() if k not in _SERVER_OWNED}
            if _observed_only(version, run_id):
                metadata["runId"] = version.system_metadata["lastRunId"]
                metadata.pop("lastRunId", None)
            return Proposal(entity_type, row.urn, "UPSERT", row.aspect, version.value, system_metadata=metadata)
        return Proposal(entity_type, row.urn, "DELETE", row.aspect)

    def rollback(self, run_id: str, actor: str, dry_run: bool = False, safe: bool = True) -> dict[str, Any]:
        """Roll the run back (or, with dry_run, say what that would do); its writes are checked
        first and none is made if any is refused (validation, authorization), a dry run's as
        well, so it shows nothing the actor could not roll back. Raises RollbackFailed when
        writes fail."""
        plan = self.plan(run_id, safe)
        if dry_run and plan.proposals:
            checked = zip(plan.proposals, self.gms.check(plan.proposals, actor), strict=True)
            refused = [(p.entity_urn, p.aspect_name, f) for p, f in checked if isinstance(f, ProposalFailed)]
            if refused:
                raise RollbackFailed(max(f.http_status for _, _, f in refused),
                                     [(u, a, f"{f.code}: {f.message}") for u, a, f in refused], 0)
        if not dry_run and plan.proposals:
            results = self.gms.apply(plan.proposals, actor, authorize=True, all_or_none=True)
            failed = [(p.entity_urn, p.aspect_name, r.failure) for p, r in zip(plan.proposals, results, strict=True)
                      if r.failure is not None]
            if failed:
                status = max((f.http_status for _, _, f in failed if isinstance(f, ProposalFailed)), default=400)
                applied = sum(r.status in ("applied", "noop") for r in results)
                raise RollbackFailed(status, [(u, a, f"{f.code}: {f.message}") for u, a, f in failed], applied)
        return plan.summary(dry_run)
