"""The data directory of `lodestar serve` is its user's alone: 0700, and every file Lodestar makes
in it (databases and their -wal/-shm, locks, the admin token, metrics) 0600; a directory made
before is tightened when Lodestar starts, and the log says so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gms.service import Gms
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import ServeProcess

URN = dataset_urn("private.orders")


def modes(data_dir: Path) -> dict[str, int]:
    """The permission bits of the data directory ('.') and of everything in it."""
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for path in data_dir.rglob("*"):
        found[str(path.relative_to(data_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_a_new_data_directory_and_everything_lodestar_writes_in_it_are_private(tmp_path):
    data_dir = tmp_path / "data"
    previous = os.umask(0o022)  # as a login shell's: what Lodestar makes is not private by accident
    try:
        with ServeProcess(data_dir, None, "--workers", "2") as serve:
            answer = serve.client().call("POST", "/v1/proposals", {"waitForIndex": True, "proposals": [
                mcp(URN, "datasetProperties", properties("orders"))]})
            assert answer["indexed"] is True
            running = modes(data_dir)
    finally:
        os.umask(previous)
    for name in ("lodestar.db", "lodestar.db-wal", "readmodels.db", "readmodels.db-wal", "admin.token", "metrics",
                 "server.url"):
        assert name in running, sorted(running)
    assert {name: mode for name, mode in running.items() if mode & 0o077} == {}
    assert running["."] == 0o700 and running["lodestar.db"] == 0o600 and running["metrics"] == 0o700
    assert {name: mode for name, mode in modes(data_dir).items() if mode & 0o077} == {}  # and after it stopped


def test_a_data_directory_made_before_is_tightened_at_start_and_the_log_says_so(tmp_path):
    data_dir = tmp_path / "data"
    previous = os.umask(0o022)
    try:
        Gms.embedded(data_dir).close()  # as earlier versions left it: 0755, databases 0644
        (data_dir / "notes.txt").write_text("the operator's own file")
    finally:
        os.umask(previous)
    before = modes(data_dir)
    assert before["."] == 0o755 and before["lodestar.db"] == 0o644
    with ServeProcess(data_dir) as serve:
        assert serve.client().request("GET", "/health")[0] == 200
    after = modes(data_dir)
    assert after["."] == 0o700 and after["lodestar.db"] == 0o600
    assert after["notes.txt"] == 0o644  # not Lodestar's: left alone (the directory keeps others out)
    assert f"data directory {data_dir}: took the group's and others' permissions off" in serve.output()
