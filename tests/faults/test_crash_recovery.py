"""A committed version always gets exactly one MCL, even if the process dies right after the commit;
in both MCL wire formats."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gms.service import DATABASE, Gms
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.backends import sqlite as sqlite_backend
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.rest import LodestarError
from schemas.mcl_wire import WIRE_FORMATS, MclReader
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import ServeProcess

URN = dataset_urn("crash.orders")
EXPECTED = Counter({(URN, "datasetKey", "1"): 1, (URN, "datasetProperties", "1"): 1,
                    (URN, "datasetProperties", "2"): 1})


pytestmark = pytest.mark.parametrize("wire_format", WIRE_FORMATS)


def mcl_versions(log: SqliteEventLog) -> Counter:
    """MCLs of URN on the versioned topic, in either wire format, by (urn, aspect, version)."""
    reader = MclReader()
    seen: Counter = Counter()
    for record in log.read(topics.MCL_VERSIONED, limit=100_000):
        mcl = reader.decode(record.value)
        if mcl["entityUrn"] == URN:
            seen[(mcl["entityUrn"], mcl["aspectName"], mcl["systemMetadata"]["version"])] += 1
    return seen


@pytest.mark.slow
def test_embedded_server_killed_right_after_a_commit_loses_and_doubles_nothing(tmp_path, wire_format):
    env = {"LODESTAR_KAFKA_WIRE_FORMAT": wire_format}
    Gms.embedded(tmp_path, wire_format=wire_format).close()  # the first start (a confluent one registers)
    dying = ServeProcess(tmp_path, {**env, "LODESTAR_CRASH_AT": "after-commit"}).start()
    with pytest.raises(LodestarError):
        dying.client().propose([mcp(URN, "datasetProperties", properties("committed"))])
    assert dying.wait() == 137

    with ServeProcess(tmp_path, env) as restarted:
        stored = restarted.client().aspect(URN, "datasetProperties")
        assert (stored["version"], stored["value"]["description"]) == (1, "committed")
        restarted.client().propose([mcp(URN, "datasetProperties", properties("after restart"))])

    log = SqliteEventLog(tmp_path / DATABASE)
    assert mcl_versions(log) == EXPECTED
    log.close()


_OUTBOX_WRITER = """
import sys
from pathlib import Path
from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.eventlog.sqlite import SqliteEventLog
from tests.support.builders import proposal
data = Path(sys.argv[1])
gms = Gms(SqliteAspectStore(data / "aspects.db"), SqliteEventLog(data / "log.db"), wire_format=sys.argv[3])
gms.apply([proposal(sys.argv[2], "datasetProperties", {"description": "committed"})], "urn:li:corpuser:a")
"""


def outbox_gms(data: Path, wire_format: str) -> Gms:
    """GMS with the aspect store and the log in separate databases: MCLs go through the outbox and relay,
    as they do with Cassandra and Kafka."""
    return Gms(SqliteAspectStore(data / "aspects.db"), SqliteEventLog(data / "log.db"), wire_format=wire_format)


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["after-commit", "before-publish", "after-publish"])
def test_outbox_relay_killed_around_publication_publishes_each_mcl_once(tmp_path, crash_at, wire_format):
    outbox_gms(tmp_path, wire_format).close()  # the first start (a confluent one registers)
    died = subprocess.run([sys.executable, "-c", _OUTBOX_WRITER, str(tmp_path), URN, wire_format],
                          env={"LODESTAR_CRASH_AT": crash_at, "PYTHONPATH": str(Path.cwd())}, capture_output=True)
    assert died.returncode == 137, died.stderr
    restarted = outbox_gms(tmp_path, wire_format)  # publishes what the dead process committed
    assert restarted.store.get(URN, "datasetProperties").value == {"description": "committed"}
    restarted.apply([mcp_proposal("after restart")], "urn:li:corpuser:a")
    assert restarted.store.pending_outbox() == []
    assert mcl_versions(restarted.log) == EXPECTED
    restarted.close()


def test_a_restart_that_cannot_publish_what_was_left_pending_starts_and_the_next_write_publishes_it(
        tmp_path, monkeypatch, caplog, wire_format):
    """The log unavailable when GMS starts (here: locked past its busy timeout; on a cluster, a
    lightweight transaction of the outbox timing out on a busy ring) does not stop the start."""
    outbox_gms(tmp_path, wire_format).close()
    died = subprocess.run([sys.executable, "-c", _OUTBOX_WRITER, str(tmp_path), URN, wire_format],
                          env={"LODESTAR_CRASH_AT": "after-commit", "PYTHONPATH": str(Path.cwd())}, capture_output=True)
    assert died.returncode == 137, died.stderr
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_S", 1)
    store, log = SqliteAspectStore(tmp_path / "aspects.db"), SqliteEventLog(tmp_path / "log.db")
    locker = sqlite3.connect(tmp_path / "log.db", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    restarted = Gms(store, log, wire_format=wire_format)
    locker.execute("ROLLBACK")
    locker.close()
    assert "MCLs a previous process left pending" in caplog.text
    assert [m.key for _, m in store.pending_outbox()] == [URN, URN]  # the key aspect's and the properties'
    restarted.apply([mcp_proposal("after restart")], "urn:li:corpuser:a")
    assert store.pending_outbox() == []
    assert mcl_versions(log) == EXPECTED
    restarted.close()


def mcp_proposal(description: str):
    from tests.support.builders import proposal
    return proposal(URN, "datasetProperties", {"description": description})
