"""What every secret-store adapter guarantees: one abstract test class, one subclass per adapter.

A subclass says how to open its store by overriding the `open_store` fixture: a function taking
the clock the store reads deadlines from (each call opens another store on the same place, as
another process would). Tests use owners of their own, so adapters may share one place.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import pytest

from lodestar.secrets import SecretStore, fingerprint
from tests.support.backends import unique_name


class Clock:
    """Seconds since the epoch, moved by hand."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


class SecretStoreContract:
    @pytest.fixture
    def open_store(self) -> Callable[[Clock], SecretStore]:
        raise NotImplementedError("a subclass says how to open its store")

    @pytest.fixture
    def clock(self) -> Clock:
        return Clock(time.time())

    @pytest.fixture
    def store(self, open_store: Callable[[Clock], SecretStore], clock: Clock) -> SecretStore:
        return open_store(clock)

    @pytest.fixture
    def owner(self) -> str:
        return f"urn:li:webhook:{unique_name('hook').replace('_', '')}"

    def test_a_secret_is_named_by_its_fingerprint_and_read_back_by_it_from_another_store(
            self, store: SecretStore, open_store: Callable[[Clock], SecretStore], clock: Clock, owner: str):
        name = store.put(owner, "s3cret")
        assert name == fingerprint("s3cret") == hashlib.sha256(b"s3cret").hexdigest()[:16]
        other = open_store(clock)  # as another process (the dispatcher) opens it
        assert other.get(owner, name) == "s3cret"
        assert other.get(owner, fingerprint("guess")) is None
        assert other.get(f"{owner}x", name) is None  # secrets are per owner
        assert other.valid(owner) == {name: None}

    def test_an_owner_keeps_several_secrets(self, store: SecretStore, owner: str):
        first, second = store.put(owner, "one"), store.put(owner, "two")
        assert store.valid(owner) == {first: None, second: None}
        assert (store.get(owner, first), store.get(owner, second)) == ("one", "two")

    def test_a_secret_with_a_deadline_is_valid_until_it_and_gone_after(self, store: SecretStore,
                                                                        open_store: Callable[[Clock], SecretStore],
                                                                        clock: Clock, owner: str):
        old, new = store.put(owner, "old"), store.put(owner, "new")
        deadline = int(clock.now * 1000) + 60_000
        store.expire(owner, old, deadline)
        assert store.get(owner, old) == "old" and store.valid(owner) == {old: deadline, new: None}
        clock.now += 59
        assert open_store(clock).get(owner, old) == "old"
        clock.now += 2
        for reader in (store, open_store(clock)):
            assert reader.get(owner, old) is None
            assert reader.valid(owner) == {new: None}
            assert reader.get(owner, new) == "new"

    def test_a_deadline_not_in_the_future_removes_the_secret_at_once(self, store: SecretStore, clock: Clock,
                                                                       owner: str):
        gone, kept = store.put(owner, "gone"), store.put(owner, "kept")
        store.expire(owner, gone, int(clock.now * 1000))
        assert store.get(owner, gone) is None and store.valid(owner) == {kept: None}
        store.expire(owner, fingerprint("never kept"), int(clock.now * 1000) + 1000)  # unknown: nothing happens
        assert store.valid(owner) == {kept: None}

    def test_putting_a_secret_again_lifts_its_deadline(self, store: SecretStore, clock: Clock, owner: str):
        name = store.put(owner, "again")
        store.expire(owner, name, int(clock.now * 1000) + 1000)
        assert store.put(owner, "again") == name
        clock.now += 10
        assert store.get(owner, name) == "again" and store.valid(owner) == {name: None}

    def test_owners_are_those_with_a_valid_secret_and_remove_forgets_one_owner_only(
            self, store: SecretStore, clock: Clock, owner: str):
        other, expiring = f"{owner}b", f"{owner}c"
        store.put(owner, "a")
        store.put(other, "b")
        store.expire(expiring, store.put(expiring, "c"), int(clock.now * 1000) + 1000)
        assert {owner, other, expiring} <= store.owners()
        clock.now += 2
        assert {owner, other} <= store.owners() and expiring not in store.owners()
        store.remove(owner)
        assert store.valid(owner) == {} and store.get(owner, fingerprint("a")) is None
        assert owner not in store.owners() and store.get(other, fingerprint("b")) == "b"
        store.remove(owner)  # again: nothing to forget
