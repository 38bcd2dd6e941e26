"""Timeseries points on SQLite, keyed for idempotent appends and time-ordered reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from mcl_processor.changes import TimeseriesPoint
from mcl_processor.sqlite_db import Database
from mcl_processor.timeseries import TimeseriesStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS timeseries (
    urn TEXT NOT NULL, aspect TEXT NOT NULL, ts INTEGER NOT NULL, partition TEXT NOT NULL,
    message_id TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (urn, aspect, ts, partition, message_id)
) WITHOUT ROWID;
"""
_NO_END = 2**63 - 1


class SqliteTimeseriesStore(TimeseriesStore):
    def __init__(self, db: Database):
        self.db = db
        db.writer.executescript(_SCHEMA)

    def append(self, points: Sequence[TimeseriesPoint]) -> None:
        self.db.writer.executemany(
            "INSERT OR REPLACE INTO timeseries VALUES (?, ?, ?, ?, ?, ?)",
            [(p.urn, p.aspect, p.timestamp_ms, p.partition, p.message_id, p.value_json) for p in points])

    def remove_entities(self, urns: Sequence[str]) -> None:
        self.db.writer.executemany("DELETE FROM timeseries WHERE urn = ?", [(urn,) for urn in urns])

    def query(self, urn: str, aspect: str, start: int | None = None, end: int | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.db.reader().execute(
            "SELECT value FROM timeseries WHERE urn = ? AND aspect = ? AND ts BETWEEN ? AND ?"
            " ORDER BY ts, partition, message_id LIMIT ?",
            (urn, aspect, start if start is not None else -_NO_END, end if end is not None else _NO_END, limit))
        return [orjson.loads(row[0]) for row in rows]

    def clear(self) -> None:
        self.db.writer.execute("DELETE FROM timeseries")
