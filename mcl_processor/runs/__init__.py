"""The run-lineage port: program runs, their dataset accesses and field operations, in tables
keyed for time-range scans (CDAP's lineage table and FieldLevelLineage dataset).

Writes: the facts each run aspect states (`facts.py`, from the schemas' `RunLineage`
annotations) are stored per (run, aspect) with the version rule, run events as they come;
after each write the touched runs are derived again (`model.derive`) and their index rows
replaced: accesses by dataset and by program (ordered by the run's start), field-operation
references per destination (backward) and per source (forward), each naming a checksum whose
operations are stored once (a run that recorded its operations per destination references each
destination's own set). Adapters store and scan rows; everything else is here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import astuple

import orjson

from mcl_processor.changes import AspectChange, ChangeBatch, TimeseriesPoint
from mcl_processor.divergence import Divergence, compare_versions
from mcl_processor.lineage.contributions import fresh
from mcl_processor.runs.facts import Facts, RunFacts
from mcl_processor.runs.model import (
    Access,
    FieldRef,
    Run,
    Window,
    derive,
    operations_from,
    operations_json,
    run_from_json,
)
from schemas.field_operations import FieldOperation

MODEL = "runs"
FactRow = tuple[str, str, int, str | None]  # (run, aspect, version, facts JSON or None when deleted)
EventRow = tuple[str, int, str, str]  # (run, time ms, status, facts JSON)


class RunLineageStore(ABC):
    """Runs, accesses and field operations; `apply`/`append_events` write, the rest read."""

    def __init__(self, facts: RunFacts):
        self.facts = facts
        self._known: dict[str, tuple[FieldOperation, ...]] = {}

    # -- writes ---------------------------------------------------------------------------

    def apply(self, batch: ChangeBatch) -> None:
        """Apply a batch (inside the read models' transaction when they share one)."""
        if batch.resets:
            self._forget(sorted(batch.resets))
        changes = [c for c in batch.changes if self.facts.traced(c.aspect)]
        if not changes:
            return
        runs = sorted({c.urn for c in changes})
        versions = {key: version for key, (version, _) in self._fact_rows(runs).items()}
        applied = fresh(changes, versions, batch.replace_equal)
        self._write_facts([(c.urn, c.aspect, c.version,
                            None if c.deleted else orjson.dumps(self.facts.of(c.aspect, c.value)).decode())
                           for c in applied])
        self._rederive(runs)  # every touched run: a batch replayed after a crash completes the last one

    def append_events(self, points: Sequence[TimeseriesPoint]) -> None:
        """Record run events (start, completion) from timeseries points."""
        rows: list[EventRow] = []
        for point in points:
            if self.facts.traced(point.aspect):
                facts = self.facts.of(point.aspect, orjson.loads(point.value_json))
                rows.append((point.urn, point.timestamp_ms, str(facts.get("status", "")), orjson.dumps(facts).decode()))
        if rows:
            self._write_events(rows)
            self._rederive(sorted({row[0] for row in rows}))

    def _forget(self, runs: Sequence[str]) -> None:
        """Delete everything of these runs: index rows, their listing, facts, events, derived runs."""
        listed = [(run, row) for run, rows in self._listed(runs).items() for row in rows]
        drop_access, drop_refs = _decoded(row for _, row in listed)
        self._write_index([], drop_access, [], drop_refs)
        self._unlist(listed)
        self._delete_runs(runs)

    def _rederive(self, runs: Sequence[str]) -> None:
        """Derive the runs again and replace their index rows. Every index row is listed under
        its run before it is written and unlisted only after it is deleted, so a pass cut short
        by a crash leaves nothing the next pass over the run does not see and replace."""
        facts, events, listed = self._facts(runs), self._events(runs), self._listed(runs)
        wanted: dict[str, set[str]] = {}
        operations: dict[str, str] = {}
        derived: dict[str, str] = {}
        for urn in runs:
            run = derive(urn, facts.get(urn, ()), events.get(urn, ()))
            wanted[urn] = {_encoded(row) for row in (*run.access_rows(), *run.field_refs())}
            operations.update((c, operations_json(ops)) for c, ops in run.operation_sets().items())
            derived[urn] = orjson.dumps(run.to_json()).decode()
        stale = [(urn, row) for urn in runs for row in listed.get(urn, set()) - wanted[urn]]
        self._write_operations(operations)
        self._list([(urn, row) for urn in runs for row in wanted[urn] - listed.get(urn, set())])
        put_access, put_refs = _decoded(row for urn in runs for row in wanted[urn])
        drop_access, drop_refs = _decoded(row for _, row in stale)
        self._write_index(put_access, drop_access, put_refs, drop_refs)
        self._unlist(stale)
        self._write_runs(derived)

    # -- reads ----------------------------------------------------------------------------

    @abstractmethod
    def accesses(self, keys: Collection[str], by: str, window: Window) -> list[Access]:
        """Accesses of runs that ran during the window, by dataset (`by="dataset"`) or by program."""

    @abstractmethod
    def field_refs(self, endpoint: str, direction: str, window: Window) -> list[FieldRef]:
        """References of runs started in the window to their field operations, newest first."""

    def operations(self, checksums: Collection[str]) -> dict[str, tuple[FieldOperation, ...]]:
        """The operations stored under each checksum (a checksum's operations never change, so
        they are read once and kept)."""
        found = {c: self._known[c] for c in checksums if c in self._known}
        missing = [c for c in checksums if c not in found]
        if missing:
            for checksum, text in self._operations(missing).items():
                found[checksum] = self._known[checksum] = operations_from(text)
        return found

    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        """Differences between the facts held for these entities and their latest aspects."""
        stored = {key: (version, orjson.loads(facts)) for key, (version, facts) in self._fact_rows(urns).items()
                  if facts is not None}
        wanted = {(c.urn, c.aspect): c for c in expected if self.facts.traced(c.aspect)}
        return compare_versions(MODEL, stored, wanted, lambda c: self.facts.of(c.aspect, c.value))

    def runs(self, urns: Collection[str]) -> dict[str, Run]:
        """The derived runs (without their operations) of these URNs that the store knows."""
        return {urn: run_from_json(orjson.loads(value)) for urn, value in self._runs(urns).items()}

    @abstractmethod
    def clear(self) -> None: ...

    @abstractmethod
    def _operations(self, checksums: Collection[str]) -> Mapping[str, str]:
        """The operations (JSON) stored under each of these checksums."""

    # -- what adapters store --------------------------------------------------------------

    @abstractmethod
    def _delete_runs(self, runs: Sequence[str]) -> None:
        """Delete the facts, events and derived runs of these runs."""

    @abstractmethod
    def _fact_rows(self, runs: Sequence[str]) -> dict[tuple[str, str], tuple[int, str | None]]:
        """(version, facts JSON or None when deleted) per (run, aspect)."""

    @abstractmethod
    def _write_facts(self, rows: Sequence[FactRow]) -> None: ...

    @abstractmethod
    def _write_events(self, rows: Sequence[EventRow]) -> None: ...

    @abstractmethod
    def _facts(self, runs: Sequence[str]) -> dict[str, list[Facts]]:
        """The live facts of each run, aspect by aspect."""

    @abstractmethod
    def _events(self, runs: Sequence[str]) -> dict[str, list[Facts]]: ...

    @abstractmethod
    def _runs(self, runs: Collection[str]) -> Mapping[str, str]: ...

    @abstractmethod
    def _write_operations(self, operations: Mapping[str, str]) -> None:
        """Store each checksum's operations (JSON) unless already stored."""

    @abstractmethod
    def _write_index(self, put_access: Sequence[Access], drop_access: Sequence[Access],
                     put_refs: Sequence[FieldRef], drop_refs: Sequence[FieldRef]) -> None: ...

    @abstractmethod
    def _write_runs(self, runs: Mapping[str, str]) -> None: ...

    @abstractmethod
    def _listed(self, runs: Sequence[str]) -> dict[str, set[str]]:
        """The index rows listed under each run (encoded)."""

    @abstractmethod
    def _list(self, rows: Sequence[tuple[str, str]]) -> None:
        """List (run, encoded index row) pairs."""

    @abstractmethod
    def _unlist(self, rows: Sequence[tuple[str, str]]) -> None: ...


def _encoded(row: Access | FieldRef) -> str:
    kind = "access" if isinstance(row, Access) else "ref"
    return orjson.dumps([kind, *astuple(row)]).decode()


def _decoded(rows: Iterable[str]) -> tuple[list[Access], list[FieldRef]]:
    accesses: list[Access] = []
    refs: list[FieldRef] = []
    for text in rows:
        kind, *values = orjson.loads(text)
        if kind == "access":
            accesses.append(Access(*values))
        else:
            refs.append(FieldRef(*values))
    return accesses, refs
