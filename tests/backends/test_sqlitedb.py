"""The embedded databases' connections (ingest/backends/sqlite.py): every one is in WAL mode, even to a
new database several processes open at once; a new database gets the page size asked for; and
the write-ahead logs stay bounded under writes that never pause."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

from ingest.backends.sqlite import WalCheckpointer, WalLimit, connect
from mcl_processor.readmodels_db import FILE_NAME, PAGE_SIZE, Database

LIMIT = 1 << 20
COMMITS = 3000  # of 8 KiB each: 24 times the limit


def write_while_reading(path: Path, limit: WalLimit | None) -> list[int]:
    """The log's size after each of COMMITS commits made while two readers query all along
    and a checkpointer copies the log beside them, as in `lodestar serve`."""
    writer = connect(path)
    writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
    checkpointer = WalCheckpointer(path, interval=0.01)
    stop, sizes = threading.Event(), []

    def read() -> None:
        reader = connect(path)
        while not stop.is_set():
            reader.execute("SELECT count(*) FROM rows WHERE id > (SELECT max(id) - 50 FROM rows)").fetchone()
        reader.close()

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for _ in range(COMMITS):
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("INSERT INTO rows (body) VALUES (randomblob(8192))")
            writer.execute("COMMIT")
            if limit is not None:
                limit.after_commit(writer)
            sizes.append(os.stat(f"{path}-wal").st_size)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
        checkpointer.close()
    assert writer.execute("SELECT count(*) FROM rows").fetchone()[0] == COMMITS
    writer.close()
    return sizes


def test_passive_checkpoints_alone_let_the_log_grow_with_every_write(tmp_path: Path):
    sizes = write_while_reading(tmp_path / "unbounded.db", None)
    assert max(sizes) > 16 * LIMIT  # why WalLimit exists


def test_the_log_starts_over_past_its_limit_and_is_cut_back(tmp_path: Path):
    sizes = write_while_reading(tmp_path / "bounded.db", WalLimit(tmp_path / "bounded.db", LIMIT, every=0))
    assert max(sizes) < 8 * LIMIT, f"the log grew to {max(sizes)} bytes"  # a restart fails while readers are in


def _connect_at_once(path: Path, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    connect(path).close()  # raises, so the process exits with 1, if the switch to WAL fails


def test_processes_opening_a_new_database_at_once_all_connect_in_wal_mode(tmp_path: Path):
    forked = multiprocessing.get_context("fork")
    for round_ in range(20):  # a round of the race lost a process about one time in three
        path, start = tmp_path / f"new{round_}.db", forked.Barrier(4)
        processes = [forked.Process(target=_connect_at_once, args=(path, start)) for _ in range(4)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        assert [process.exitcode for process in processes] == [0] * 4, f"round {round_}"
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
