"""Timeseries points on SQLite, keyed for idempotent appends and time-ordered reads.

The live points are the table `timeseries`; a staging model NAME is the table `timeseries__NAME`,
and the switch renames it into place (or, for some aspects only, moves their rows) in one
transaction: readers see the old table or the new one, never a part of it. Statements of other
connections naming `timeseries` are prepared again by SQLite and find the new table.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import orjson

from mcl_processor.changes import TimeseriesDeletion, TimeseriesPoint
from mcl_processor.readmodels_db import Database, model_errors, table_exists
from mcl_processor.staging import staging_name
from mcl_processor.timeseries import TimeseriesStore

LIVE = "timeseries"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    urn TEXT NOT NULL, aspect TEXT NOT NULL, ts INTEGER NOT NULL, partition TEXT NOT NULL,
    message_id TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (urn, aspect, ts, partition, message_id)
) WITHOUT ROWID;
"""
_NO_END = 2**63 - 1


class SqliteTimeseriesStore(TimeseriesStore):
    def __init__(self, db: Database, table: str = LIVE):
        self.db = db
        self.table = table
        db.writer.executescript(_SCHEMA.format(table=table))

    @model_errors
    def append(self, points: Sequence[TimeseriesPoint]) -> None:
        self.db.writer.executemany(
            f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?, ?, ?, ?, ?)",
            [(p.urn, p.aspect, p.timestamp_ms, p.partition, p.message_id, p.value_json) for p in points])

    @model_errors
    def remove_entities(self, urns: Sequence[str]) -> None:
        self.db.writer.executemany(f"DELETE FROM {self.table} WHERE urn = ?", [(urn,) for urn in urns])

    @model_errors
    def remove_points(self, deletions: Sequence[TimeseriesDeletion]) -> None:
        self.db.writer.executemany(
            f"DELETE FROM {self.table} WHERE urn = ? AND aspect = ? AND ts BETWEEN ? AND ?",
            [(d.urn, d.aspect, *_window(d.start_ms, d.end_ms)) for d in deletions])

    @model_errors
    def count(self, urn: str, aspect: str | None = None, start: int | None = None, end: int | None = None) -> int:
        aspects = "aspect = ?" if aspect is not None else "? IS NULL"
        (found,) = self.db.reader().execute(
            f"SELECT count(*) FROM {self.table} WHERE urn = ? AND {aspects} AND ts BETWEEN ? AND ?",
            (urn, aspect, *_window(start, end))).fetchone()
        return found

    @model_errors
    def query(self, urn: str, aspect: str, start: int | None = None, end: int | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.db.reader().execute(
            f"SELECT value FROM {self.table} WHERE urn = ? AND aspect = ? AND ts BETWEEN ? AND ?"
            " ORDER BY ts, partition, message_id LIMIT ?",
            (urn, aspect, *_window(start, end), limit))
        return [orjson.loads(row[0]) for row in rows]

    @model_errors
    def clear(self) -> None:
        self.db.writer.execute(f"DELETE FROM {self.table}")

    @model_errors
    def staging(self, name: str, fresh: bool) -> SqliteTimeseriesStore:
        store = SqliteTimeseriesStore(self.db, f"{LIVE}__{staging_name(name)}")
        if fresh:
            store.clear()
        return store

    def switch_to(self, name: str, aspects: Collection[str] | None = None) -> None:
        staged = f"{LIVE}__{staging_name(name)}"
        with self.db.transaction() as conn:
            if aspects is None:
                conn.execute(f"DROP TABLE {self.table}")
                conn.execute(f"ALTER TABLE {staged} RENAME TO {self.table}")
                return
            marks = ",".join("?" * len(aspects))
            conn.execute(f"DELETE FROM {self.table} WHERE aspect IN ({marks})", tuple(aspects))
            conn.execute(f"INSERT INTO {self.table} SELECT * FROM {staged} WHERE aspect IN ({marks})", tuple(aspects))
            conn.execute(f"DROP TABLE {staged}")

    def switched(self, name: str) -> bool:
        return not self.building(name)

    @model_errors
    def building(self, name: str) -> bool:
        return table_exists(self.db.reader(), f"{LIVE}__{staging_name(name)}")


def _window(start: int | None, end: int | None) -> tuple[int, int]:
    """The bounds of BETWEEN for an optional window."""
    return (start if start is not None else -_NO_END, end if end is not None else _NO_END)
