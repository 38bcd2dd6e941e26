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

    def test_a_deletion_removes_the_points_in_its_window_only(self, indexed):
        indexed.write(*[proposal(urn, "datasetProfile", profile(ts, ts)) for urn in (ORDERS, ITEMS)
                        for ts in (1000, 2000, 3000, 4000)])
        indexed.write(proposal(ORDERS, "datasetProfile", profile(2000, 7, "day=2")))
        series = indexed.models.timeseries
        assert series.count(ORDERS) == 5 and series.count(ORDERS, "datasetProfile", 2000, 3000) == 3
        assert series.count(ORDERS, "datasetUsageStatistics") == 0
        indexed.gms.delete_timeseries(ORDERS, "datasetProfile", 2000, 3000, "urn:li:corpuser:tester")
        indexed.index()
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile")] == [1000, 4000]
        assert [p["rowCount"] for p in series.query(ITEMS, "datasetProfile")] == [1000, 2000, 3000, 4000]
        assert series.count(ORDERS) == 2
        indexed.gms.delete_timeseries(ORDERS, "datasetProfile", None, 1000, "urn:li:corpuser:tester")
        indexed.index()
        assert [p["rowCount"] for p in series.query(ORDERS, "datasetProfile")] == [4000]
        indexed.gms.delete_timeseries(ITEMS, "datasetProfile", None, None, "urn:li:corpuser:tester")
        indexed.index()
        assert series.count(ITEMS) == 0 and series.count(ORDERS) == 1

    def test_a_deletion_keeps_the_points_that_came_after_it_also_on_replay(self, indexed):
        series = indexed.models.timeseries
        indexed.gms.apply([proposal(ORDERS, "datasetProfile", profile(ts, 1)) for ts in (1000, 2000)], "u")
        indexed.gms.delete_timeseries(ORDERS, "datasetProfile", 1000, 2000, "u")
        indexed.gms.apply([proposal(ORDERS, "datasetProfile", profile(1500, 2))], "u")
        indexed.index()  # the three in one batch: the deletion drops the two before it, not the one after
        assert [(p["timestampMillis"], p["rowCount"]) for p in series.query(ORDERS, "datasetProfile")] == [(1500, 2)]
        series.clear()
        for partition in range(indexed.gms.log.partitions(topics.MCL_TIMESERIES)):  # a replay of the topic
            indexed.processor.process(indexed.gms.log.read(topics.MCL_TIMESERIES, partition, limit=100))
        assert [(p["timestampMillis"], p["rowCount"]) for p in series.query(ORDERS, "datasetProfile")] == [(1500, 2)]
        indexed.processor.process(indexed.gms.log.read(topics.MCL_TIMESERIES, limit=100)[:2])  # before it only
        assert len(series.query(ORDERS, "datasetProfile")) == 3
        indexed.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}))  # restores keep existing entities'
        series.clear()
        indexed.processor.restore(indexed.gms.store, timeseries_log=indexed.gms.log)  # lodestar restore-indices
        assert [(p["timestampMillis"], p["rowCount"]) for p in series.query(ORDERS, "datasetProfile")] == [(1500, 2)]
