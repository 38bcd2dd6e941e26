"""The aspect-store contract on Cassandra, and what is particular to it: several GMS instances
(stores) on one keyspace, producers, outbox writes whose outcome is unknown, token ranges,
restore from Cassandra and connection errors. One keyspace for the whole module, dropped at its end."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cassandra.connection import ConnectionShutdown
from cassandra.policies import RetryPolicy
from cassandra.query import BatchStatement

from gms.service import Gms
from gms.store import AspectStore, cassandra_outbox
from gms.store import cassandra as cassandra_store
from gms.store.cassandra import CassandraAspectStore
from gms.store.cassandra_lease import Lease, Leases, ProducerInUse
from gms.store.cassandra_outbox import Reserved
from gms.store.cassandra_schema import QUORUM, SERIAL, Runner, applied, unlogged_batch
from gms.write_path import Result
from ingest.backends import Endpoints
from ingest.backends.errors import BackendUnavailable
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.topics import MCL_VERSIONED
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.contracts.aspect_store import RACERS, AspectStoreContract, event, insert, pending_of, row, scan_pages
from tests.support.backends import unique_name
from tests.support.builders import dataset_urn, proposal
from tests.support.scratch_keyspace import ScratchKeyspace
from tests.support.server import free_port

ACTOR = "urn:li:corpuser:tester"


@pytest.fixture(scope="module")
def keyspace(cassandra_endpoints: Endpoints) -> Iterator[ScratchKeyspace]:
    scratch = ScratchKeyspace(cassandra_endpoints)
    yield scratch
    scratch.drop()


@pytest.fixture
def urn() -> str:
    return dataset_urn(unique_name("cassandra"))


class TestCassandraAspectStore(AspectStoreContract):
    @pytest.fixture
    def open_store(self, keyspace: ScratchKeyspace) -> Callable[[], AspectStore]:
        producer = unique_name("producer")
        return lambda: keyspace.store(producer)


def test_of_gms_instances_racing_for_one_version_exactly_one_wins(keyspace: ScratchKeyspace, urn: str):
    insert(keyspace.store(), row(urn, "status", 1, {"removed": False}))
    stores = [keyspace.store() for _ in range(RACERS)]  # one producer each, as one GMS instance each
    start = threading.Barrier(RACERS)

    def race(writer: int) -> bool:
        start.wait()
        with stores[writer].batch() as batch:
            return batch.insert(row(urn, "status", 2, {"removed": True}, writer=writer), [event(urn, f"w{writer}")])

    with ThreadPoolExecutor(RACERS) as pool:
        outcomes = list(pool.map(race, range(RACERS)))
    winner = outcomes.index(True)
    assert outcomes.count(True) == 1
    assert [[label for _, label in pending_of(store, {urn})] for store in stores] == [
        [f"w{winner}"] if writer == winner else [] for writer in range(RACERS)]
    assert stores[0].get(urn, "status").system_metadata["writer"] == winner


def test_a_second_open_store_with_the_same_producer_id_is_refused(keyspace: ScratchKeyspace, urn: str):
    producer = unique_name("producer")
    first = keyspace.store(producer)
    with pytest.raises(ProducerInUse, match=producer):
        keyspace.store(producer, lease_ttl=2)  # waits twice its TTL for the first's lease, renewed meanwhile
    insert(first, row(urn, "status", 1, {"removed": False}))
    assert first.get(urn, "status").version == 1


def test_a_lease_is_asked_again_through_unavailability_longer_than_its_holders_wait(keyspace: ScratchKeyspace):
    """A starting store's lease request timing out (a busy ring, contention on the lease's row, as
    a gms restarting on the cluster saw) is asked again past the wait for another holder (here
    none), up to START_WAIT; a lease that another holds is still refused after that wait."""
    leases = Leases(Runner(keyspace.session), keyspace.name)
    answers = iter([BackendUnavailable("Cassandra at 127.0.0.2:9042: WriteTimeout (CAS, SERIAL)")] * 3)
    real_acquire = leases.acquire

    def times_out_three_times(producer: str, holder: str, ttl: int) -> bool:
        if (timeout := next(answers, None)) is not None:
            raise timeout
        return real_acquire(producer, holder, ttl)

    leases.acquire = times_out_three_times  # type: ignore[method-assign]
    producer = unique_name("producer")
    lease = Lease(leases, producer, ttl=2)
    lease.acquire(wait=0)
    assert lease.check() == 1
    with pytest.raises(ProducerInUse, match=producer):
        Lease(leases, producer, ttl=2).acquire(wait=0)


def test_the_relay_waits_for_an_earlier_write_still_in_progress(keyspace: ScratchKeyspace, urn: str,
                                                                  caplog: pytest.LogCaptureFixture):
    store = keyspace.store(settle_after=0.2)
    outbox = store._outbox  # a write begun (id handed out) but not yet settled, as in another thread
    (early,) = outbox.ids.allocate(1)
    insert(store, row(urn, "status", 1, {"removed": False}))
    assert store.pending_outbox() == []  # id `early` might still be published: nothing after it goes first
    assert f"outbox id {early} still being written after 0.2s" in caplog.text  # what holds the relay, told
    outbox.ids.settle([early], certain=True)
    assert [m.value for _, m in store.pending_outbox()] == [b"status v1"]


class AnswerLostOnce:
    """A runner whose first request is applied but answered with a timeout, as when the replica
    coordinating a lightweight transaction dies under it."""

    def __init__(self, runner: Runner):
        self.runner, self.session, self.lost = runner, runner.session, False

    def execute(self, statement: Any, params: Any = None) -> Any:
        result = self.runner.execute(statement, params)
        if not self.lost:
            self.lost = True
            raise BackendUnavailable("Cassandra at 127.0.0.2:9042: WriteTimeout (CAS, SERIAL)")
        return result


def test_a_reservation_of_outbox_ids_applied_but_unanswered_is_taken_by_the_next(keyspace: ScratchKeyspace,
                                                                                   urn: str):
    """The lightweight transaction moving a producer's counter was applied but its answer lost:
    the next reservation takes that block rather than refusing the producer as used by another
    store, which stopped every later write of the process."""
    store = keyspace.store()
    ids = store._outbox.ids
    runner = ids._db
    ids._db = AnswerLostOnce(runner)  # type: ignore[assignment]
    with pytest.raises(BackendUnavailable):
        ids.allocate(1)
    assert ids.allocate(2) == [ids.first, ids.first + 1]
    ids.settle([ids.first, ids.first + 1], certain=True)
    insert(store, row(urn, "status", 1, {"removed": False}))
    assert [(i, m.value) for i, m in store.pending_outbox()] == [(ids.first + 2, b"status v1")]


def test_a_lease_acquired_by_a_request_whose_answer_was_lost_is_held(keyspace: ScratchKeyspace):
    """The lease's lightweight transaction was applied but its answer lost: asked again, it finds
    its own holder and has the lease, instead of refusing the start as if another store held it."""
    leases = Leases(Runner(keyspace.session), keyspace.name)
    leases._db = AnswerLostOnce(leases._db)  # type: ignore[assignment]
    lease = Lease(leases, unique_name("producer"), ttl=2)
    lease.acquire(wait=0)
    assert leases._db.lost and lease.check() == 1


def test_the_stores_lightweight_transactions_are_never_sent_twice_by_the_driver(keyspace: ScratchKeyspace,
                                                                                  urn: str):
    """A request whose connection closed while it was in flight (the node coordinating it died)
    is sent to the next node, except a conditional one, which may have been applied: a second
    attempt would answer [applied] = false for the first one's own rows, and the store took
    that for a conflict and dropped the event's pointer (an MCL never published)."""
    store = keyspace.store()
    policy = keyspace.session.cluster.profile_manager.default.retry_policy
    outbox, lost = store._outbox, ConnectionShutdown("Connection to 127.0.0.2:9042 was closed")
    event_row = (outbox._add, (urn, outbox.producer, 1, MCL_VERSIONED, urn, b"v1"))
    pointer = (outbox._point, (outbox.producer, 1, urn))
    for statement, decision in [(outbox._add.bind(event_row[1]), RetryPolicy.RETHROW),
                                (unlogged_batch([pointer, event_row]), RetryPolicy.RETHROW),
                                (outbox.ids._reserve.bind((2, outbox.producer, 1)), RetryPolicy.RETHROW),
                                (outbox._point.bind(pointer[1]), RetryPolicy.RETRY_NEXT_HOST),
                                (unlogged_batch([pointer]), RetryPolicy.RETRY_NEXT_HOST)]:
        assert policy.on_request_error(statement, QUORUM, lost, 0)[0] == decision


def test_an_event_whose_write_failed_is_fenced_the_relay_goes_on_and_the_late_batch_never_applies(
        keyspace: ScratchKeyspace, urn: str):
    store = keyspace.store()
    with pytest.raises(TimeoutError), store._outbox.writing(urn, [event(urn, "lost")]) as staged:
        late = unlogged_batch(staged.rows)  # the batch, still on its way to Cassandra when the client gave up
        raise TimeoutError("the conditional batch timed out")  # its pointer is written, its outcome unknown
    insert(store, row(urn, "status", 1, {"removed": False}))
    assert [m.value for _, m in store.pending_outbox()] == [b"status v1"]  # no waiting for the unknown write
    assert not applied(store.session.execute(late))  # arriving now, it finds the fence: never half-published
    store.ack_outbox([i for i, _ in store.pending_outbox()])
    assert store.pending_outbox() == []


def test_an_event_whose_write_timed_out_but_landed_is_published_in_its_place(keyspace: ScratchKeyspace, urn: str):
    producer = unique_name("producer")
    store = keyspace.store(producer)
    with pytest.raises(TimeoutError), store._outbox.writing(urn, [event(urn, "landed")]) as staged:
        store.session.execute(unlogged_batch(staged.rows))  # applied, but the client saw a timeout
        raise TimeoutError("the conditional batch timed out")
    insert(store, row(urn, "status", 1, {"removed": False}))
    store.close()  # a process killed then: its successor (same producer id) publishes both, in order
    restarted = keyspace.store(producer)
    assert [m.value for _, m in restarted.pending_outbox()] == [b"landed", b"status v1"]


def test_a_prefetched_entity_is_read_again_once_another_writer_took_a_version(keyspace: ScratchKeyspace, urn: str):
    store, other = keyspace.store(), keyspace.store()  # two GMS instances
    insert(store, row(urn, "status", 1, {"removed": False}))
    with store.batch() as batch:
        batch.prefetch(urn, 2)
        assert batch.latest(urn, "status").version == 1  # read when first needed
        insert(other, row(urn, "status", 2, {"removed": True}))
        assert batch.latest(urn, "status").version == 1  # as read
        assert not batch.insert(row(urn, "status", 2, {"removed": False}), [event(urn, "the loser")])
        assert batch.latest(urn, "status").value == {"removed": True}  # read afresh, as the retry does
        assert batch.insert(row(urn, "status", 3, {"removed": False}), [event(urn, "status v3")])
    assert [h.version for h in store.history(urn, "status")] == [1, 2, 3]


def test_writes_held_together_are_none_written_once_another_writer_took_one_of_their_versions(
        keyspace: ScratchKeyspace, urn: str):
    store, other = keyspace.store(), keyspace.store()  # two GMS instances
    insert(store, row(urn, "status", 1, {"removed": False}))
    with store.batch() as batch:
        with batch.together(urn) as held:
            assert batch.insert(row(urn, "globalTags", 1, {"tags": []}), [event(urn, "globalTags v1")])
            assert batch.insert(row(urn, "status", 2, {"removed": True}), [event(urn, "the loser")])
            insert(other, row(urn, "status", 2, {"removed": False}))  # meanwhile
        assert not held.applied
        assert batch.latest(urn, "status").value == {"removed": False}  # read afresh, as the retry does
    assert store.get(urn, "globalTags") is None
    assert [label for _, label in pending_of(store, {urn})] == ["status v1"]
    assert [label for _, label in pending_of(other, {urn})] == ["status v2"]


class _Statements:
    """The statements a store's session runs, by kind ('serial read', 'conditional batch', ...)."""

    def __init__(self, store: CassandraAspectStore, monkeypatch: pytest.MonkeyPatch):
        self.kinds: list[str] = []
        run = store._db.execute

        conditional = {store._insert_version.query_id, store._outbox._add.query_id}

        def execute(statement: Any, params: Any = None) -> Any:
            self.kinds.append(_kind(statement, conditional))
            return run(statement, params)

        monkeypatch.setattr(store._db, "execute", execute)
        monkeypatch.setattr(store._db, "concurrently", lambda statements, concurrency=64: [
            execute(statement, params) for statement, params in statements])


def _kind(statement: Any, conditional: set[bytes]) -> str:
    if isinstance(statement, BatchStatement):  # of prepared statements: (True, query id, values) each
        return "conditional batch" if {s[1] for s in statement._statements_and_parameters} & conditional else "batch"
    cql = getattr(statement, "query_string", None) or statement.prepared_statement.query_string
    if cql.startswith("SELECT"):
        return "serial read" if statement.consistency_level == SERIAL else "read"
    return "conditional" if " IF " in cql else "write"


def test_a_request_reads_its_entities_together_and_writes_each_with_one_conditional_batch(
        keyspace: ScratchKeyspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = keyspace.store()
    gms = Gms(store, SqliteEventLog(tmp_path / "events.db"))
    urns = [dataset_urn(unique_name("grouped")) for _ in range(3)]
    gms.apply([proposal(urns[0], "status", {"removed": False})], ACTOR)  # an id block reserved, the outbox relayed
    monkeypatch.setattr(cassandra_store, "READ_TOGETHER", 2)
    statements = _Statements(store, monkeypatch)
    results = gms.writes.apply([proposal(urn, aspect, value) for urn in urns for aspect, value in (
        ("datasetProperties", {"name": "n"}), ("globalTags", {"tags": []}), ("status", {"removed": True}))], ACTOR)
    assert [r.version for r in results] == [1, 1, 2] + [1, 1, 1] * 2
    # the pointers of two entities' outbox ids written in one request, then the third's
    assert sorted(statements.kinds) == sorted(["read"] * 3 + ["batch"] * 2 + ["conditional batch"] * 3)
    assert [h.version for h in store.history(urns[1], "datasetKey")] == [1]  # the key aspect in the same batch
    gms.relay.publish_pending()
    published = [(record["entityUrn"], record["aspectName"], record["systemMetadata"]["version"])
                 for record in (gms.codec.decode(r.value)[1] for r in gms.log.read(MCL_VERSIONED))]
    assert published[2:] == [(urn, aspect, version) for urn, aspects in (
        (urns[0], [("datasetProperties", "1"), ("globalTags", "1"), ("status", "2")]),
        (urns[1], [("datasetKey", "1"), ("datasetProperties", "1"), ("globalTags", "1"), ("status", "1")]),
        (urns[2], [("datasetKey", "1"), ("datasetProperties", "1"), ("globalTags", "1"), ("status", "1")]),
    ) for aspect, version in aspects]
    gms.close()


def test_an_entity_whose_held_writes_fill_up_is_written_in_several_conditional_batches(
        keyspace: ScratchKeyspace, urn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = keyspace.store()
    gms = Gms(store, SqliteEventLog(tmp_path / "events.db"))
    monkeypatch.setattr(cassandra_store, "HELD_BYTES", 1)  # full after each proposal
    statements = _Statements(store, monkeypatch)
    results = gms.apply([proposal(urn, "datasetProperties", {"name": f"v{n}"}) for n in range(1, 4)], ACTOR)
    assert [(r.status, r.version) for r in results] == [("applied", 1), ("applied", 2), ("applied", 3)]
    assert statements.kinds.count("conditional batch") == 3
    assert [h.value["name"] for h in store.history(urn, "datasetProperties")] == ["v1", "v2", "v3"]
    published = [(r["aspectName"], r["systemMetadata"]["version"])
                 for r in (gms.codec.decode(record.value)[1] for record in gms.log.read(MCL_VERSIONED))]
    assert published == [("datasetKey", "1"), ("datasetProperties", "1"), ("datasetProperties", "2"),
                         ("datasetProperties", "3")]
    gms.close()


def test_gms_instances_racing_on_one_entity_write_every_version_once_with_one_mcl_each(
        keyspace: ScratchKeyspace, urn: str, tmp_path: Path):
    services = [Gms(keyspace.store(), SqliteEventLog(tmp_path / f"events-{n}.db")) for n in range(RACERS)]
    start = threading.Barrier(RACERS)

    def race(n: int) -> list[Result]:
        start.wait()
        return services[n].apply([
            proposal(urn, "globalTags", {"tags": [{"tag": f"urn:li:tag:t{n}"}]}),
            proposal(urn, "datasetProperties", {"name": f"writer {n}"})], ACTOR)

    with ThreadPoolExecutor(RACERS) as pool:
        results = [result for pair in pool.map(race, range(RACERS)) for result in pair]
    assert all(r.status == "applied" for r in results), [r.to_json() for r in results]
    assert sorted(r.version for r in results) == sorted(list(range(1, RACERS + 1)) * 2)
    published = [(record["aspectName"], record["systemMetadata"]["version"]) for service in services
                 for record in (service.codec.decode(r.value)[1] for r in service.log.read(MCL_VERSIONED))]
    assert sorted(published) == sorted([("datasetKey", "1")] + [(aspect, str(v)) for v in range(1, RACERS + 1)
                                                                 for aspect in ("datasetProperties", "globalTags")])
    for service in services:
        service.close()


def test_outbox_ids_reserved_for_prefetched_entities_and_not_taken_leave_no_pointer(
        keyspace: ScratchKeyspace, urn: str, monkeypatch: pytest.MonkeyPatch):
    store = keyspace.store()
    other = dataset_urn(unique_name("cassandra"))
    statements = _Statements(store, monkeypatch)
    with store.batch() as batch:
        batch.prefetch(urn, 4)  # new entities: 4 versions and the key aspect expected of each
        batch.prefetch(other, 4)
        assert batch.latest(urn, "status") is None  # both read, and their ids reserved
        assert batch.insert(row(urn, "status", 1, {"removed": False}), [event(urn, "status v1")])
    assert [kind for kind in statements.kinds if kind != "conditional"] == [  # (but the id block's reservation)
        "read", "read", "batch", "conditional batch", "batch"]  # the unused pointers of both, in one request
    pointers = f'SELECT id FROM "{keyspace.name}".outbox_pending WHERE producer = %s'
    assert len(list(store.session.execute(pointers, (store.producer_id,)))) == 1
    assert [m.value for _, m in store.pending_outbox()] == [b"status v1"]


def test_reserved_outbox_ids_are_taken_in_order_within_their_time_or_not_at_all():
    reserved = Reserved(dataset_urn("r"), [5, 6, 7], use_within=60)
    assert reserved.take(1) == [5]
    assert reserved.take(3) is None  # too few left: none is taken from now on
    assert reserved.take(1) is None
    assert reserved.rest() == [6, 7]
    late = Reserved(dataset_urn("r"), [8], use_within=0)
    time.sleep(0.01)
    assert late.take(1) is None and late.rest() == [8]


def test_acknowledged_events_leave_the_entities_and_others_read_them_back(
        keyspace: ScratchKeyspace, urn: str, monkeypatch: pytest.MonkeyPatch):
    producer = unique_name("producer")
    other, third = dataset_urn(unique_name("cassandra")), dataset_urn(unique_name("cassandra"))
    store = keyspace.store(producer)
    insert(store, row(urn, "status", 1, {"removed": False}), row(other, "status", 1, {"removed": False}),
           row(urn, "status", 2, {"removed": True}), row(third, "status", 1, {"removed": False}))
    pending = store.pending_outbox()  # from this store's memory
    assert [m.value for _, m in pending] == [b"status v1", b"status v1", b"status v2", b"status v1"]
    store.close()
    reopened = keyspace.store(producer)  # knows nothing of them: reads them from the entities' partitions
    assert reopened.pending_outbox() == pending
    monkeypatch.setattr(cassandra_outbox, "ACK_PARTITIONS", 2)  # the three entities' events removed in two requests
    reopened.ack_outbox([pending[-1][0]])
    assert reopened.pending_outbox() == []
    outbox = f'SELECT seq FROM "{keyspace.name}".aspects WHERE urn = %s AND kind = \'outbox\''
    assert [list(reopened.session.execute(outbox, (u,))) for u in (urn, other, third)] == [[], [], []]


def test_token_ranges_split_the_scan_without_overlap(keyspace: ScratchKeyspace, urn: str):
    store = keyspace.store()
    insert(store, *(row(dataset_urn(f"{urn}.{n}"), "status", 1, {"removed": False}) for n in range(20)))
    whole = [(r.urn, r.aspect) for page in scan_pages(store, limit=7) for r in page]
    parts = store.token_ranges(4)
    assert parts[0].start == -(2**63) and parts[-1].end == 2**63 - 1
    assert all(a.end + 1 == b.start for a, b in zip(parts, parts[1:], strict=False))
    pieces = []
    for part in parts:
        rows = list(store.scan_latest(within=part, limit=5))
        while rows:
            pieces += [(r.urn, r.aspect) for r in rows]
            rows = list(store.scan_latest((rows[-1].urn, rows[-1].aspect), limit=5, within=part))
    assert pieces == whole


def test_restore_rebuilds_the_read_models_from_cassandra(keyspace: ScratchKeyspace, tmp_path: Path):
    name = unique_name("restored")
    gms = Gms(keyspace.store(), SqliteEventLog(tmp_path / "events.db"))
    results = gms.apply([proposal(dataset_urn(f"db.{name}_{n}"), "datasetProperties", {"name": f"{name}_{n}"})
                         for n in range(3)], "urn:li:corpuser:tester")
    assert [r.status for r in results] == ["applied"] * 3
    models = SqliteReadModels.in_data_dir(tmp_path / "models", gms.registry)
    processor = MclProcessor(gms.registry, gms.codec, models)
    assert processor.restore(gms.store, urn_like=f"%{name}%", workers=0) == 6  # key aspects and properties
    assert models.search.query(f"{name}_1").total == 1
    models.close()
    gms.close()


def test_an_unreachable_cassandra_is_named_in_a_prompt_error():
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match=f"Cassandra at {address} does not answer"):
        CassandraAspectStore.connect(Endpoints(cassandra_hosts=(address,)), unique_name("never"), connect_timeout=2)
    assert time.monotonic() - started < 10
