"""The read models on the embedded default: SQLite (FTS5) in `<data dir>/readmodels.db`."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from ingest.backends.sqlite import backend_error
from mcl_processor.annotations import annotations_of
from mcl_processor.lineage.sqlite import SqliteLineageGraph
from mcl_processor.readmodels import Preparer, ReadModels
from mcl_processor.readmodels_db import FILE_NAME, Database
from mcl_processor.runs.facts import run_facts_of
from mcl_processor.runs.sqlite import SqliteRunLineage
from mcl_processor.search.sqlite import SqliteSearchIndex
from mcl_processor.timeseries.sqlite import SqliteTimeseriesStore
from schemas.registry import EntityRegistry, default_registry


class SqliteReadModels(ReadModels):
    def __init__(self, path: Path, registry: EntityRegistry | None = None):
        registry = registry or default_registry()
        annotations = annotations_of(registry)
        try:  # the database is opened, the models create their tables
            self.db = Database(path)
            self.search = SqliteSearchIndex(self.db, annotations)
            self.lineage = SqliteLineageGraph(self.db, annotations)
            self.timeseries = SqliteTimeseriesStore(self.db)
            self.runs = SqliteRunLineage(self.db, run_facts_of(registry))
        except sqlite3.Error as err:
            raise backend_error(err, path) from err

    @classmethod
    def in_data_dir(cls, data_dir: Path, registry: EntityRegistry | None = None) -> SqliteReadModels:
        data_dir.mkdir(parents=True, exist_ok=True)
        return cls(data_dir / FILE_NAME, registry)

    def transaction(self) -> AbstractContextManager[object]:
        return self.db.transaction()

    def preparer(self) -> Preparer:
        return self.search.preparer()

    def close(self) -> None:
        self.search.close()
        self.db.close()
