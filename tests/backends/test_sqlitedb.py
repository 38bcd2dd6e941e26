"""The embedded databases' connections (ingest/backends/sqlite.py): every one is in WAL mode, even to a
new database several processes open at once; a new database gets the page size asked for; the
write-ahead logs stay bounded under writes that never pause; and read models' connections do not
map the file."""

from __future__ import annotations

import os
from pathlib import Path

from ingest.backends.sqlite import WalLimit, connect
from mcl_processor.readmodels_db import FILE_NAME, PAGE_SIZE, Database
from tests.support.racing import race

LIMIT = 1 << 18
COMMITS = 800  # of 8 KiB each: 25 times the limit


def write_while_reading(path: Path, limit: WalLimit | None, readers_leave_after: int | None = None) -> list[int]:
    """The log's size after each of COMMITS commits of 8 KiB, with a passive checkpoint after
    each (as the checkpointer of `lodestar serve` makes beside the writers) and readers that
    never leave the log empty: before each commit one reader opens a read transaction, then
    the other ends its own, so one is always in, as under a steady read load. After
    `readers_leave_after` commits they read between commits only, leaving the log empty
    whenever the writer commits. Deterministic: no threads, no timing."""
    writer = connect(path)
    writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
    checkpointer = connect(path)
    readers = [connect(path), connect(path)]
    sizes: list[int] = []
    for commit in range(COMMITS):
        steady = readers_leave_after is None or commit < readers_leave_after
        entering, leaving = readers[commit % 2], readers[(commit + 1) % 2]
        entering.execute("BEGIN")
        entering.execute("SELECT count(*) FROM rows").fetchone()  # its snapshot now holds the log
        if leaving.in_transaction:
            leaving.execute("COMMIT")
        if not steady:
            entering.execute("COMMIT")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO rows (body) VALUES (randomblob(8192))")
        writer.execute("COMMIT")
        if limit is not None:
            limit.after_commit(writer)
        checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        sizes.append(os.stat(f"{path}-wal").st_size)
    for conn in (*readers, checkpointer):
        conn.close()
    assert writer.execute("SELECT count(*) FROM rows").fetchone()[0] == COMMITS
    writer.close()
    return sizes


def test_passive_checkpoints_alone_let_the_log_grow_with_every_write(tmp_path: Path):
    sizes = write_while_reading(tmp_path / "unbounded.db", None)
    assert sizes[-1] > 16 * LIMIT  # why WalLimit exists
    assert all(later > earlier for earlier, later in zip(sizes, sizes[1:], strict=False))


def test_the_log_starts_over_past_its_limit_and_is_cut_back(tmp_path: Path):
    half = COMMITS // 2
    sizes = write_while_reading(tmp_path / "bounded.db", WalLimit(tmp_path / "bounded.db", LIMIT, every=0),
                                readers_leave_after=half)
    assert sizes[half - 1] > 8 * LIMIT  # a restart fails, never waits, while a reader is in the log
    assert max(sizes[half + 2:]) <= LIMIT  # from the first commit that finds no reader in: cut back, and kept so


def _connect(path: Path) -> None:
    connect(path).close()  # raises, so the process exits with 1, if the switch to WAL fails


def test_processes_opening_a_new_database_at_once_all_connect_in_wal_mode(tmp_path: Path):
    for round_ in range(20):  # a round of the race lost a process about one time in three
        path = tmp_path / f"new{round_}.db"
        assert race(_connect, path) == [0] * 4, f"round {round_}"
        check = connect(path)
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        check.close()


def test_a_new_database_gets_the_page_size_asked_for_and_an_existing_one_keeps_its_own(tmp_path: Path):
    old = connect(tmp_path / "old.db")
    old.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY)")
    old.close()
    for name, expected in (("new.db", 16384), ("old.db", 4096)):
        conn = connect(tmp_path / name, page_size=16384)
        conn.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO rows DEFAULT VALUES")
        assert conn.execute("PRAGMA page_size").fetchone()[0] == expected, name
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_a_new_read_model_database_has_pages_of_page_size(tmp_path: Path):
    db = Database(tmp_path / FILE_NAME)
    db.writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY)")
    assert db.writer.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
    db.close()


def test_read_model_connections_read_pages_without_mapping_the_file(tmp_path: Path):
    """A mapped file's page faults read around each page as far as the disk reads ahead (8 MiB
    on some): a query meeting pages the page cache dropped would read megabytes per page."""
    path = tmp_path / FILE_NAME
    db = Database(path)
    with db.transaction() as conn:
        conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
        conn.executemany("INSERT INTO rows VALUES (?, zeroblob(4000))", [(n,) for n in range(500)])
    db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages read from the database file itself
    assert db.reader().execute("SELECT count(*), sum(length(body)) FROM rows").fetchone() == (500, 2_000_000)
    assert db.writer.execute("SELECT count(*) FROM rows").fetchone() == (500,)
    mapped = [line for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path))]
    assert mapped == []
    db.close()
