"""The timeseries port's contract: every adapter (SQLite, OpenSearch) passes these tests."""

from __future__ import annotations

from ingest import topics
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import IndexedByModels

ORDERS, ITEMS = dataset_urn("db.orders"), dataset_urn("db.items")


def profile(ts: int, rows: int, partition: str | None = None) -> dict:
    spec = {"partitionSpec": {"partition": partition}} if partition else {}
    return {"timestampMillis": ts, "rowCount": rows, **spec}


class TimeseriesStoreContract(IndexedByModels):
    def test_points_are_time_ordered_ranged_and_idempotent(self, indexed):
        indexed.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}))
        indexed.write(*[proposal(ORDERS, "datasetProfile", profile(ts, ts)) for ts in (3000, 1000, 2000)])
        indexed.write(proposal(ORDERS, "datasetProfile", profile(2000, 2001)))  # the same point again
        indexed.write(proposal(ORDERS, "datasetProfile", profile(2000, 7, "day=2")))
        series = indexed.models.timeseries
        assert [(p["timestampMillis"], p["rowCount"]) for p in series.query(ORDERS, "datasetProfile")] == [
            (1000, 1000), (2000, 2001), (2000, 7), (3000, 3000)]
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile", start=1500, end=2500, limit=1)] == [2001]
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile", start=2001)] == [3000]
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile", end=1000)] == [1000]
        indexed.processor.process(indexed.gms.log.read(topics.MCL_TIMESERIES, limit=100))  # a replay
        assert len(series.query(ORDERS, "datasetProfile")) == 4
        indexed.write(proposal(ORDERS, "datasetKey", change="DELETE"))
        assert series.query(ORDERS, "datasetProfile") == []

    def test_entities_and_aspects_are_kept_apart(self, indexed):
        indexed.write(*[proposal(urn, "datasetProperties", {"name": urn}) for urn in (ORDERS, ITEMS)])
        indexed.write(proposal(ORDERS, "datasetProfile", profile(1, 10)),
                      proposal(ITEMS, "datasetProfile", profile(1, 20)))
        series = indexed.models.timeseries
        assert [p["rowCount"] for p in series.query(ITEMS, "datasetProfile")] == [20]
        assert series.query(ORDERS, "dataProcessInstanceRunEvent") == []
        assert series.query(ORDERS, "noSuchAspect") == [] and series.query(ORDERS, "x,*") == []
        indexed.write(proposal(ITEMS, "datasetKey", change="DELETE"))
        assert series.query(ITEMS, "datasetProfile") == []
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile")] == [10]
        series.clear()
        assert series.query(ORDERS, "datasetProfile") == []

    def test_limits_and_long_series(self, indexed):
        indexed.write(*[proposal(ORDERS, "datasetProfile", profile(ts, ts)) for ts in range(300)])
        series = indexed.models.timeseries
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile")] == list(range(300))
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile", start=100, limit=3)] == [100, 101, 102]
        assert series.query(ORDERS, "datasetProfile", limit=0) == []
