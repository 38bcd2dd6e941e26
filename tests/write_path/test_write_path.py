"""Change types, versions, conditional writes and MCL emission, on the embedded stores and on
the Cassandra aspect store (with an SQLite event log, so its outbox relay is in use)."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gms.service import Gms
from ingest import topics
from ingest.eventlog.sqlite import SqliteEventLog
from lodestar.priority import lower_priority
from schemas.events import default_codec
from tests.support.builders import dataset_urn, properties, proposal

ACTOR = "urn:li:corpuser:alice"
URN = dataset_urn("sales.orders")


@pytest.fixture
def gms(gms_on_each_store: Gms) -> Gms:
    return gms_on_each_store


def apply(gms: Gms, *proposals, headers=None):
    return gms.apply(list(proposals), ACTOR, headers)


def mcls(gms: Gms, topic: str = topics.MCL_VERSIONED) -> list[dict]:
    codec = default_codec()
    return [codec.decode(record.value)[1] for record in gms.log.read(topic, limit=100_000)]


def test_first_write_is_version_1_and_each_change_adds_one(gms: Gms):
    results = apply(gms, proposal(URN, "datasetProperties", properties("v1")),
                    proposal(URN, "datasetProperties", properties("v2")),
                    proposal(URN, "datasetProperties", properties("v3")))
    assert [(r.status, r.version) for r in results] == [("applied", 1), ("applied", 2), ("applied", 3)]
    history = gms.store.history(URN, "datasetProperties")
    assert [h.value["description"] for h in history] == ["v1", "v2", "v3"]
    assert [h.system_metadata["version"] for h in history] == ["1", "2", "3"]


def test_first_write_creates_the_key_aspect_from_the_urn(gms: Gms):
    apply(gms, proposal(URN, "status", {"removed": False}))
    key = gms.store.get(URN, "datasetKey")
    assert key is not None and key.version == 1
    assert key.value == {"platform": "urn:li:dataPlatform:hive", "name": "sales.orders", "origin": "PROD"}
    assert [m["aspectName"] for m in mcls(gms)] == ["datasetKey", "status"]


def test_equal_write_adds_no_version_and_no_mcl_but_refreshes_run_and_last_observed(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("same"),
                        systemMetadata={"runId": "run-1", "lastObserved": 1000}))
    before = len(mcls(gms))
    (result,) = apply(gms, proposal(URN, "datasetProperties", {"customProperties": {}, "description": "same"},
                                    systemMetadata={"runId": "run-2", "lastObserved": 2000}))
    assert (result.status, result.version) == ("noop", 1)
    assert len(mcls(gms)) == before
    stored = gms.store.get(URN, "datasetProperties")
    assert stored.version == 1
    assert stored.system_metadata["runId"] == "run-2"
    assert stored.system_metadata["lastRunId"] == "run-1"
    assert stored.system_metadata["lastObserved"] == 2000


def test_system_metadata_carries_version_and_audit_stamps(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a")))
    gms.apply([proposal(URN, "datasetProperties", properties("b"))], "urn:li:corpuser:bob")
    first, second = gms.store.history(URN, "datasetProperties")
    assert first.system_metadata["aspectCreated"]["actor"] == ACTOR
    assert second.system_metadata["aspectCreated"] == first.system_metadata["aspectCreated"]
    assert second.system_metadata["aspectModified"]["actor"] == "urn:li:corpuser:bob"
    assert second.system_metadata["version"] == "2"


def test_the_versions_of_one_call_carry_one_time(gms: Gms):
    other = dataset_urn("sales.returns")
    apply(gms, proposal(URN, "datasetProperties", properties("a")), proposal(URN, "status", {"removed": False}),
          proposal(other, "datasetProperties", properties("b")))
    written = [gms.store.get(u, a) for u, a in ((URN, "datasetKey"), (URN, "datasetProperties"), (URN, "status"),
                                                (other, "datasetProperties"))]
    assert len({row.system_metadata["aspectModified"]["time"] for row in written}) == 1


def test_mcl_carries_new_and_previous_value_and_system_metadata(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("old")),
          proposal(URN, "datasetProperties", properties("new")))
    last = mcls(gms)[-1]
    assert last["changeType"] == "UPSERT"
    assert json.loads(last["aspect"]["value"])["description"] == "new"
    assert json.loads(last["previousAspectValue"]["value"])["description"] == "old"
    assert last["previousSystemMetadata"]["version"] == "1"
    assert last["systemMetadata"]["version"] == "2"
    assert last["created"]["actor"] == ACTOR


def test_create_fails_when_the_aspect_exists_unless_if_none_match(gms: Gms):
    assert apply(gms, proposal(URN, "status", {"removed": False}, change="CREATE"))[0].status == "applied"
    (failed,) = apply(gms, proposal(URN, "status", {"removed": True}, change="CREATE"))
    assert failed.status == "failed" and failed.http_status == 412
    assert failed.failure.code == "aspect_exists"
    (dropped,) = apply(gms, proposal(URN, "status", {"removed": True}, change="CREATE",
                                     headers={"If-None-Match": "*"}))
    assert dropped.status == "dropped"
    assert gms.store.get(URN, "status").value == {"removed": False}


def test_create_entity_fails_when_the_entity_exists(gms: Gms):
    assert apply(gms, proposal(URN, "status", {"removed": False}, change="CREATE_ENTITY"))[0].status == "applied"
    (failed,) = apply(gms, proposal(URN, "datasetProperties", properties("x"), change="CREATE_ENTITY"))
    assert (failed.status, failed.failure.code, failed.http_status) == ("failed", "entity_exists", 412)
    (dropped,) = apply(gms, proposal(URN, "datasetProperties", properties("x"), change="CREATE_ENTITY",
                                     headers={"If-None-Match": "*"}))
    assert dropped.status == "dropped"
    assert gms.store.get(URN, "datasetProperties") is None


def test_update_fails_when_the_aspect_does_not_exist(gms: Gms):
    (failed,) = apply(gms, proposal(URN, "status", {"removed": True}, change="UPDATE"))
    assert (failed.failure.code, failed.http_status) == ("aspect_missing", 412)
    assert gms.store.entity(URN) == []
    apply(gms, proposal(URN, "status", {"removed": False}))
    assert apply(gms, proposal(URN, "status", {"removed": True}, change="UPDATE"))[0].version == 2


def test_delete_of_an_aspect_keeps_history_and_numbering_continues(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a")))
    (deleted,) = apply(gms, proposal(URN, "datasetProperties", change="DELETE"))
    assert (deleted.status, deleted.version) == ("applied", 2)
    assert not gms.store.get(URN, "datasetProperties").exists
    assert gms.store.get(URN, "datasetProperties", 1).value["description"] == "a"
    assert {a.aspect for a in gms.store.entity(URN)} == {"datasetKey"}
    delete_mcl = mcls(gms)[-1]
    assert delete_mcl["changeType"] == "DELETE" and delete_mcl["aspect"] is None
    assert json.loads(delete_mcl["previousAspectValue"]["value"])["description"] == "a"
    assert apply(gms, proposal(URN, "datasetProperties", properties("b")))[0].version == 3


def test_delete_of_a_missing_aspect_is_a_noop(gms: Gms):
    (result,) = apply(gms, proposal(URN, "status", change="DELETE"))
    assert result.status == "noop"
    assert mcls(gms) == []


def test_delete_of_the_key_aspect_deletes_the_entity(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a")), proposal(URN, "status", {"removed": False}))
    (result,) = apply(gms, proposal(URN, "datasetKey", change="DELETE"))
    assert result.status == "applied"
    assert gms.store.entity(URN) == []
    deletes = [m for m in mcls(gms) if m["changeType"] == "DELETE"]
    assert [m["aspectName"] for m in deletes][-1] == "datasetKey"
    assert {m["aspectName"] for m in deletes} == {"datasetKey", "datasetProperties", "status"}


def test_hard_delete_purges_history(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a")))
    assert gms.delete_entity(URN, hard=True, actor=ACTOR).status == "applied"
    assert gms.store.history(URN, "datasetProperties") == []
    assert gms.delete_entity(URN, hard=True, actor=ACTOR) is None


def test_soft_delete_sets_status_removed(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a")))
    gms.delete_entity(URN, hard=False, actor=ACTOR)
    assert gms.store.get(URN, "status").value == {"removed": True}
    assert gms.store.get(URN, "datasetProperties").exists


def test_patch_applies_json_patch_to_the_current_value(gms: Gms):
    apply(gms, proposal(URN, "datasetProperties", properties("a", team="core")))
    (result,) = apply(gms, proposal(URN, "datasetProperties", [
        {"op": "replace", "path": "/description", "value": "patched"},
        {"op": "add", "path": "/customProperties/tier", "value": "gold"},
    ], change="PATCH"))
    assert (result.status, result.version) == ("applied", 2)
    assert gms.store.get(URN, "datasetProperties").value == {
        "description": "patched", "customProperties": {"team": "core", "tier": "gold"}}
    assert mcls(gms)[-1]["changeType"] == "UPSERT"


def test_patch_of_an_absent_aspect_starts_from_its_default_value(gms: Gms):
    (result,) = apply(gms, proposal(URN, "globalTags", {"patch": [
        {"op": "add", "path": "/tags", "value": [{"tag": "urn:li:tag:pii"}]}]}, change="PATCH"))
    assert result.status == "applied"
    assert gms.store.get(URN, "globalTags").value == {"tags": [{"tag": "urn:li:tag:pii"}]}
    (result,) = apply(gms, proposal(URN, "datasetProperties", [{"op": "add", "path": "/customProperties/a",
                                                                "value": "b"}], change="PATCH"))
    assert result.status == "applied"  # customProperties is there: the schema's default, {}
    assert gms.store.get(URN, "datasetProperties").value == {"customProperties": {"a": "b"}, "tags": []}


def test_patch_result_is_validated_like_an_upsert(gms: Gms):
    apply(gms, proposal(URN, "status", {"removed": False}))
    (failed,) = apply(gms, proposal(URN, "status", [{"op": "replace", "path": "/removed", "value": "yes"}],
                                    change="PATCH"))
    assert failed.failure.code == "invalid_aspect"
    assert "after PATCH" in failed.failure.message and "'removed'" in failed.failure.message
    (bad_path,) = apply(gms, proposal(URN, "status", [{"op": "remove", "path": "/nothing"}], change="PATCH"))
    assert bad_path.failure.code == "invalid_patch"
    assert gms.store.get(URN, "status").version == 1


def test_if_version_match(gms: Gms):
    (created,) = apply(gms, proposal(URN, "status", {"removed": False}, headers={"If-Version-Match": "-1"}))
    assert created.version == 1
    (again,) = apply(gms, proposal(URN, "status", {"removed": True}, headers={"If-Version-Match": "-1"}))
    assert again.failure.to_json() == {
        "error": "precondition_failed", "expected": "-1", "actual": "1",
        "message": "If-Version-Match: expected version -1, the aspect is at 1"}
    assert apply(gms, proposal(URN, "status", {"removed": True}, headers={"If-Version-Match": "1"}))[0].version == 2
    (stale,) = apply(gms, proposal(URN, "status", {"removed": False}, headers={"If-Version-Match": "1"}))
    assert (stale.http_status, stale.failure.expected, stale.failure.actual) == (412, "1", "2")


def test_if_version_match_of_a_version_fails_while_the_aspect_does_not_exist(gms: Gms):
    (failed,) = apply(gms, proposal(URN, "status", {"removed": False}, headers={"If-Version-Match": "2"}))
    assert (failed.http_status, failed.failure.expected, failed.failure.actual) == (412, "2", "-1")
    assert gms.store.get(URN, "status") is None
    assert gms.store.entity(URN) == []


def test_request_headers_apply_and_mcp_headers_win(gms: Gms):
    apply(gms, proposal(URN, "status", {"removed": False}))
    (failed,) = apply(gms, proposal(URN, "status", {"removed": True}), headers={"If-Version-Match": "7"})
    assert failed.failure.code == "precondition_failed"
    (ok,) = apply(gms, proposal(URN, "status", {"removed": True}, headers={"if-version-match": "1"}),
                  headers={"If-Version-Match": "7"})
    assert ok.status == "applied"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_if_unmodified_since_and_if_modified_since(gms: Gms):
    apply(gms, proposal(URN, "status", {"removed": False}))
    now = datetime.now(UTC)
    past, future = _iso(now - timedelta(hours=1)), _iso(now + timedelta(hours=1))
    (stale,) = apply(gms, proposal(URN, "status", {"removed": True}, headers={"If-Unmodified-Since": past}))
    assert stale.failure.code == "precondition_failed" and "If-Unmodified-Since" in stale.failure.message
    (not_modified,) = apply(gms, proposal(URN, "status", {"removed": True}, headers={"If-Modified-Since": future}))
    assert not_modified.failure.code == "precondition_failed"
    assert apply(gms, proposal(URN, "status", {"removed": True},
                               headers={"If-Unmodified-Since": future}))[0].status == "applied"
    assert apply(gms, proposal(URN, "status", {"removed": False},
                               headers={"If-Modified-Since": past}))[0].status == "applied"
    http_date = (now + timedelta(hours=1)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert apply(gms, proposal(URN, "status", {"removed": True},
                               headers={"If-Unmodified-Since": http_date}))[0].status == "applied"


@pytest.mark.parametrize(("headers", "message"), [
    ({"If-Version-Match": "abc"}, "headers.If-Version-Match: 'abc' is not an integer"),
    ({"If-Version-Match": "-5"}, "headers.If-Version-Match: must be -1 or a version >= 1"),
    ({"If-Version-Match": "0"}, "headers.If-Version-Match: must be -1 or a version >= 1"),
    ({"If-Unmodified-Since": "yesterday"}, "headers.If-Unmodified-Since: 'yesterday' is not an ISO-8601 time"),
    ({"If-None-Match": "abc"}, "headers.If-None-Match: only '*' is supported"),
])
def test_malformed_condition_headers_are_rejected(gms: Gms, headers, message):
    (failed,) = apply(gms, proposal(URN, "status", {"removed": False}, headers=headers))
    assert (failed.failure.code, failed.failure.message, failed.http_status) == ("invalid_header", message, 400)
    assert gms.store.entity(URN) == []


def test_timeseries_aspects_are_appended_to_the_timeseries_topic_without_versions(gms: Gms):
    run = "urn:li:dataProcessInstance:run-1"
    event = {"timestampMillis": 1441310434000, "status": "STARTED"}
    results = apply(gms, proposal(run, "dataProcessInstanceRunEvent", event),
                    proposal(run, "dataProcessInstanceRunEvent", {**event, "timestampMillis": 1441310435000}))
    assert [(r.status, r.version) for r in results] == [("applied", None), ("applied", None)]
    assert gms.store.get(run, "dataProcessInstanceRunEvent") is None
    points = mcls(gms, topics.MCL_TIMESERIES)
    assert [json.loads(p["aspect"]["value"])["timestampMillis"] for p in points] == [1441310434000, 1441310435000]
    assert [m["aspectName"] for m in mcls(gms)] == ["dataProcessInstanceKey"]  # the entity exists: its key, once


def test_a_failed_proposal_does_not_stop_the_others(gms: Gms):
    results = apply(gms, proposal(URN, "status", {"removed": False}),
                    proposal(URN, "status", {"removed": "bad"}),
                    proposal(URN, "datasetProperties", properties("still applied")))
    assert [r.status for r in results] == ["applied", "failed", "applied"]


def test_a_call_over_many_entities_keeps_the_order_of_each_entity_and_of_the_results(gms: Gms):
    # The Cassandra store applies the entities of one call concurrently (entity_concurrency).
    urns = [dataset_urn(f"many.t{i}") for i in range(40)]
    results = apply(gms, *[proposal(urn, "datasetProperties", properties(f"v{v}")) for v in (1, 2, 3) for urn in urns],
                    proposal(urns[0], "datasetProperties", {"description": 5}),
                    proposal(urns[1], "datasetKey", change="DELETE"))
    assert [(r.status, r.version) for r in results[:-2]] == [("applied", v) for v in (1, 2, 3) for _ in urns]
    assert [r.status for r in results[-2:]] == ["failed", "applied"]
    for urn in urns[2:]:
        assert [h.value["description"] for h in gms.store.history(urn, "datasetProperties")] == ["v1", "v2", "v3"]
    assert gms.store.entity(urns[1]) == []
    versions: dict[tuple[str, str], list[int]] = {}
    for mcl in mcls(gms):
        versions.setdefault((mcl["entityUrn"], mcl["aspectName"]), []).append(int(mcl["systemMetadata"]["version"]))
    assert versions[(urns[0], "datasetProperties")] == [1, 2, 3]
    assert versions[(urns[1], "datasetProperties")] == [1, 2, 3, 4]  # then tombstoned with its entity
    assert versions[(urns[1], "datasetKey")] == [1, 2]
    assert all(found == sorted(found) for found in versions.values())


def test_the_entities_of_a_call_are_applied_at_the_cpu_priority_of_the_calling_thread(store_keyspace, tmp_path):
    """On Cassandra the entities of a call are applied on a pool's threads: a pool per priority
    of the callers (lodestar/api/writers.py lowers one writer thread's), as threads inherit it."""
    gms = Gms(store_keyspace.store(), SqliteEventLog(tmp_path / "events.db"))
    before = {thread.ident for thread in threading.enumerate()}
    base = os.getpriority(os.PRIO_PROCESS, 0)

    def write(prefix: str) -> None:
        results = apply(gms, *[proposal(dataset_urn(f"{prefix}.t{i}"), "status", {"removed": False}) for i in range(8)])
        assert {r.status for r in results} == {"applied"}

    def lowered() -> None:
        lower_priority(3)
        write("low")
    try:
        thread = threading.Thread(target=lowered)
        thread.start()
        thread.join()
        write("first")
        pools = {int(Path(f"/proc/self/task/{t.native_id}/stat").read_text().rpartition(")")[2].split()[16])
                 for t in threading.enumerate() if t.name.startswith("write-path") and t.ident not in before}
    finally:
        gms.close()
        store_keyspace.clear()
    assert pools == {base, min(base + 3, 19)}


def test_versions_survive_a_restart(tmp_path):
    first = Gms.embedded(tmp_path)
    first.apply([proposal(URN, "status", {"removed": False})], ACTOR)
    first.close()
    second = Gms.embedded(tmp_path)
    assert second.apply([proposal(URN, "status", {"removed": True})], ACTOR)[0].version == 2
    assert len(mcls(second)) == 3
    second.close()


def test_all_or_none_applies_nothing_when_a_proposal_fails_its_checks(gms: Gms):
    valid, invalid = proposal(URN, "status", {"removed": False}), proposal(URN, "status", {"removed": "no"})
    results = gms.apply([valid, invalid], ACTOR, all_or_none=True)
    assert [r.status for r in results] == ["skipped", "failed"] and results[1].failure.code == "invalid_aspect"
    assert gms.store.get(URN, "status") is None and mcls(gms) == []
    assert [r.status for r in gms.apply([valid, invalid], ACTOR)] == ["applied", "failed"]  # by default: each alone
    checked = gms.check([valid, invalid], "urn:li:corpuser:admin")  # validated and authorized
    assert str(checked[0].urn) == URN and checked[1].code == "invalid_aspect"
    assert gms.check([valid], ACTOR)[0].code == "forbidden"
