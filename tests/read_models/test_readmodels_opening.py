"""Processes opening a new read-models database at once (the processes of `--workers` starting
on an empty data directory) each get every read model, whichever creates the tables."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from ingest.backends import sqlite as sqlite_backend
from ingest.backends.errors import BackendUnavailable
from mcl_processor import readmodels_db
from mcl_processor.embedded import SqliteReadModels
from tests.support.racing import race


def _open(path: Path) -> None:
    SqliteReadModels(path).close()  # raises, so the process exits with 1, if a read model fails to open


def test_processes_opening_a_new_read_models_database_at_once_all_open_it(tmp_path: Path):
    for round_ in range(12):  # "vtable constructor failed" lost a process about one start in twelve
        assert race(_open, tmp_path / f"readmodels{round_}.db") == [0] * 4, f"round {round_}"
    models = SqliteReadModels(tmp_path / "readmodels0.db")
    assert models.search.query("anything").total == 0  # every table there, and usable
    models.close()


def test_an_opening_waits_for_another_process_updating_the_tables_past_the_usual_lock_wait(tmp_path: Path,
                                                                                           monkeypatch):
    path = tmp_path / "readmodels.db"
    SqliteReadModels(path).close()
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_S", 0.2)  # every other write waits this long
    monkeypatch.setattr(readmodels_db, "BUSY_TIMEOUT_S", 0.2)
    updating = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    updating.execute("BEGIN IMMEDIATE")  # another process, taking a while to update the tables
    released = threading.Timer(1.0, updating.execute, ("COMMIT",))
    released.start()
    models = SqliteReadModels(path)
    assert not updating.in_transaction  # it waited for the lock, then opened
    updating.execute("BEGIN IMMEDIATE")
    with pytest.raises(BackendUnavailable), models.db.transaction():  # after the opening, writes wait as before
        pass
    updating.execute("COMMIT")
    models.close()
    updating.close()
