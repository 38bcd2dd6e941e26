"""GMS on each aspect store: the embedded SQLite one and Cassandra (a keyspace per test module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gms.service import Gms
from ingest.backends import Endpoints
from ingest.eventlog.sqlite import SqliteEventLog
from tests.support.scratch_keyspace import ScratchKeyspace


@pytest.fixture(scope="module")
def store_keyspace(cassandra_endpoints: Endpoints) -> Iterator[ScratchKeyspace]:
    keyspace = ScratchKeyspace(cassandra_endpoints)
    yield keyspace
    keyspace.drop()


@pytest.fixture(params=["embedded", "cassandra"])
def gms_on_each_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gms]:
    """A GMS on the embedded store, then on Cassandra (emptied after each test)."""
    if request.param == "embedded":
        service = Gms.embedded(tmp_path / "data")
        yield service
        service.close()
        return
    keyspace: ScratchKeyspace = request.getfixturevalue("store_keyspace")
    service = Gms(keyspace.store(), SqliteEventLog(tmp_path / "events.db"))
    yield service
    service.close()
    keyspace.clear()
