"""A dead producer's outbox taken over by another store, on the real Cassandra and Kafka.

Every Cassandra store holds a lease on its producer id (gms.store.cassandra_lease). When its
holder dies, the lease expires and a live store's relay takes the outbox over: it publishes the
pending MCLs as that producer, so the event log's per-producer sequence drops any the dead one
had published. A holder that lost its lease (a zombie) may neither write nor publish; of
several takers exactly one wins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest

from gms.outbox import OutboxRelay
from gms.store.cassandra import CassandraAspectStore
from gms.store.cassandra_lease import LeaseLost
from ingest.backends import Endpoints
from ingest.eventlog.kafka import KafkaEventLog
from ingest.rest import LodestarError
from lodestar.assembly import INSTANCE_FILE
from schemas.mcl_wire import WIRE_FORMATS
from tests.contracts.aspect_store import TOPIC, event, insert, row
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, mcp
from tests.support.scratch_keyspace import ScratchKeyspace
from tests.support.stack import Stack
from tests.support.waiting import await_

TTL = 2  # seconds: each test's leases (the default is 10)
RACERS = 4
T = TypeVar("T")


@pytest.fixture
def keyspace(cassandra_endpoints: Endpoints) -> Iterator[ScratchKeyspace]:
    """A keyspace per test: a relay takes over every orphaned producer it finds in its keyspace."""
    scratch = ScratchKeyspace(cassandra_endpoints)
    yield scratch
    scratch.drop()


@pytest.fixture
def log(kafka_bootstrap: str) -> Iterator[KafkaEventLog]:
    prefix = f"{unique_name('takeover')}."
    opened = KafkaEventLog(kafka_bootstrap, prefix=prefix, partitions=1)
    yield opened
    opened.close()
    drop_kafka_names(kafka_bootstrap, prefix)


def under_lease(store: CassandraAspectStore, action: Callable[[], T]) -> T:
    """`action()` under the store's lease, renewed (acquired again when lost) first; again while
    the renewal's trust (0.7 s at this TTL) runs out before the action on a slow machine."""
    def attempt() -> tuple[T] | None:
        store._lease.renew()
        try:
            return (action(),)
        except LeaseLost:
            return None

    return await_(attempt, "the action under a renewed lease")[0]


def dead_producer(keyspace: ScratchKeyspace, urn: str, versions: int) -> CassandraAspectStore:
    """A store that wrote `versions` versions (their MCLs pending) and stopped renewing its lease,
    as a process stopped or killed then would."""
    store = keyspace.store(lease_ttl=TTL)
    insert(store, *(row(urn, "status", v, {"removed": v % 2 == 0}) for v in range(1, versions + 1)))
    store._lease.stop_renewing()
    return store


def test_a_zombie_owner_is_refused_once_its_outbox_was_taken_over(keyspace: ScratchKeyspace, log: KafkaEventLog):
    urn = dataset_urn(unique_name("zombie"))
    started = time.monotonic()  # before the zombie's last renewal (when writing), however slow the machine
    zombie = dead_producer(keyspace, urn, 3)
    taker = keyspace.store(lease_ttl=TTL)
    await_(lambda: zombie.producer_id in taker.orphaned_producers(), "the lease expiring", 3 * TTL)
    assert time.monotonic() - started > TTL * 0.5  # not before it ran out
    with pytest.raises(LeaseLost, match=zombie.producer_id):
        insert(zombie, row(urn, "status", 4, {"removed": False}))
    with pytest.raises(LeaseLost):
        zombie.pending_outbox()
    taken = taker.take_over(zombie.producer_id)
    assert taken is not None
    with taken as outbox:
        assert outbox.producer_id == zombie.producer_id
        zombie._lease.renew()  # the zombie comes back: its renewal finds the lease taken
        with pytest.raises(LeaseLost):
            insert(zombie, row(urn, "status", 4, {"removed": False}))
        assert [m.value for _, m in outbox.pending_outbox()] == [b"status v1", b"status v2", b"status v3"]
    relay = OutboxRelay(taker, log)
    assert relay.take_over() == 3
    assert taker.orphaned_producers() == []
    assert [r.value for r in log.read(TOPIC, 0, 0)] == [b"status v1", b"status v2", b"status v3"]
    # Returning once the taker is done, it acquires its lease again and starts its outbox afresh.
    assert under_lease(zombie, zombie.pending_outbox) == []
    under_lease(zombie, lambda: insert(zombie, row(urn, "status", 4, {"removed": False})))
    assert [m.value for _, m in under_lease(zombie, zombie.pending_outbox)] == [b"status v4"]
    zombie.close()
    taker.close()


def test_of_takers_racing_for_a_dead_producer_exactly_one_wins(keyspace: ScratchKeyspace):
    urn = dataset_urn(unique_name("raced"))
    dead = dead_producer(keyspace, urn, 2)
    takers = [keyspace.store(lease_ttl=TTL) for _ in range(RACERS)]
    await_(lambda: dead.producer_id in takers[0].orphaned_producers(), "the lease expiring", 3 * TTL)
    start = threading.Barrier(RACERS)

    def race(taker: CassandraAspectStore):  # noqa: ANN202 (a taken outbox or None)
        start.wait()
        return taker.take_over(dead.producer_id)

    with ThreadPoolExecutor(RACERS) as pool:
        won = [taken for taken in pool.map(race, takers) if taken is not None]
    assert len(won) == 1
    with won[0] as outbox:
        assert [m.value for _, m in outbox.pending_outbox()] == [b"status v1", b"status v2"]
        assert all(dead.producer_id not in t.orphaned_producers() for t in takers)  # held while taken
    assert dead.producer_id in takers[1].orphaned_producers()  # released, its events still pending
    for store in (*takers, dead):
        store.close()


def test_events_appended_without_a_version_are_taken_over_too(keyspace: ScratchKeyspace, log: KafkaEventLog):
    urn = dataset_urn(unique_name("points"))
    dead = keyspace.store(lease_ttl=TTL)
    with dead.batch() as batch:
        batch.append_outbox([event(urn, "point 1"), event(urn, "point 2")])
    dead._lease.stop_renewing()
    taker = keyspace.store(lease_ttl=TTL)
    relay = OutboxRelay(taker, log)
    assert await_(relay.take_over, "the dead producer's events published", 3 * TTL) == 2
    assert [r.value for r in log.read(TOPIC, 0, 0)] == [b"point 1", b"point 2"]
    taker.close()


@pytest.mark.parametrize("wire_format", WIRE_FORMATS)  # of the MCLs (`stack`)
def test_a_killed_gms_pending_mcls_are_published_by_another_gms_once_its_lease_expired(stack: Stack):  # noqa: F811
    """gms-a dies (as abruptly as SIGKILL: no cleanup, its lease not released) between committing
    versions and publishing their MCLs; gms-b, running, takes its outbox over once its lease has
    expired, without gms-a coming back. Each version then has exactly one MCL; gms-a restarted
    on its data directory adds none. (gms-b starts first: a Confluent-format GMS registers the MCL
    schema on its first start, which gms-a's crash point would otherwise hit.)"""
    stack.env["LODESTAR_CASSANDRA_LEASE_TTL"] = str(TTL)
    survivor = stack.gms("gms-b")
    stack.await_healthy(survivor)
    victim = stack.gms("gms-a", crash_at="after-commit")
    stack.await_healthy(victim)
    urns = [dataset_urn(unique_name("orphan")) for _ in range(5)]
    with pytest.raises(LodestarError):
        victim.client().propose([mcp(urn, "status", {"removed": False}) for urn in urns])
    died = time.monotonic()
    assert victim.proc.wait(10) == 137
    producer = f"{(victim.data_dir / INSTANCE_FILE).read_text().strip()}-main"
    pending = stack.session.execute(f'SELECT id FROM "{stack.run}".outbox_pending WHERE producer = %s', (producer,))
    assert len(list(pending)) >= len(urns)  # the statuses and the new entities' key aspects
    wanted = {(urn, aspect, 1) for urn in urns for aspect in ("status", "datasetKey")}
    counts = stack.await_(lambda: set(c := stack.mcl_counts()) >= wanted and c,
                          "gms-b publishing gms-a's MCLs", timeout=15 * TTL)
    took = time.monotonic() - died
    stack.note(f"gms-a's MCLs published {took:.1f}s after it died (lease TTL {TTL}s)")
    assert took < TTL * 1.5 + 5  # its lease expiring, the next sweep (every TTL / 2), a few round trips
    assert {key: counts[key] for key in wanted} == dict.fromkeys(wanted, 1)
    restarted = stack.gms("gms-a")
    stack.await_healthy(restarted)
    assert {key: n for key, n in stack.mcl_counts().items() if key in wanted} == dict.fromkeys(wanted, 1)
    assert not list(stack.session.execute(
        f'SELECT id FROM "{stack.run}".outbox_pending WHERE producer = %s', (producer,)))
