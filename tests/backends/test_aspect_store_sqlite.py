"""The aspect-store contract on SQLite, with the outbox table in use (no co-located event log),
and the layouts of its database file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gms.store import AspectStore
from gms.store.sqlite import SqliteAspectStore
from ingest.backends.sqlite import PAGE_SIZE
from tests.contracts.aspect_store import AspectStoreContract, insert, row
from tests.support.builders import dataset_urn

EARLIER_LAYOUT = """
CREATE TABLE aspects (
    urn TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL,
    value TEXT, system_metadata TEXT NOT NULL,
    PRIMARY KEY (urn, aspect, version)
) WITHOUT ROWID;
"""


class TestSqliteAspectStore(AspectStoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], AspectStore]:
        return lambda: SqliteAspectStore(tmp_path / "aspects.db")


def indexes(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'aspects' AND sql IS NOT NULL")]


def test_a_new_database_has_large_pages_and_its_versions_found_by_a_unique_index(tmp_path: Path):
    store = SqliteAspectStore(tmp_path / "aspects.db")
    urn = dataset_urn("new.layout")
    assert insert(store, row(urn, "status", 1, {"removed": False})) == [True]
    assert insert(store, row(urn, "status", 1, {"removed": True})) == [False]
    store.close()
    assert indexes(tmp_path / "aspects.db") == ["aspects_version"]
    with sqlite3.connect(tmp_path / "aspects.db") as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE


def test_a_database_of_the_earlier_layout_is_read_and_written_as_it_is(tmp_path: Path):
    path = tmp_path / "aspects.db"
    urn = dataset_urn("earlier.layout")
    with sqlite3.connect(path) as conn:
        conn.executescript(EARLIER_LAYOUT)
        conn.execute("INSERT INTO aspects VALUES (?, 'status', 1, '{\"removed\":false}', '{\"version\":\"1\"}')",
                     (urn,))
    store = SqliteAspectStore(path)
    with store.batch() as batch:
        batch.prefetch(urn, 2)
        assert batch.latest(urn, "status").value == {"removed": False}
        assert not batch.insert(row(urn, "status", 1, {"removed": True}), [])
        assert batch.insert(row(urn, "status", 2, {"removed": True}), [])
    assert [(h.version, h.value) for h in store.history(urn, "status")] == [(1, {"removed": False}),
                                                                          (2, {"removed": True})]
    store.close()
    assert indexes(path) == []  # no second index over the table's own key


def test_prefetched_entities_are_read_together_when_the_first_is_needed(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gms.store.sqlite._READ_TOGETHER", 2)
    store = SqliteAspectStore(tmp_path / "aspects.db")
    urns = [dataset_urn(f"together.t{i}") for i in range(3)]
    insert(store, *(row(urn, "status", 1, {"removed": False}) for urn in urns[:2]))
    queries: list[str] = []
    with store.batch() as batch:
        assert batch.latest(urns[0], "status").version == 1
        assert batch.insert(row(urns[0], "status", 2, {"removed": True}), [])  # the version after a known one waits
        batch.conn.set_trace_callback(queries.append)
        for urn in urns:
            batch.prefetch(urn, 2)
        assert queries == []  # nothing read before it is needed
        assert [batch.latest(urn, "status") and batch.latest(urn, "status").version for urn in urns] == [2, 1, None]
        assert batch.live_aspects(urns[2]) == []
        reads = [q for q in queries if q.startswith("SELECT")]
        assert len(reads) == 2 and all("IN (" in q for q in reads)  # three entities, two at a time
        assert any(q.startswith("INSERT") for q in queries[:queries.index(reads[0])])  # the waiting write first
        batch.conn.set_trace_callback(None)
    store.close()
