"""Ingestion runs from the aspect store's run ids (gms/runs.py): listing, describing and rolling
back, on the embedded store and on Cassandra."""

from __future__ import annotations

import pytest

from gms.runs import IngestionRuns
from gms.service import Gms
from tests.support.builders import dataset_urn, proposal

ADMIN = "urn:li:corpuser:admin"
KEPT, CREATED, SHARED = dataset_urn("runs.kept"), dataset_urn("runs.created"), dataset_urn("runs.shared")


@pytest.fixture
def gms(gms_on_each_store: Gms) -> Gms:
    return gms_on_each_store


def write(gms: Gms, urn: str, aspect: str, value: dict, run: str | None) -> None:
    metadata = {"runId": run, "lastRunId": "no-run-id-provided"} if run else None
    (result,) = gms.apply([proposal(urn, aspect, value, systemMetadata=metadata)], ADMIN)
    assert result.failure is None, result.to_json()


def description(gms: Gms, urn: str) -> str | None:
    row = gms.store.get(urn, "datasetProperties")
    return row.value["description"] if row is not None and row.exists else None


def two_runs(gms: Gms) -> None:
    write(gms, KEPT, "datasetProperties", {"description": "one"}, "run1")
    write(gms, KEPT, "status", {"removed": False}, "run1")
    write(gms, KEPT, "datasetProperties", {"description": "two"}, "run2")
    write(gms, KEPT, "status", {"removed": False}, "run2")  # the same value: run2 only observed it
    write(gms, CREATED, "datasetProperties", {"description": "created"}, "run2")
    write(gms, SHARED, "datasetProperties", {"description": "shared"}, "run2")
    write(gms, SHARED, "editableDatasetProperties", {"description": "by someone else"}, None)


def test_list_and_describe(gms):
    two_runs(gms)
    runs = IngestionRuns(gms)
    assert {(r["runId"], r["rows"]) for r in runs.list(0, 10, False)} == {("run1", 1), ("run2", 6)}
    assert runs.list(0, 1, False)[0]["runId"] == "run2"  # the newest first
    rows = runs.describe("run2", 0, 100, False, True)
    assert [(r["urn"], r["aspectName"], r["keyAspect"]) for r in rows][:2] == [
        (CREATED, "datasetKey", True), (CREATED, "datasetProperties", False)]
    assert rows[1]["aspect"] == {"description": "created"} and rows[1]["version"] == 1
    write(gms, CREATED, "status", {"removed": True}, None)
    assert len(runs.describe("run2", 0, 100, False, False)) == 4  # a soft-deleted entity's rows left out
    assert len(runs.describe("run2", 0, 100, True, False)) == 6


def test_rollback_restores_what_came_before_the_run(gms):
    two_runs(gms)
    runs = IngestionRuns(gms)
    dry = runs.rollback("run2", ADMIN, dry_run=True)
    assert (dry["entitiesAffected"], dry["aspectsReverted"], dry["unsafeEntitiesCount"]) == (1, 6, 1)
    assert description(gms, KEPT) == "two"  # a dry run writes nothing
    summary = runs.rollback("run2", ADMIN)
    assert summary["unsafeEntities"] == [{"urn": SHARED}] and summary["aspectsAffected"] == 1
    properties = gms.store.get(KEPT, "datasetProperties")
    assert (properties.value, properties.version, properties.system_metadata["runId"]) == (
        {"description": "one"}, 3, "run1")
    status = gms.store.get(KEPT, "status")  # only observed by run2: its run id goes back, no new version
    assert (status.version, status.system_metadata["runId"]) == (1, "run1")
    assert gms.store.entity(CREATED) == []  # created by the run alone: deleted
    assert gms.store.history(CREATED, "datasetProperties")  # its history kept
    assert description(gms, SHARED) is None  # the run's aspect of the shared entity reverted
    assert gms.store.get(SHARED, "status").value == {"removed": True}  # hidden, not deleted
    assert gms.store.get(SHARED, "editableDatasetProperties").exists
    assert runs.describe("run2", 0, 100, False, False) == [] and runs.list(0, 10, False) == [
        {"runId": "run1", "rows": 3, "timestamp": status.system_metadata["lastObserved"]}]
    # what is left of the run: the key aspect of the entity it created and kept hidden
    assert [(r["urn"], r["aspectName"]) for r in runs.describe("run2", 0, 100, True, False)] == [
        (SHARED, "datasetKey")]
    again = runs.rollback("run2", ADMIN)
    assert (again["aspectsReverted"], again["entitiesAffected"]) == (1, 0)
    assert gms.store.get(SHARED, "status").version == 1 and gms.store.get(SHARED, "editableDatasetProperties").exists


def test_rollback_without_safe_deletes_entities_other_runs_wrote_to(gms):
    two_runs(gms)
    summary = IngestionRuns(gms).rollback("run2", ADMIN, safe=False)
    assert summary["entitiesAffected"] == 2 and summary["unsafeEntitiesCount"] == 0
    assert gms.store.entity(SHARED) == [] and gms.store.entity(CREATED) == []
    assert description(gms, KEPT) == "one"


def test_a_rollback_the_actor_may_not_make_writes_nothing(gms):
    two_runs(gms)
    with pytest.raises(Exception, match="forbidden"):
        IngestionRuns(gms).rollback("run2", "urn:li:corpuser:nobody")
    assert description(gms, KEPT) == "two" and gms.store.entity(CREATED)
