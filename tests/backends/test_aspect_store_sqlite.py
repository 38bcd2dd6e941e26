"""The aspect-store contract on SQLite, with the outbox table in use (no co-located event log)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gms.store import AspectStore
from gms.store.sqlite import SqliteAspectStore
from tests.contracts.aspect_store import AspectStoreContract


class TestSqliteAspectStore(AspectStoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], AspectStore]:
        return lambda: SqliteAspectStore(tmp_path / "aspects.db")
