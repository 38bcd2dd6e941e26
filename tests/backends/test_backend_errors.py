"""Every adapter raises its driver's errors as the one hierarchy of ingest.backends.errors, and
the layers above know only that: a backend that does not answer is BackendUnavailable (503
over HTTP, one line on the command line), whichever driver said so. Real backends throughout:
a SQLite database locked by another connection, servers behind a proxy that is cut, ports
where nothing listens."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from cassandra import InvalidRequest
from confluent_kafka import KafkaException
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError

import ingest.backends.sqlite
from gms.service import Gms
from gms.store import StoredAspect
from gms.store.cassandra import CassandraAspectStore
from gms.store.cassandra_schema import Runner, while_unavailable
from gms.store.sqlite import SqliteAspectStore
from ingest.backends import Endpoints
from ingest.backends.errors import BackendFailure, BackendUnavailable
from ingest.eventlog import LogMessage
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.sqlite import SqliteEventLog
from mcl_processor.annotations import annotations_of
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.opensearch.indices import client_for
from mcl_processor.search.opensearch import OpenSearchSearchIndex
from schemas.registry import default_registry
from tests.support.backends import unique_name
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import run_cli
from tests.support.scratch_keyspace import ScratchKeyspace
from tests.support.server import TOKEN, free_port, start_server
from tests.support.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = {"sqlite3", "cassandra", "opensearchpy", "confluent_kafka"}
BUSY_TIMEOUT = 0.2  # seconds a SQLite connection of these tests waits for a lock (the default is 30)


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections opened from now on give up waiting for another connection's lock after BUSY_TIMEOUT."""
    monkeypatch.setattr(ingest.backends.sqlite, "BUSY_TIMEOUT_S", BUSY_TIMEOUT)


@pytest.fixture
def lock() -> Iterator[Callable[[Path], None]]:
    """lock(path): another connection takes the write lock of the database at path until the test ends."""
    holders: list[sqlite3.Connection] = []

    def take(path: Path) -> None:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holders.append(holder)

    yield take
    for holder in holders:
        holder.execute("ROLLBACK")
        holder.close()


def _row(urn: str) -> StoredAspect:
    return StoredAspect(urn, "status", 1, '{"removed":false}', {})


Adapter = tuple[Path, Callable[[], None], Callable[[], None]]  # the database file, a write to it, close


def _store_batch(tmp_path: Path) -> Adapter:
    store = SqliteAspectStore(tmp_path / "lodestar.db")

    def write() -> None:
        with store.batch() as batch:
            batch.insert(_row("urn:li:corpuser:locked"), [])

    return store.path, write, store.close


def _log_append(tmp_path: Path) -> Adapter:
    log = SqliteEventLog(tmp_path / "lodestar.db")
    return log.path, lambda: log.append("Topic_v1", [LogMessage("k", b"v")]), log.close


def _offsets_commit(tmp_path: Path) -> Adapter:
    log = SqliteEventLog(tmp_path / "lodestar.db")
    return log.offsets_path, lambda: log.commit("group", {("Topic_v1", 0): 1}), log.close


def _read_models_write(tmp_path: Path) -> Adapter:
    models = SqliteReadModels.in_data_dir(tmp_path, default_registry())
    return models.db.path, models.clear, models.close


@pytest.mark.parametrize("adapter", [_store_batch, _log_append, _offsets_commit, _read_models_write],
                         ids=["aspect store batch", "event log append", "offsets commit", "read models write"])
def test_a_sqlite_database_locked_by_another_connection_is_backend_unavailable_not_a_sqlite3_error(
        tmp_path: Path, short_busy_timeout: None, lock: Callable[[Path], None], adapter: Callable[[Path], Adapter]):
    path, write, close = adapter(tmp_path)
    try:
        lock(path)
        with pytest.raises(BackendUnavailable, match=f"SQLite database {path}: database is locked") as raised:
            write()
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    finally:
        close()


def test_a_file_that_is_no_database_is_a_backend_failure_not_unavailable(tmp_path: Path):
    path = tmp_path / "lodestar.db"
    path.write_bytes(b"this is not a SQLite database\n" * 200)
    with pytest.raises(BackendFailure, match="file is not a database") as raised:
        SqliteAspectStore(path)
    assert not isinstance(raised.value, BackendUnavailable)
    assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)


def test_kafka_where_nothing_listens_is_backend_unavailable():
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable, match=f"Kafka at {address}") as raised:
        KafkaEventLog(address, connect_timeout=1)
    assert isinstance(raised.value.__cause__, KafkaException)


def test_opensearch_cut_off_after_answering_is_backend_unavailable(opensearch_url: str):
    host, _, port = opensearch_url.removeprefix("http://").partition(":")
    proxy = TcpProxy(host, int(port or 9200))
    client = client_for(Endpoints(opensearch_url=f"http://{proxy.address}"), timeout=5)
    index = OpenSearchSearchIndex(client, annotations_of(default_registry()), unique_name("errors"))
    try:
        assert index.query("*").total == 0  # answered: no index of this prefix yet
        proxy.cut()
        with pytest.raises(BackendUnavailable, match=f"OpenSearch at {proxy.address} does not answer") as raised:
            index.query("*")
        assert isinstance(raised.value.__cause__, OpenSearchConnectionError)
    finally:
        client.close()
        proxy.close()


@pytest.fixture(scope="module")
def keyspace(cassandra_endpoints: Endpoints) -> Iterator[ScratchKeyspace]:
    space = ScratchKeyspace(cassandra_endpoints)
    yield space
    space.drop()


def test_cassandra_cut_off_after_answering_is_backend_unavailable(cassandra_endpoints: Endpoints,
                                                                  keyspace: ScratchKeyspace):
    hosts, port = cassandra_endpoints.cassandra_contact_points()
    proxy = TcpProxy(hosts[0], port)
    store = CassandraAspectStore.connect(Endpoints(cassandra_hosts=(proxy.address,)), keyspace.name,
                                         unique_name("producer"), connect_timeout=2, request_timeout=3)
    try:
        assert store.get("urn:li:corpuser:nobody", "corpUserKey") is None  # answered
        proxy.cut()
        with pytest.raises(BackendUnavailable, match=f"Cassandra at {proxy.address}"):
            store.get("urn:li:corpuser:nobody", "corpUserKey")
    finally:
        store.close()
        proxy.close()


def test_a_statement_cassandra_refuses_is_a_backend_failure(keyspace: ScratchKeyspace):
    store = keyspace.store()
    try:
        with pytest.raises(BackendFailure, match="InvalidRequest") as raised:
            Runner(store.session).execute(f'SELECT * FROM "{keyspace.name}".no_such_table')
        assert isinstance(raised.value.__cause__, InvalidRequest)
    finally:
        store.close()


def test_a_write_while_the_embedded_database_stays_locked_is_503_with_retry_after_then_applies(
        tmp_path: Path, short_busy_timeout: None, lock: Callable[[Path], None]):
    gms = Gms.embedded(tmp_path / "data")
    models = SqliteReadModels.in_data_dir(tmp_path / "data", gms.registry)
    server, thread = start_server(gms, models)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"proposals": [mcp(dataset_urn("errors.locked"), "datasetProperties", properties("x"))]}
    try:
        lock(gms.store.path)
        refused = requests.post(f"{server.url}/v1/proposals", json=body, headers=auth, timeout=30)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"] == "backend_unavailable" and refused.headers["Retry-After"]
        assert "database is locked" in refused.json()["message"]
    finally:
        thread.stop()
        models.close()
        gms.close()


def test_the_cli_names_a_backend_that_does_not_answer_in_one_line(tmp_path: Path):
    address = f"127.0.0.1:{free_port()}"
    done = run_cli("check", "--data-dir", str(tmp_path / "data"),
                   env={"LODESTAR_ASPECT_STORE": "cassandra", "LODESTAR_CASSANDRA_HOSTS": address,
                        "LODESTAR_LOG_LEVEL": "CRITICAL"})  # (the driver logs its failed attempts)
    assert done.returncode == 1
    assert done.stderr.startswith(f"lodestar: error: Cassandra at {address} does not answer")
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_http_layer_and_the_command_line_import_no_driver():
    found = {}
    for path in [*(ROOT / "lodestar" / "api").rglob("*.py"), *(ROOT / "lodestar" / "cli").rglob("*.py"),
                 ROOT / "lodestar" / "server.py", ROOT / "lodestar" / "assembly.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if drivers := {name.split(".")[0] for name in names} & DRIVERS:
                found[str(path.relative_to(ROOT))] = drivers
    assert found == {}



def test_an_idempotent_statement_is_asked_again_while_cassandra_is_unavailable() -> None:
    """A producer's registration (IF NOT EXISTS) timing out under contention, as a gms restarting
    on a busy cluster saw, is asked again; what stays unavailable past the wait is raised."""
    attempts: list[int] = []

    def times_out_twice() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise BackendUnavailable("Cassandra at 127.0.0.2:9042: WriteTimeout (CAS, SERIAL)")
        return "registered"

    assert while_unavailable(times_out_twice, wait=5, pause=0.01) == "registered"
    assert len(attempts) == 3

    def always_down() -> str:
        raise BackendUnavailable("Cassandra at 127.0.0.2:9042: NoHostAvailable")

    with pytest.raises(BackendUnavailable, match="NoHostAvailable"):
        while_unavailable(always_down, wait=0.05, pause=0.01)

    def refused() -> str:
        attempts.append(1)
        raise BackendFailure("Cassandra: InvalidRequest")

    attempts.clear()
    with pytest.raises(BackendFailure):
        while_unavailable(refused, wait=5, pause=0.01)
    assert len(attempts) == 1  # what Cassandra refuses is not asked again
