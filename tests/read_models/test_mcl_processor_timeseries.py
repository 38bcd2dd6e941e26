"""The timeseries-store contract, over real MCLs: points in time order, ranges, limits,
re-appended points replaced, deleted entities forgotten.

`TimeseriesStoreContract` holds the tests; each subclass only says how to build the read models.
"""

from __future__ import annotations

from mcl_processor.opensearch import indices as opensearch_indices
from tests.contracts.timeseries_store import TimeseriesStoreContract
from tests.support.readmodels import OnOpenSearch, OnSqlite


class TestSqliteTimeseriesStore(OnSqlite, TimeseriesStoreContract):
    pass


class TestOpenSearchTimeseriesStore(OnOpenSearch, TimeseriesStoreContract):
    def test_series_longer_than_the_result_window(self, indexed, monkeypatch):
        monkeypatch.setattr(opensearch_indices, "RESULT_WINDOW", 7)  # deeper pages continue with search_after
        self.test_limits_and_long_series(indexed)
