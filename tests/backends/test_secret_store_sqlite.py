"""The secret-store contract on SQLite, and what is particular to it: a file of its own, private,
made by the first write, that keeps no deleted secret."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from gms.service import Gms
from lodestar.secrets import SECRETS_FILE, SecretStore
from lodestar.secrets.beside import secret_store_of
from lodestar.secrets.sqlite import SqliteSecretStore
from tests.contracts.secret_store import Clock, SecretStoreContract


class TestSqliteSecretStore(SecretStoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[Clock], SecretStore]:
        return lambda clock: SqliteSecretStore(tmp_path / "secrets.db", clock=clock)


def test_the_file_is_made_by_the_first_write_readable_by_its_owner_only(tmp_path: Path):
    path = tmp_path / "data" / "secrets.db"
    store = SqliteSecretStore(path)
    assert store.owners() == set() and store.get("urn:li:webhook:a", "0" * 16) is None and store.valid("x") == {}
    assert not path.exists()  # reads make nothing
    store.put("urn:li:webhook:a", "s3cret")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p != path and stat.S_IMODE(p.stat().st_mode) & 0o077]


def test_a_file_others_may_read_is_made_private_again_by_the_next_write(tmp_path: Path):
    store = SqliteSecretStore(tmp_path / "secrets.db")
    store.put("urn:li:webhook:a", "one")
    os.chmod(store.path, 0o644)
    store.put("urn:li:webhook:a", "two")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600


def test_removed_and_expired_secrets_leave_nothing_in_the_file(tmp_path: Path):
    clock = Clock(1_000_000.0)
    store = SqliteSecretStore(tmp_path / "secrets.db", clock=clock)
    removed = "removed-" + "r" * 40
    expired = "expired-" + "e" * 40
    store.put("urn:li:webhook:a", removed)
    name = store.put("urn:li:webhook:b", expired)
    store.put("urn:li:webhook:b", "kept")
    store.expire("urn:li:webhook:b", name, int(clock.now * 1000) + 1000)
    store.remove("urn:li:webhook:a")
    clock.now += 2
    store.put("urn:li:webhook:c", "a later write drops what expired")
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the database and any log beside it
    assert removed.encode() not in files and expired.encode() not in files and b"kept" in files


def test_beside_an_embedded_gms_it_is_the_data_directory_s_file(tmp_path: Path):
    gms = Gms.embedded(tmp_path / "data")
    try:
        store = secret_store_of(gms.store)
        assert isinstance(store, SqliteSecretStore) and store.path == tmp_path / "data" / SECRETS_FILE
        assert secret_store_of(gms.store) is store  # one per aspect store
    finally:
        gms.close()
