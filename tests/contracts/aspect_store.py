"""What every aspect-store adapter guarantees: one abstract test class, one subclass per adapter.

A subclass only says how to open its store, by overriding the `open_store` fixture: a function
that opens (or reopens, after close) the store of the running test. Tests use fresh URNs, so
adapters may share one database between tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from typing import Any

import orjson
import pytest

from gms.store import AspectStore, OutboxMessage, StoredAspect
from tests.support.backends import unique_name
from tests.support.builders import dataset_urn

TOPIC = "MetadataChangeLog_Versioned_v1"
RACERS = 8


def row(urn: str, aspect: str, version: int, value: Any, **system_metadata: Any) -> StoredAspect:
    value_json = None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return StoredAspect(urn, aspect, version, value_json, {"version": str(version), **system_metadata})


def event(urn: str, label: str) -> OutboxMessage:
    return OutboxMessage(TOPIC, urn, label.encode())


def insert(store: AspectStore, *rows: StoredAspect) -> list[bool]:
    """Insert rows in one batch, each with an event labelled '<aspect> v<version>'."""
    with store.batch() as batch:
        return [batch.insert(r, [event(r.urn, f"{r.aspect} v{r.version}")]) for r in rows]


def pending_of(store: AspectStore, urns: set[str]) -> list[tuple[int, str]]:
    return [(i, m.value.decode()) for i, m in store.pending_outbox(100_000) if m.key in urns]


def scan_pages(store: AspectStore, limit: int, after: tuple[str, str] | None = None) -> list[list[StoredAspect]]:
    pages = []
    while page := list(store.scan_latest(after, limit)):
        pages.append(page)
        after = (page[-1].urn, page[-1].aspect)
    return pages


class AspectStoreContract:
    @pytest.fixture
    def open_store(self) -> Callable[[], AspectStore]:
        raise NotImplementedError("a subclass says how to open its store")

    @pytest.fixture
    def store(self, open_store: Callable[[], AspectStore]) -> Iterator[AspectStore]:
        store = open_store()
        yield store
        store.close()

    @pytest.fixture
    def urn(self) -> str:
        return dataset_urn(unique_name("contract"))

    def test_versions_are_stored_as_given_and_a_batch_reads_its_own_writes(self, store: AspectStore, urn: str):
        with store.batch() as batch:
            assert batch.latest(urn, "status") is None
            assert batch.insert(row(urn, "status", 1, {"removed": False}), [event(urn, "status v1")])
            assert batch.latest(urn, "status").value == {"removed": False}
            assert batch.insert(row(urn, "status", 2, {"removed": True}), [event(urn, "status v2")])
            assert [(a.aspect, a.version) for a in batch.live_aspects(urn)] == [("status", 2)]
        assert [(h.version, h.value) for h in store.history(urn, "status")] == [(1, {"removed": False}),
                                                                              (2, {"removed": True})]
        assert store.get(urn, "status").version == 2
        assert store.get(urn, "status", 1).system_metadata == {"version": "1"}
        assert store.get(urn, "status", 3) is None

    def test_a_prefetched_entity_reads_the_same_and_sees_the_batch_own_writes(self, store: AspectStore, urn: str):
        insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "datasetKey", 1, {"name": "k"}))
        with store.batch() as batch:
            batch.prefetch(urn, 2)
            assert batch.latest(urn, "status").version == 1 and batch.latest(urn, "globalTags") is None
            assert batch.insert(row(urn, "status", 2, None), [event(urn, "status v2")])
            assert batch.insert(row(urn, "globalTags", 1, {"tags": []}), [event(urn, "globalTags v1")])
            assert batch.latest(urn, "status").version == 2
            assert [(a.aspect, a.version) for a in batch.live_aspects(urn)] == [("datasetKey", 1), ("globalTags", 1)]
            batch.refresh(urn, "globalTags", 1, {"version": "1", "lastObserved": 5})
            assert batch.latest(urn, "globalTags").system_metadata == {"version": "1", "lastObserved": 5}
        assert store.get(urn, "globalTags").system_metadata == {"version": "1", "lastObserved": 5}

    def test_a_version_the_batch_wrote_cannot_be_inserted_again_in_it(self, store: AspectStore, urn: str):
        with store.batch() as batch:
            assert batch.latest(urn, "status") is None
            assert batch.insert(row(urn, "status", 1, {"removed": False}), [event(urn, "status v1")])
            assert not batch.insert(row(urn, "status", 1, {"removed": True}), [event(urn, "loser 1")])
            batch.prefetch(urn, 2)
            assert not batch.insert(row(urn, "status", 1, {"removed": True}), [event(urn, "loser 2")])
            assert batch.insert(row(urn, "status", 2, {"removed": True}), [event(urn, "status v2")])
            assert batch.latest(urn, "status").version == 2
        assert [(h.version, h.value) for h in store.history(urn, "status")] == [(1, {"removed": False}),
                                                                              (2, {"removed": True})]
        assert [label for _, label in pending_of(store, {urn})] == ["status v1", "status v2"]

    def test_writes_held_together_are_read_back_in_the_block_and_stored_in_order_after_it(
            self, store: AspectStore, urn: str):
        insert(store, row(urn, "status", 1, {"removed": False}))
        with store.batch() as batch, batch.together(urn) as held:
            assert batch.insert(row(urn, "status", 2, {"removed": True}), [event(urn, "status v2")])
            batch.append_outbox([event(urn, "a point")])
            assert batch.insert(row(urn, "globalTags", 1, {"tags": []}), [event(urn, "globalTags v1")])
            batch.refresh(urn, "globalTags", 1, {"version": "1", "lastObserved": 5})
            assert not batch.insert(row(urn, "status", 2, {"removed": False}), [event(urn, "the loser")])
            assert batch.latest(urn, "status").version == 2
            assert [(a.aspect, a.version) for a in batch.live_aspects(urn)] == [("globalTags", 1), ("status", 2)]
        assert held.applied
        assert [label for _, label in pending_of(store, {urn})] == ["status v1", "status v2", "a point",
                                                                    "globalTags v1"]
        assert [h.version for h in store.history(urn, "status")] == [1, 2]
        assert store.get(urn, "globalTags").system_metadata == {"version": "1", "lastObserved": 5}

    def test_writes_held_together_are_dropped_when_the_block_fails(self, store: AspectStore, urn: str):
        with pytest.raises(RuntimeError, match="half way"), store.batch() as batch, batch.together(urn):
            assert batch.insert(row(urn, "status", 1, {"removed": False}), [event(urn, "status v1")])
            raise RuntimeError("half way")
        assert store.get(urn, "status") is None and pending_of(store, {urn}) == []

    def test_unknown_entities_and_aspects_read_as_absent(self, store: AspectStore, urn: str):
        assert store.get(urn, "status") is None
        assert store.history(urn, "status") == []
        assert store.entity(urn) == []

    def test_inserting_an_existing_version_fails_and_adds_no_event(self, store: AspectStore, urn: str):
        assert insert(store, row(urn, "status", 1, {"removed": False})) == [True]
        with store.batch() as batch:
            assert not batch.insert(row(urn, "status", 1, {"removed": True}), [event(urn, "the loser")])
        assert store.get(urn, "status").value == {"removed": False}
        assert [label for _, label in pending_of(store, {urn})] == ["status v1"]

    def test_of_writers_racing_for_one_version_exactly_one_wins(self, store: AspectStore, urn: str):
        insert(store, row(urn, "status", 1, {"removed": False}))
        start = threading.Barrier(RACERS)

        def race(writer: int) -> bool:
            start.wait()
            with store.batch() as batch:
                return batch.insert(row(urn, "status", 2, {"removed": True}, writer=writer),
                                    [event(urn, f"writer {writer}")])

        with ThreadPoolExecutor(RACERS) as pool:
            outcomes = list(pool.map(race, range(RACERS)))
        assert outcomes.count(True) == 1
        winner = outcomes.index(True)
        assert store.get(urn, "status").system_metadata["writer"] == winner
        assert [label for _, label in pending_of(store, {urn})] == ["status v1", f"writer {winner}"]

    def test_a_deletion_is_the_latest_version_but_not_live(self, store: AspectStore, urn: str):
        insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "globalTags", 1, {"tags": []}),
               row(urn, "globalTags", 2, None))
        latest = store.get(urn, "globalTags")
        assert (latest.version, latest.exists, latest.value) == (2, False, None)
        assert [h.exists for h in store.history(urn, "globalTags")] == [True, False]
        assert [a.aspect for a in store.entity(urn)] == ["status"]
        with store.batch() as batch:
            assert [a.aspect for a in batch.live_aspects(urn)] == ["status"]
            assert not batch.latest(urn, "globalTags").exists

    def test_live_keys_are_the_entities_whose_key_aspect_is_newest_and_not_deleted(self, store: AspectStore,
                                                                                 urn: str):
        deleted, revived, keyless = (dataset_urn(unique_name(name)) for name in ("deleted", "revived", "keyless"))
        insert(store, row(urn, "datasetKey", 1, {"name": "a"}), row(urn, "datasetKey", 2, {"name": "a"}),
               row(deleted, "datasetKey", 1, {"name": "b"}), row(deleted, "datasetKey", 2, None),
               row(revived, "datasetKey", 1, None), row(revived, "datasetKey", 2, {"name": "c"}),
               row(keyless, "status", 1, {"removed": False}))
        unknown = dataset_urn(unique_name("unknown"))
        asked = {u: "datasetKey" for u in (urn, deleted, revived, keyless, unknown)}
        assert store.live_keys(asked) == {urn, revived}
        assert store.live_keys({urn: "status"}) == set() and store.live_keys({}) == set()

    def test_refresh_replaces_the_system_metadata_of_one_version(self, store: AspectStore, urn: str):
        insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "status", 2, {"removed": True}))
        with store.batch() as batch:
            batch.refresh(urn, "status", 1, {"version": "1", "runId": "run-2"})
        assert store.get(urn, "status", 1).system_metadata == {"version": "1", "runId": "run-2"}
        assert store.get(urn, "status", 1).value == {"removed": False}
        assert store.get(urn, "status").system_metadata == {"version": "2"}

    def test_purge_removes_the_entity_but_neither_other_entities_nor_pending_events(self, store: AspectStore,
                                                                                     urn: str):
        other = dataset_urn(unique_name("other"))
        insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "globalTags", 1, {"tags": []}),
               row(other, "status", 1, {"removed": False}))
        with store.batch() as batch:
            batch.purge(urn)
            assert batch.latest(urn, "status") is None
        assert store.history(urn, "status") == [] and store.entity(urn) == []
        assert [a.aspect for a in store.entity(other)] == ["status"]
        assert len(pending_of(store, {urn, other})) == 3
        assert insert(store, row(urn, "status", 1, {"removed": True})) == [True]  # numbering starts again

    def test_pending_events_come_in_commit_order_until_acknowledged(self, store: AspectStore, urn: str):
        other = dataset_urn(unique_name("other"))
        insert(store, row(urn, "status", 1, {"removed": False}), row(other, "status", 1, {"removed": False}))
        insert(store, row(urn, "status", 2, {"removed": True}))
        with store.batch() as batch:
            batch.append_outbox([event(other, "point 1"), event(other, "point 2")])
        pending = pending_of(store, {urn, other})
        assert [label for _, label in pending] == ["status v1", "status v1", "status v2", "point 1", "point 2"]
        ids = [i for i, _ in pending]
        assert ids == sorted(set(ids))
        assert [i for i, _ in store.pending_outbox(2)] == ids[:2]
        store.ack_outbox(ids[:2])
        assert pending_of(store, {urn, other}) == pending[2:]
        store.ack_outbox([ids[-1]])
        assert store.pending_outbox() == []

    def test_the_producer_id_and_rising_outbox_ids_survive_reopening(self, open_store: Callable[[], AspectStore],
                                                                     urn: str):
        store = open_store()
        producer = store.producer_id
        insert(store, row(urn, "status", 1, {"removed": False}))
        ((first, _),) = store.pending_outbox()
        store.ack_outbox([first])
        store.close()
        store = open_store()
        assert store.producer_id == producer
        insert(store, row(urn, "status", 2, {"removed": True}))
        ((second, message),) = store.pending_outbox()
        assert second > first and message.value == b"status v2"
        store.close()

    def test_data_and_pending_events_survive_reopening(self, open_store: Callable[[], AspectStore], urn: str):
        store = open_store()
        insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "status", 2, {"removed": True}))
        store.close()
        store = open_store()
        assert [h.value for h in store.history(urn, "status")] == [{"removed": False}, {"removed": True}]
        assert [label for _, label in pending_of(store, {urn})] == ["status v1", "status v2"]
        assert insert(store, row(urn, "status", 2, {"removed": False})) == [False]
        store.close()

    def _scanned_entities(self, store: AspectStore) -> dict[tuple[str, str], int]:
        """Five entities, one of them wholly deleted: the (urn, aspect) -> version a scan must return."""
        prefix = unique_name("scan")
        expected = {}
        for n in range(5):
            urn = dataset_urn(f"{prefix}.t{n}")
            insert(store, row(urn, "status", 1, {"removed": False}), row(urn, "datasetProperties", 1, {"name": "a"}),
                   row(urn, "datasetProperties", 2, {"name": "b"}), row(urn, "globalTags", 1, {"tags": []}),
                   row(urn, "globalTags", 2, None))
            if n == 4:
                insert(store, row(urn, "status", 2, None), row(urn, "datasetProperties", 3, None))
            else:
                expected |= {(urn, "status"): 1, (urn, "datasetProperties"): 2}
        return expected

    def test_scan_latest_returns_every_live_latest_version_once_in_full_pages(self, store: AspectStore):
        expected = self._scanned_entities(store)
        pages = scan_pages(store, limit=3)
        assert all(len(page) == 3 for page in pages[:-1])
        rows = [r for page in pages for r in page]
        positions = [(r.urn, r.aspect) for r in rows]
        assert len(positions) == len(set(positions))
        assert {(r.urn, r.aspect): r.version for r in rows if (r.urn, r.aspect) in expected} == expected
        assert all(r.exists for r in rows)
        runs = [urn for urn, _ in groupby(r.urn for r in rows)]
        assert len(runs) == len(set(runs)), "the aspects of one entity come together"

    def test_scan_latest_pages_past_purged_and_recreated_entities(self, store: AspectStore):
        # Enough aspects that the store's own paging (on Cassandra: over a hundred rows a
        # request) ends past entities whose versions a purge removed.
        prefix = unique_name("purged")
        urns = [dataset_urn(f"{prefix}.t{n}") for n in range(80)]
        insert(store, *(row(urn, aspect, 1, {"n": n}) for n, urn in enumerate(urns)
                        for aspect in ("status", "globalTags")))
        made, purged, recreated = set(urns), urns[::3], urns[::6]
        with store.batch() as batch:
            for urn in purged:
                batch.purge(urn)
        insert(store, *(row(urn, "status", 1, {"again": True}) for urn in recreated))
        expected = {(urn, aspect) for urn in urns if urn not in purged for aspect in ("status", "globalTags")}
        expected |= {(urn, "status") for urn in recreated}
        for limit in (1, 7):
            scanned = [r for page in scan_pages(store, limit) for r in page if r.urn in made]
            assert sorted((r.urn, r.aspect) for r in scanned) == sorted(expected)
            assert all(r.value == {"again": True} for r in scanned if r.urn in recreated and r.aspect == "status")

    def test_scan_latest_resumes_after_any_returned_position(self, store: AspectStore):
        self._scanned_entities(store)
        rows = [r for page in scan_pages(store, limit=1000) for r in page]
        for cut in (0, 1, len(rows) // 2, len(rows) - 1):
            after = (rows[cut].urn, rows[cut].aspect)
            assert [r for page in scan_pages(store, limit=4, after=after) for r in page] == rows[cut + 1:]
