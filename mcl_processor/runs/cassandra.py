"""The run-lineage tables on Apache Cassandra, as CDAP keys its lineage table: accesses in a
partition per dataset and per program, field-operation references in one per (endpoint,
direction), each clustered by the run's start time, newest first, so a window is a slice of
a partition.

| table | primary key |
|---|---|
| `run_facts` | ((run), aspect) + version, facts |
| `run_events` | ((run), time, status) + facts |
| `runs` | ((run)) + the derived run |
| `run_rows` | ((run), row): every index row of the run, listed before it is written |
| `run_accesses_by_dataset` | ((dataset), start DESC, run, access, component) + program, end_ms |
| `run_accesses_by_program` | ((program), start DESC, run, dataset, access, component) + end_ms |
| `field_operation_sets` | ((checksum)) + operations |
| `field_refs` | ((endpoint, direction), start DESC, run, checksum) + program |

No transaction: the port writes facts; then, per run, lists the index rows it will write
(`run_rows`), writes them, deletes the listed ones it no longer makes and unlists them; then
the derived run. Every run a batch touches is derived again, so a batch replayed after a crash
(with whatever came after it) finds every row a cut-short pass wrote and replaces them.

Every statement runs through `_run` (or `clear`), which raise the driver's errors as
ingest.backends.errors.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import orjson
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import PreparedStatement, tuple_factory

from ingest.backends import SCHEMA_TIMEOUT
from ingest.backends.cassandra import DRIVER_ERRORS, backend_error, contact_points, translated
from mcl_processor.changes import chunks
from mcl_processor.lineage.cassandra_tables import DEFAULT_REPLICATION, check_keyspace
from mcl_processor.runs import EventRow, FactRow, RunLineageStore
from mcl_processor.runs.facts import Facts, RunFacts
from mcl_processor.runs.model import Access, FieldRef, Window

_TABLES = {
    "run_facts": "run text, aspect text, version bigint, facts text, PRIMARY KEY ((run), aspect)",
    "run_events": "run text, time bigint, status text, facts text, PRIMARY KEY ((run), time, status)",
    "runs": "run text PRIMARY KEY, value text",
    "run_rows": "run text, row text, PRIMARY KEY ((run), row)",
    "run_accesses_by_dataset": "dataset text, start bigint, run text, access text, component text, program text, "
                               "end_ms bigint, PRIMARY KEY ((dataset), start, run, access, component)",
    "run_accesses_by_program": "program text, start bigint, run text, dataset text, access text, component text, "
                               "end_ms bigint, PRIMARY KEY ((program), start, run, dataset, access, component)",
    "field_operation_sets": "checksum text PRIMARY KEY, operations text",
    "field_refs": "endpoint text, direction text, start bigint, run text, checksum text, program text, "
                  "PRIMARY KEY ((endpoint, direction), start, run, checksum)",
}
_NEWEST_FIRST = {"run_accesses_by_dataset", "run_accesses_by_program", "field_refs"}
_ACCESS = "dataset, run, program, access, component, start, end_ms"


class CassandraRunLineage(RunLineageStore):
    def __init__(self, session: Session, keyspace: str, facts: RunFacts, *,
                 replication: Mapping[str, str | int] = DEFAULT_REPLICATION,
                 consistency: int = ConsistencyLevel.LOCAL_QUORUM, concurrency: int = 128):
        """The tables in `keyspace` (created with `replication` if absent, and the tables)."""
        super().__init__(facts)
        self.session = session
        self.keyspace = check_keyspace(keyspace)
        self.concurrency = concurrency
        self._profile = session.execution_profile_clone_update(
            EXEC_PROFILE_DEFAULT, row_factory=tuple_factory, consistency_level=consistency)
        self._where = contact_points(session)
        options = ", ".join(f"'{k}': '{v}'" for k, v in replication.items())
        with translated(self._where):
            session.execute(f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {{{options}}}",
                            timeout=SCHEMA_TIMEOUT)
            for table, columns in _TABLES.items():
                order = " WITH CLUSTERING ORDER BY (start DESC)" if table in _NEWEST_FIRST else ""
                session.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.{table} ({columns}){order}",
                                timeout=SCHEMA_TIMEOUT)
        self._prepared: dict[str, PreparedStatement] = {}

    def _cql(self, text: str) -> PreparedStatement:
        statement = self._prepared.get(text)
        if statement is None:
            statement = self._prepared[text] = self.session.prepare(text.replace("{ks}", self.keyspace))
        return statement

    def _run(self, cql: str, params: Sequence[tuple[Any, ...]]) -> list[tuple]:
        """One round: the statement once per parameter tuple, concurrently; all rows."""
        if not params:
            return []
        try:
            statement = self._cql(cql)
            results = execute_concurrent(self.session, [(statement, p) for p in params], concurrency=self.concurrency,
                                         raise_on_first_error=True, execution_profile=self._profile)
            return [row for _, rows in results for row in rows]
        except DRIVER_ERRORS as err:
            raise backend_error(err, self._where) from err

    def _by_keys(self, cql: str, keys: Collection[str], *extra: Any) -> list[tuple]:
        return self._run(cql, [(list(chunk), *extra) for chunk in chunks(sorted(keys), 20)])

    # -- reads ----------------------------------------------------------------------------

    def accesses(self, keys: Collection[str], by: str, window: Window) -> list[Access]:
        table, column = (("run_accesses_by_dataset", "dataset") if by == "dataset"
                         else ("run_accesses_by_program", "program"))
        rows = self._by_keys(f"SELECT {_ACCESS} FROM {{ks}}.{table} WHERE {column} IN ? AND start < ?",
                             [k for k in keys if k], window.end_ms)
        return [access for access in (Access(*row) for row in rows)
                if access.end_ms is None or access.end_ms >= window.start_ms]

    def field_refs(self, endpoint: str, direction: str, window: Window) -> list[FieldRef]:
        rows = self._run("SELECT start, run, checksum, program FROM {ks}.field_refs WHERE endpoint = ? "
                         "AND direction = ? AND start >= ? AND start < ?",
                         [(endpoint, direction, window.start_ms, window.end_ms)])
        return [FieldRef(endpoint, direction, *row) for row in rows]

    def _operations(self, checksums: Collection[str]) -> Mapping[str, str]:
        return dict(self._by_keys("SELECT checksum, operations FROM {ks}.field_operation_sets WHERE checksum IN ?",
                                  checksums))

    def _runs(self, runs: Collection[str]) -> Mapping[str, str]:
        return dict(self._by_keys("SELECT run, value FROM {ks}.runs WHERE run IN ?", runs))

    def clear(self) -> None:
        with translated(self._where):
            for table in _TABLES:
                self.session.execute(f"TRUNCATE {self.keyspace}.{table}")

    # -- writes ---------------------------------------------------------------------------

    def _delete_runs(self, runs: Sequence[str]) -> None:
        for table in ("run_facts", "run_events", "runs"):
            self._run(f"DELETE FROM {{ks}}.{table} WHERE run = ?", [(run,) for run in runs])

    def _fact_rows(self, runs: Sequence[str]) -> dict[tuple[str, str], tuple[int, str | None]]:
        rows = self._by_keys("SELECT run, aspect, version, facts FROM {ks}.run_facts WHERE run IN ?", runs)
        return {(run, aspect): (version, facts) for run, aspect, version, facts in rows}

    def _write_facts(self, rows: Sequence[FactRow]) -> None:
        self._run("INSERT INTO {ks}.run_facts (run, aspect, version, facts) VALUES (?, ?, ?, ?)", rows)

    def _write_events(self, rows: Sequence[EventRow]) -> None:
        self._run("INSERT INTO {ks}.run_events (run, time, status, facts) VALUES (?, ?, ?, ?)", rows)

    def _facts(self, runs: Sequence[str]) -> dict[str, list[Facts]]:
        return _grouped(self._by_keys("SELECT run, facts FROM {ks}.run_facts WHERE run IN ?", runs))

    def _events(self, runs: Sequence[str]) -> dict[str, list[Facts]]:
        return _grouped(self._by_keys("SELECT run, facts FROM {ks}.run_events WHERE run IN ?", runs))

    def _write_operations(self, operations: Mapping[str, str]) -> None:
        self._run("INSERT INTO {ks}.field_operation_sets (checksum, operations) VALUES (?, ?)",
                  list(operations.items()))

    def _write_index(self, put_access: Sequence[Access], drop_access: Sequence[Access],
                     put_refs: Sequence[FieldRef], drop_refs: Sequence[FieldRef]) -> None:
        self._run("DELETE FROM {ks}.run_accesses_by_dataset WHERE dataset = ? AND start = ? AND run = ? "
                  "AND access = ? AND component = ?",
                  [(a.dataset, a.start_ms, a.run, a.access, a.component) for a in drop_access])
        self._run("DELETE FROM {ks}.run_accesses_by_program WHERE program = ? AND start = ? AND run = ? "
                  "AND dataset = ? AND access = ? AND component = ?",
                  [(a.program, a.start_ms, a.run, a.dataset, a.access, a.component) for a in drop_access if a.program])
        self._run("DELETE FROM {ks}.field_refs WHERE endpoint = ? AND direction = ? AND start = ? AND run = ? "
                  "AND checksum = ?", [(r.endpoint, r.direction, r.start_ms, r.run, r.checksum) for r in drop_refs])
        self._run("INSERT INTO {ks}.run_accesses_by_dataset (dataset, start, run, access, component, program, end_ms) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)",
                  [(a.dataset, a.start_ms, a.run, a.access, a.component, a.program, a.end_ms) for a in put_access])
        self._run("INSERT INTO {ks}.run_accesses_by_program (program, start, run, dataset, access, component, end_ms) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)",
                  [(a.program, a.start_ms, a.run, a.dataset, a.access, a.component, a.end_ms)
                   for a in put_access if a.program])
        self._run("INSERT INTO {ks}.field_refs (endpoint, direction, start, run, checksum, program) "
                  "VALUES (?, ?, ?, ?, ?, ?)",
                  [(r.endpoint, r.direction, r.start_ms, r.run, r.checksum, r.program) for r in put_refs])

    def _write_runs(self, runs: Mapping[str, str]) -> None:
        self._run("INSERT INTO {ks}.runs (run, value) VALUES (?, ?)", list(runs.items()))

    def _listed(self, runs: Sequence[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for run, row in self._by_keys("SELECT run, row FROM {ks}.run_rows WHERE run IN ?", runs):
            found.setdefault(run, set()).add(row)
        return found

    def _list(self, rows: Sequence[tuple[str, str]]) -> None:
        self._run("INSERT INTO {ks}.run_rows (run, row) VALUES (?, ?)", rows)

    def _unlist(self, rows: Sequence[tuple[str, str]]) -> None:
        self._run("DELETE FROM {ks}.run_rows WHERE run = ? AND row = ?", rows)


def _grouped(rows: Sequence[tuple[str, str | None]]) -> dict[str, list[Facts]]:
    found: dict[str, list[Facts]] = {}
    for run, text in sorted(rows, key=lambda row: row[0]):
        if text is not None:
            found.setdefault(run, []).append(orjson.loads(text))
    return found
