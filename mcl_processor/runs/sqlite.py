"""The run-lineage tables on SQLite, in the read models' database. Accesses are keyed
(dataset | program, start time, run, ...), field references (endpoint, direction, start time,
run, checksum), so a window is one index range scan per key."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import orjson

from mcl_processor.changes import chunks
from mcl_processor.readmodels_db import Database, model_errors
from mcl_processor.runs import EventRow, FactRow, RunLineageStore
from mcl_processor.runs.facts import Facts, RunFacts
from mcl_processor.runs.model import Access, FieldRef, Window

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_facts (run TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL, facts TEXT,
    PRIMARY KEY (run, aspect)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_events (run TEXT NOT NULL, time INTEGER NOT NULL, status TEXT NOT NULL,
    facts TEXT NOT NULL, PRIMARY KEY (run, time, status)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (run TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_accesses (dataset TEXT NOT NULL, start INTEGER NOT NULL, run TEXT NOT NULL,
    access TEXT NOT NULL, component TEXT NOT NULL, program TEXT NOT NULL, end_ms INTEGER,
    PRIMARY KEY (dataset, start, run, access, component)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_accesses_by_program ON run_accesses (program, start, run);
CREATE TABLE IF NOT EXISTS run_rows (run TEXT NOT NULL, row TEXT NOT NULL, PRIMARY KEY (run, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS field_operation_sets (checksum TEXT PRIMARY KEY, operations TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS field_refs (endpoint TEXT NOT NULL, direction TEXT NOT NULL, start INTEGER NOT NULL,
    run TEXT NOT NULL, checksum TEXT NOT NULL, program TEXT NOT NULL,
    PRIMARY KEY (endpoint, direction, start, run, checksum)) WITHOUT ROWID;
"""
_TABLES = ("run_facts", "run_events", "runs", "run_rows", "run_accesses", "field_operation_sets", "field_refs")
_ACCESS = "dataset, run, program, access, component, start, end_ms"


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


class SqliteRunLineage(RunLineageStore):
    def __init__(self, db: Database, facts: RunFacts):
        super().__init__(facts)
        self.db = db
        db.writer.executescript(_SCHEMA)

    # -- reads ----------------------------------------------------------------------------

    @model_errors
    def accesses(self, keys: Collection[str], by: str, window: Window) -> list[Access]:
        column = "dataset" if by == "dataset" else "program"
        conn = self.db.reader()
        out: list[Access] = []
        for chunk in chunks(sorted(keys)):
            for row in conn.execute(
                    f"SELECT {_ACCESS} FROM run_accesses WHERE {column} IN ({_marks(chunk)}) AND start < ? "
                    "AND (end_ms IS NULL OR end_ms >= ?)", (*chunk, window.end_ms, window.start_ms)):
                out.append(Access(*row))
        return out

    @model_errors
    def field_refs(self, endpoint: str, direction: str, window: Window) -> list[FieldRef]:
        return [FieldRef(endpoint, direction, *row) for row in self.db.reader().execute(
            "SELECT start, run, checksum, program FROM field_refs WHERE endpoint = ? AND direction = ? "
            "AND start >= ? AND start < ? ORDER BY start DESC", (endpoint, direction, window.start_ms, window.end_ms))]

    @model_errors
    def _operations(self, checksums: Collection[str]) -> Mapping[str, str]:
        found: dict[str, str] = {}
        for chunk in chunks(sorted(checksums)):
            found.update(self.db.reader().execute(
                f"SELECT checksum, operations FROM field_operation_sets WHERE checksum IN ({_marks(chunk)})", chunk))
        return found

    @model_errors
    def _runs(self, runs: Collection[str]) -> Mapping[str, str]:
        conn = self.db.writer if self.db.writer.in_transaction else self.db.reader()
        found = {}
        for chunk in chunks(sorted(runs)):
            found.update(conn.execute(f"SELECT run, value FROM runs WHERE run IN ({_marks(chunk)})", chunk))
        return found

    @model_errors
    def clear(self) -> None:
        for table in _TABLES:
            self.db.writer.execute(f"DELETE FROM {table}")

    # -- writes ---------------------------------------------------------------------------

    def _delete_runs(self, runs: Sequence[str]) -> None:
        keys = [(run,) for run in runs]
        for table in ("run_facts", "run_events", "runs"):
            self.db.writer.executemany(f"DELETE FROM {table} WHERE run = ?", keys)

    @model_errors
    def _fact_rows(self, runs: Sequence[str]) -> dict[tuple[str, str], tuple[int, str | None]]:
        conn = self.db.writer if self.db.writer.in_transaction else self.db.reader()
        found = {}
        for chunk in chunks(runs):
            for run, aspect, version, facts in conn.execute(
                    f"SELECT run, aspect, version, facts FROM run_facts WHERE run IN ({_marks(chunk)})", chunk):
                found[(run, aspect)] = (version, facts)
        return found

    def _write_facts(self, rows: Sequence[FactRow]) -> None:
        self.db.writer.executemany("INSERT OR REPLACE INTO run_facts VALUES (?, ?, ?, ?)", rows)

    def _write_events(self, rows: Sequence[EventRow]) -> None:
        self.db.writer.executemany("INSERT OR REPLACE INTO run_events VALUES (?, ?, ?, ?)", rows)

    def _facts(self, runs: Sequence[str]) -> dict[str, list[Facts]]:
        return self._grouped("SELECT run, facts FROM run_facts WHERE facts IS NOT NULL AND run IN ({}) "
                             "ORDER BY run, aspect", runs)

    def _events(self, runs: Sequence[str]) -> dict[str, list[Facts]]:
        return self._grouped("SELECT run, facts FROM run_events WHERE run IN ({}) ORDER BY run, time", runs)

    def _grouped(self, sql: str, runs: Sequence[str]) -> dict[str, list[Facts]]:
        found: dict[str, list[Facts]] = {}
        for chunk in chunks(runs):
            for run, text in self.db.writer.execute(sql.format(_marks(chunk)), chunk):
                found.setdefault(run, []).append(orjson.loads(text))
        return found

    def _write_operations(self, operations: Mapping[str, str]) -> None:
        self.db.writer.executemany("INSERT OR IGNORE INTO field_operation_sets VALUES (?, ?)", operations.items())

    def _write_index(self, put_access: Sequence[Access], drop_access: Sequence[Access],
                     put_refs: Sequence[FieldRef], drop_refs: Sequence[FieldRef]) -> None:
        conn = self.db.writer
        conn.executemany("DELETE FROM run_accesses WHERE dataset = ? AND start = ? AND run = ? AND access = ? "
                         "AND component = ?", [(a.dataset, a.start_ms, a.run, a.access, a.component)
                                               for a in drop_access])
        conn.executemany("INSERT OR REPLACE INTO run_accesses (dataset, start, run, access, component, program, end_ms)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)", [(a.dataset, a.start_ms, a.run, a.access, a.component,
                                                           a.program, a.end_ms) for a in put_access])
        conn.executemany("DELETE FROM field_refs WHERE endpoint = ? AND direction = ? AND start = ? AND run = ? "
                         "AND checksum = ?", [(r.endpoint, r.direction, r.start_ms, r.run, r.checksum)
                                              for r in drop_refs])
        conn.executemany("INSERT OR REPLACE INTO field_refs VALUES (?, ?, ?, ?, ?, ?)",
                         [(r.endpoint, r.direction, r.start_ms, r.run, r.checksum, r.program) for r in put_refs])

    def _write_runs(self, runs: Mapping[str, str]) -> None:
        self.db.writer.executemany("INSERT OR REPLACE INTO runs VALUES (?, ?)", runs.items())

    def _listed(self, runs: Sequence[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for chunk in chunks(runs):
            for run, row in self.db.writer.execute(f"SELECT run, row FROM run_rows WHERE run IN ({_marks(chunk)})",
                                                   chunk):
                found.setdefault(run, set()).add(row)
        return found

    def _list(self, rows: Sequence[tuple[str, str]]) -> None:
        self.db.writer.executemany("INSERT OR IGNORE INTO run_rows VALUES (?, ?)", rows)

    def _unlist(self, rows: Sequence[tuple[str, str]]) -> None:
        self.db.writer.executemany("DELETE FROM run_rows WHERE run = ? AND row = ?", rows)
