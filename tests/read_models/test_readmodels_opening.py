"""Processes opening a new read-models database at once (the processes of `--workers` starting
on an empty data directory) each get every read model, whichever creates the tables."""

from __future__ import annotations

from pathlib import Path

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
