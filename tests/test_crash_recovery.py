"""A committed version always gets exactly one MCL, even if GMS dies right after the commit."""

from __future__ import annotations

from collections import Counter

import pytest

from ingest import topics
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.rest import LodestarError
from schemas.events import default_codec
from tests.builders import dataset_urn, mcp, properties
from tests.processes import ServeProcess

URN = dataset_urn("crash.orders")


def mcl_versions(data_dir) -> Counter:
    log = SqliteEventLog(data_dir / "eventlog.db")
    codec = default_codec()
    seen: Counter = Counter()
    for record in log.read(topics.MCL_VERSIONED, limit=100_000):
        mcl = codec.decode(record.value)[1]
        seen[(mcl["entityUrn"], mcl["aspectName"], mcl["systemMetadata"]["version"])] += 1
    log.close()
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["after-commit", "before-publish", "after-publish"])
def test_the_mcl_of_a_committed_version_appears_exactly_once_after_a_crash(tmp_path, crash_at):
    dying = ServeProcess(tmp_path, {"LODESTAR_CRASH_AT": crash_at}).start()
    with pytest.raises(LodestarError):
        dying.client().propose([mcp(URN, "datasetProperties", properties("committed"))])
    assert dying.wait() == 137

    with ServeProcess(tmp_path) as restarted:
        stored = restarted.client().aspect(URN, "datasetProperties")
        assert (stored["version"], stored["value"]["description"]) == (1, "committed")
        restarted.client().propose([mcp(URN, "datasetProperties", properties("after restart"))])

    assert mcl_versions(tmp_path) == Counter({
        (URN, "datasetKey", "1"): 1,
        (URN, "datasetProperties", "1"): 1,
        (URN, "datasetProperties", "2"): 1,
    })
