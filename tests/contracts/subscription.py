"""The subscription SDK's contract: the same behaviour on every event-log adapter."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastavro import parse_schema, schemaless_writer

from gms.service import Gms
from ingest import topics
from ingest.eventlog import LogMessage, partition_for
from ingest.subscribe import MCL_TOPICS, Change, SubscriptionError, start_positions, subscribe, subscribe_async
from mcl_processor.changes import AspectChange
from mcl_processor.decode import MclDecoder
from schemas.events import MARKER, _fingerprint, default_codec
from schemas.registry import SCHEMA_DIR, default_registry
from tests.support.builders import dataset_urn, proposal
from tests.support.processes import LODESTAR

ACTOR = "urn:li:corpuser:tester"


WAIT = 30.0


ORDERS, ITEMS = dataset_urn("db.orders"), dataset_urn("db.items")


TAG = "urn:li:tag:pii"


KAFKA_MEMBER_LOG = "ingest.eventlog.kafka_consumer"  # the logger of a Kafka consumer-group member


def take(subscription, count: int, timeout: float = WAIT) -> list[Change]:
    """The next `count` changes (fails after timeout seconds, also when no more come)."""
    found: list[Change] = []
    if count == 0:
        return found
    timer = threading.Timer(timeout, subscription.stop)
    timer.start()
    try:
        for change in subscription:
            found.append(change)
            if len(found) == count:
                return found
    finally:
        timer.cancel()
    raise AssertionError(f"only {len(found)} of {count} changes in {timeout} s")


def drain(subscription) -> list[Change]:
    """What a subscription delivers until it has read every partition up to its end as it was
    when the subscription was made (`sub` notes where it started)."""
    log_, starts = subscription.test_log, subscription.test_starts
    ends = {key: log_.end_offset(*key) for key in starts}
    deadline = time.monotonic() + WAIT
    found: list[Change] = []

    def watch() -> None:
        while not all(subscription.positions.get(key, starts[key]) >= end for key, end in ends.items()):
            if time.monotonic() > deadline:
                found.append(None)  # the test fails below
                break
            time.sleep(0.02)
        subscription.stop()

    watcher = threading.Thread(target=watch)
    watcher.start()
    found += list(subscription)
    watcher.join()
    assert None not in found, "the subscription did not reach the end of the log"
    return found


class SubscriptionContract(ABC):
    """What the SDK does on every event log. A subclass says how to open GMS on its log and
    what environment makes `lodestar` processes use it."""

    @abstractmethod
    def open_gms(self, data_dir: Path) -> Gms: ...

    @abstractmethod
    def cli_env(self) -> dict[str, str]: ...

    @pytest.fixture
    def backend(self) -> Iterator[None]:
        """Set up (and afterwards remove) the log's storage; torn down after everything using it."""
        yield

    @pytest.fixture
    def gms(self, tmp_path: Path, backend: None) -> Iterator[Gms]:
        gms = self.open_gms(tmp_path / "data")
        yield gms
        gms.close()

    def sub(self, gms: Gms, group: str = "app", **options):
        options.setdefault("poll_timeout", 0.2)
        options.setdefault("handle_signals", False)
        chosen = options.get("topics", MCL_TOPICS)
        starts = start_positions(gms.log, chosen, options.get("start", "committed")) or {
            (topic, part): gms.log.committed(group, topic, part)
            for topic in chosen for part in range(gms.log.partitions(topic))}
        subscription = subscribe(gms.log, group, **options)
        subscription.test_log, subscription.test_starts = gms.log, starts
        self._open.append(subscription)
        return subscription

    @pytest.fixture(autouse=True)
    def _close_subscriptions(self, backend: None) -> Iterator[None]:
        self._open: list = []
        yield
        for subscription in self._open:
            subscription._reader.close()

    def write_sample(self, gms: Gms) -> None:
        """8 MCLs: 2 key aspects, 3 versions of orders' properties, a tag, a delete, a profile."""
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "v1"}),
                   proposal(ITEMS, "datasetProperties", {"description": "items"})], ACTOR)
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "v2"})], ACTOR)
        gms.apply([proposal(ORDERS, "globalTags", {"tags": [{"tag": TAG}]})], ACTOR)
        gms.apply([proposal(ORDERS, "datasetProperties", change="DELETE")], ACTOR)
        gms.apply([proposal(ORDERS, "datasetProfile", {"timestampMillis": 1000, "rowCount": 5})], ACTOR)

    def test_changes_are_decoded_with_values_previous_values_and_positions(self, gms):
        self.write_sample(gms)
        changes = take(self.sub(gms, start="earliest"), 8)
        props = sorted((c for c in changes if c.urn == ORDERS and c.aspect == "datasetProperties"),
                       key=lambda c: c.version)
        assert [(c.change_type, c.version, c.value, c.previous_value) for c in props] == [
            ("UPSERT", 1, {"description": "v1"}, None),
            ("UPSERT", 2, {"description": "v2"}, {"description": "v1"}),
            ("DELETE", 3, None, {"description": "v2"})]
        assert props[1].system_metadata["version"] == "2" and props[1].previous_system_metadata["version"] == "1"
        assert props[1].created["actor"] == ACTOR and props[1].entity_type == "dataset"
        (profile,) = [c for c in changes if c.aspect == "datasetProfile"]
        assert profile.topic == topics.MCL_TIMESERIES and profile.value == {"timestampMillis": 1000, "rowCount": 5}
        positions = {(c.topic, c.partition, c.offset) for c in changes}
        assert len(positions) == 8
        for change in changes:  # the offsets are the log's
            (record,) = gms.log.read(change.topic, change.partition, change.offset, 1)
            assert record.key == change.urn
        assert json.loads(json.dumps(props[2].to_json()))["previousAspectValue"] == {"description": "v2"}

    def test_filters_by_entity_type_aspect_change_type_and_urn_pattern(self, gms):
        self.write_sample(gms)
        gms.apply([proposal(TAG, "tagProperties", {"name": "pii"})], ACTOR)

        def seen(**filters) -> list[tuple[str, str, str]]:
            subscription = self.sub(gms, f"g{len(self._open)}", start="earliest", **filters)
            return sorted((c.urn, c.aspect, c.change_type) for c in drain(subscription))

        assert seen(entity_types=["tag"]) == [(TAG, "tagKey", "UPSERT"), (TAG, "tagProperties", "UPSERT")]
        assert seen(aspects=["globalTags", "datasetProfile"]) == [
            (ORDERS, "datasetProfile", "UPSERT"), (ORDERS, "globalTags", "UPSERT")]
        assert seen(change_types=["delete"]) == [(ORDERS, "datasetProperties", "DELETE")]
        assert seen(urn_pattern="%db.ITEMS%") == [(ITEMS, "datasetKey", "UPSERT"),
                                                  (ITEMS, "datasetProperties", "UPSERT")]
        assert seen(entity_types=["dataset"], aspects=["datasetProperties"], change_types=["UPSERT"],
                    urn_pattern="urn:li:dataset:(%orders%") == [(ORDERS, "datasetProperties", "UPSERT")] * 2
        assert seen(topics=[topics.MCL_TIMESERIES]) == [(ORDERS, "datasetProfile", "UPSERT")]

    def test_refilter_applies_to_the_records_polled_after_it(self, gms):
        subscription = self.sub(gms, start="earliest", entity_types=["tag"])
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "before"}),
                   proposal(TAG, "tagProperties", {"name": "pii"})], ACTOR)
        assert {c.urn for c in drain(subscription)} == {TAG}
        subscription.refilter(aspects=["datasetProperties"])
        subscription.test_starts = subscription.positions
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "after"}),
                   proposal(TAG, "tagProperties", {"name": "pii2"})], ACTOR)
        assert [(c.urn, c.value) for c in drain(subscription)] == [(ORDERS, {"description": "after"})]

    def test_changes_of_one_urn_come_in_version_order(self, gms):
        urns = [dataset_urn(f"db.t{i}") for i in range(12)]
        for round_ in range(1, 6):
            gms.apply([proposal(urn, "datasetProperties", {"description": f"{urn} {round_}"}) for urn in urns], ACTOR)
        changes = take(self.sub(gms, start="earliest", aspects=["datasetProperties"]), 60)
        for urn in urns:
            assert [c.version for c in changes if c.urn == urn] == [1, 2, 3, 4, 5]

    def test_start_positions(self, gms):
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "old"})], ACTOR)
        time.sleep(0.05)  # the log's clock must move on between the two writes
        boundary = int(time.time() * 1000)
        time.sleep(0.05)
        gms.apply([proposal(ITEMS, "datasetProperties", {"description": "new"})], ACTOR)
        assert {c.urn for c in take(self.sub(gms, "a", start="earliest"), 4)} == {ORDERS, ITEMS}
        assert {c.urn for c in drain(self.sub(gms, "b", start=boundary))} == {ITEMS}
        latest = self.sub(gms, "c", start="latest")
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "newest"})], ACTOR)
        assert [c.value for c in take(latest, 1)] == [{"description": "newest"}]  # the first one it sees
        with pytest.raises(SubscriptionError, match="start must be one of"):
            subscribe(gms.log, "d", start="yesterday")

    def test_a_group_resumes_after_what_it_committed(self, gms):
        self.write_sample(gms)
        first = self.sub(gms, aspects=["datasetProperties"])
        handled = take(first, 3)  # the loop left during the third: only two count as processed
        first.close()  # commits what was processed, and the filtered records before it
        rest = drain(self.sub(gms, aspects=["datasetProperties"]))
        again = {(c.topic, c.partition, c.offset) for c in rest}
        handled_at = [(c.topic, c.partition, c.offset) for c in handled]
        assert [at in again for at in handled_at] == [False, False, True], (handled_at, sorted(again))
        assert len(rest) == 2

    def test_explicit_commits_and_redelivery_of_what_was_not_committed(self, gms):
        urns = [dataset_urn(f"db.t{i}") for i in range(6)]
        gms.apply([proposal(urn, "datasetProperties", {"description": "x"}) for urn in urns], ACTOR)
        first = self.sub(gms, auto_commit=False, aspects=["datasetProperties"])
        handled = take(first, 6)
        chosen = handled[2]
        first.commit(chosen)  # its partition through it; nothing else
        first.close()  # as a crash would: no commit of the rest
        second = self.sub(gms, auto_commit=False, aspects=["datasetProperties"])
        again = take(second, 6 - sum(c.partition == chosen.partition and c.offset <= chosen.offset for c in handled))
        assert {(c.partition, c.offset) for c in again} == {
            (c.partition, c.offset) for c in handled
            if not (c.partition == chosen.partition and c.offset <= chosen.offset)}
        second.commit()
        second.close()
        assert drain(self.sub(gms, auto_commit=False)) == []

    def test_the_asyncio_flavour(self, gms, caplog):
        self.write_sample(gms)
        sample = [(ITEMS, 1), (ORDERS, 1), (ORDERS, 2), (ORDERS, 3)]

        async def run() -> list[tuple[str, int | None]]:
            found = []
            async with subscribe_async(gms.log, "async", aspects=["datasetProperties"], start="earliest",
                                       poll_timeout=0.2, handle_signals=False) as subscription:
                async for change in subscription:
                    found.append((change.urn, change.version))
                    if len(found) == 4:
                        subscription.stop()
            return found

        with caplog.at_level(logging.INFO, logger=KAFKA_MEMBER_LOG):
            assert sorted(asyncio.run(run()), key=str) == sorted(sample, key=str)
        again = drain(self.sub(gms, "async", aspects=["datasetProperties"]))
        # All four were committed on the way out; unless, on Kafka, the group had taken the member's
        # partitions first (its session timed out: a starved machine), which the member says as it
        # drops the commit. Then they come again (at least once), and nothing else does.
        lost = [r.getMessage() for r in caplog.records if r.name == KAFKA_MEMBER_LOG
                and re.search(r"not committing revoked partitions|records are read again", r.getMessage())]
        if not lost:
            assert again == []
        else:
            assert {(c.urn, c.version) for c in again} <= set(sample), (lost, again)

    @staticmethod
    def append_numbered(gms: Gms, numbers: range) -> None:
        """MCLs of ORDERS' properties with descriptions "0", "1"...: one partition, in order."""
        codec = default_codec()
        gms.log.append(topics.MCL_VERSIONED, [LogMessage(ORDERS, codec.encode(
            "com.linkedin.mxe.MetadataChangeLog", {
                "entityType": "dataset", "entityUrn": ORDERS, "changeType": "UPSERT",
                "aspectName": "datasetProperties",
                "aspect": {"value": json.dumps({"description": str(n)}).encode(),
                           "contentType": "application/json"}})) for n in numbers])

    @staticmethod
    def number(change: Change) -> int:
        return int(change.value["description"])

    def test_iterating_again_after_stop_hands_out_the_rest_of_the_batch_first(self, gms):
        self.append_numbered(gms, range(10))
        subscription = self.sub(gms, "rest", start="earliest")
        first = []
        for change in subscription:
            first.append(self.number(change))
            if len(first) == 3:
                subscription.stop()
        assert first == [0, 1, 2]
        assert len(subscription._reader.batch) > 3  # the case in point: more was read than handed out
        self.append_numbered(gms, range(10, 12))
        assert [self.number(c) for c in take(subscription, 9)] == list(range(3, 12))
        subscription.close()  # commits through 10 (11 was in hand when the loop was left)
        assert [self.number(c) for c in drain(self.sub(gms, "rest"))] == [11]

    def test_iterating_again_after_a_break_hands_out_the_change_in_hand_and_the_rest(self, gms):
        self.append_numbered(gms, range(10))
        subscription = self.sub(gms, "rest", start="earliest")
        first = []
        for change in subscription:
            first.append(self.number(change))
            if len(first) == 3:
                break  # 2 was in hand: not processed
        self.append_numbered(gms, range(10, 12))
        assert first == [0, 1, 2]
        assert [self.number(c) for c in take(subscription, 10)] == list(range(2, 12))
        subscription.close()
        assert [self.number(c) for c in drain(self.sub(gms, "rest"))] == [11]
        # committed explicitly before the break, the change in hand does not come again
        explicit = self.sub(gms, "explicit", start="earliest", auto_commit=False)
        for change in explicit:
            if self.number(change) == 4:
                explicit.commit(change)
                break
        assert [self.number(c) for c in take(explicit, 7)] == list(range(5, 12))

    def test_the_asyncio_flavour_goes_on_where_an_iteration_ended(self, gms):
        self.append_numbered(gms, range(10))

        async def run() -> tuple[list[int], list[int], list[int]]:
            first, second, third = [], [], []
            async with subscribe_async(gms.log, "async-rest", start="earliest", poll_timeout=0.2,
                                       handle_signals=False) as subscription:
                async for change in subscription:
                    first.append(self.number(change))
                    if len(first) == 3:
                        subscription.stop()
                async for change in subscription:
                    second.append(self.number(change))
                    if len(second) == 2:
                        break  # 4 in hand; this generator is closed later, by the event loop
                self.append_numbered(gms, range(10, 12))
                async for change in subscription:
                    third.append(self.number(change))
                    if third[-1] == 11:
                        subscription.stop()
            return first, second, third

        assert asyncio.run(asyncio.wait_for(run(), WAIT)) == ([0, 1, 2], [3, 4], list(range(4, 12)))
        assert drain(self.sub(gms, "async-rest")) == []  # all of it was committed on the way out

    def test_an_mcl_written_with_the_older_mcl_schema_is_decoded(self, gms):
        old = parse_schema(json.loads((SCHEMA_DIR / "history" / "com.linkedin.mxe.MetadataChangeLog.1.avsc")
                                      .read_text()))
        body = io.BytesIO()
        schemaless_writer(body, old, {
            "entityType": "dataset", "entityUrn": ORDERS, "entityKeyAspect": None, "changeType": "UPSERT",
            "aspectName": "datasetProperties",
            "aspect": {"value": b'{"description": "from an old writer"}', "contentType": "application/json"},
            "systemMetadata": {"lastObserved": 7, "runId": "old-run", "properties": {"k": "v"}}})
        value = MARKER + _fingerprint(old) + body.getvalue()
        assert _fingerprint(old) != default_codec().encode("com.linkedin.mxe.MetadataChangeLog", {
            "entityType": "dataset", "changeType": "UPSERT"})[2:10]
        gms.log.append(topics.MCL_VERSIONED, [LogMessage(ORDERS, value)])
        (change,) = take(self.sub(gms, start="earliest"), 1)
        assert (change.urn, change.aspect, change.value) == (ORDERS, "datasetProperties",
                                                             {"description": "from an old writer"})
        assert change.system_metadata["runId"] == "old-run" and change.system_metadata["version"] is None
        assert change.previous_value is None and change.created is None  # fields the old schema lacked
        decoded = MclDecoder(default_registry(), default_codec()).decode(value)  # the MCL processor reads it too
        assert isinstance(decoded, AspectChange) and decoded.value == {"description": "from an old writer"}
        (change,) = take(self.sub(gms, "filtered", start="earliest", aspects=["datasetProperties"]), 1)
        assert change.value == {"description": "from an old writer"}  # a filter reads older schemas in full

    def test_a_filter_on_aspects_decodes_only_the_records_it_passes(self, gms, caplog):
        codec = default_codec()

        def truncated(aspect: str) -> LogMessage:  # readable up to its aspect name, corrupt after it
            value = codec.encode("com.linkedin.mxe.MetadataChangeLog", {
                "entityType": "dataset", "entityUrn": ORDERS, "changeType": "UPSERT", "aspectName": aspect,
                "aspect": {"value": b'{"tags": []}', "contentType": "application/json"}})
            return LogMessage(ORDERS, value[:value.index(aspect.encode()) + len(aspect) + 3])
        part = partition_for(ORDERS, gms.log.partitions(topics.MCL_VERSIONED))
        first = gms.log.end_offset(topics.MCL_VERSIONED, part)
        gms.log.append(topics.MCL_VERSIONED, [truncated("datasetProperties"), truncated("globalTags")])
        passing = gms.log.read(topics.MCL_VERSIONED, part, first, 2)[1].offset
        gms.apply([proposal(ORDERS, "globalTags", {"tags": [{"tag": TAG}]})], ACTOR)
        with caplog.at_level("WARNING", logger="ingest.subscribe"):
            (change,) = take(self.sub(gms, start="earliest", aspects=["globalTags"]), 1)
        assert change.value == {"tags": [{"tag": TAG}]}
        # only the one that passed was decoded (records of other loggers, e.g. a lease thread an earlier
        # test left behind, are not this subscription's)
        skipped = [r.getMessage().split(":")[0] for r in caplog.records if r.name == "ingest.subscribe"]
        assert skipped == [f"skipping record at {topics.MCL_VERSIONED}/{part}@{passing}"]

    def tail(self, data_dir: Path, *args: str, json_lines: bool = True) -> subprocess.Popen:
        return subprocess.Popen([*LODESTAR, "tail", "--data-dir", str(data_dir), *(["--json"] * json_lines), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **self.cli_env()})

    def caught_up(self, gms: Gms, group: str) -> bool:
        """Whether `group` committed every MCL appended so far (within WAIT seconds)."""
        ends = {(topic, part): gms.log.end_offset(topic, part)
                for topic in MCL_TOPICS for part in range(gms.log.partitions(topic))}
        deadline = time.monotonic() + WAIT
        while any(gms.log.committed(group, *key) < end for key, end in ends.items()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def tail_everything(self, gms: Gms, data_dir: Path, group: str, *filters: str) -> list[dict]:
        """What `lodestar tail --group <group> --from earliest <filters> --json` prints of the whole
        log (once its group committed the end of every partition, it is stopped with SIGTERM)."""
        proc = self.tail(data_dir, "--group", group, "--from", "earliest", "--commit-interval", "0.1", *filters)
        try:
            assert self.caught_up(gms, group), proc.stderr.read() if proc.poll() is not None else "no commit"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0 and "Traceback" not in err, err
        return [json.loads(line) for line in out.splitlines()]

    def test_tail_prints_one_plain_line_per_change_and_leaves_on_sigint(self, gms, tmp_path):
        began = int(time.time() * 1000)
        self.write_sample(gms)
        proc = self.tail(tmp_path / "data", "--group", "plain", "--from", "earliest", "--aspect", "datasetProperties",
                         "--commit-interval", "3600", json_lines=False)
        try:
            lines = [proc.stdout.readline() for _ in range(4)]
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0 and rest == "" and "Traceback" not in err, err
        pattern = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z (UPSERT|DELETE) (\S+) (\w+) v(\d+)\n")
        parsed = [pattern.fullmatch(line) for line in lines]
        assert all(parsed), lines
        assert sorted(m.group(2, 3, 4, 5) for m in parsed) == sorted([
            ("UPSERT", ORDERS, "datasetProperties", "1"), ("UPSERT", ITEMS, "datasetProperties", "1"),
            ("UPSERT", ORDERS, "datasetProperties", "2"), ("DELETE", ORDERS, "datasetProperties", "3")])
        for m in parsed:  # the time the log took it, in UTC
            when = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp() * 1000
            assert began - 1000 <= when <= time.time() * 1000
        # what was printed was committed on the way out, though the interval was an hour
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "after"})], ACTOR)
        again = self.tail(tmp_path / "data", "--group", "plain", "--aspect", "datasetProperties")
        try:
            assert [(line["entityUrn"], line["version"]) for line in self.read_lines(again, 1)] == [(ORDERS, 4)]
        finally:
            again.send_signal(signal.SIGTERM)
            again.communicate(timeout=WAIT)

    def test_tail_filters_from_the_command_line(self, gms, tmp_path):
        self.write_sample(gms)
        gms.apply([proposal(TAG, "tagProperties", {"name": "pii"})], ACTOR)
        data_dir = tmp_path / "data"

        def seen(group: str, *filters: str) -> list[tuple[str, str, str]]:
            return sorted((line["entityUrn"], line["aspectName"], line["changeType"])
                          for line in self.tail_everything(gms, data_dir, group, *filters))

        assert seen("types", "--entity-type", "tag") == [(TAG, "tagKey", "UPSERT"), (TAG, "tagProperties", "UPSERT")]
        assert seen("deletes", "--change-type", "delete") == [(ORDERS, "datasetProperties", "DELETE")]
        assert seen("like", "--urn-like", "%db.ITEMS%") == [(ITEMS, "datasetKey", "UPSERT"),
                                                           (ITEMS, "datasetProperties", "UPSERT")]
        assert seen("all", "--entity-type", "dataset", "--change-type", "UPSERT", "--urn-like", "%orders%",
                    "--aspect", "datasetProperties", "--aspect", "globalTags") == [
            (ORDERS, "datasetProperties", "UPSERT"), (ORDERS, "datasetProperties", "UPSERT"),
            (ORDERS, "globalTags", "UPSERT")]

    def read_lines(self, proc: subprocess.Popen, count: int) -> list[dict]:
        lines = []
        for _ in range(count):
            line = proc.stdout.readline()
            assert line, f"tail ended after {len(lines)} lines: {proc.stderr.read()}"
            lines.append(json.loads(line))
        return lines

    def test_tail_prints_each_change_once_across_a_sigterm_and_again_after_a_kill(self, gms, tmp_path):
        data_dir = tmp_path / "data"
        urns = [dataset_urn(f"db.t{i}") for i in range(30)]
        gms.apply([proposal(urn, "datasetProperties", {"description": "x"}) for urn in urns], ACTOR)
        options = ("--group", "ops", "--aspect", "datasetProperties", "--commit-interval", "3600")
        first = self.tail(data_dir, *options)
        printed = self.read_lines(first, 10)
        first.send_signal(signal.SIGTERM)  # clean: what was printed is committed, nothing more
        assert first.wait(WAIT) == 0
        printed += [json.loads(line) for line in first.stdout.read().splitlines()]
        second = self.tail(data_dir, *options)
        remaining = self.read_lines(second, 30 - len(printed))
        assert sorted(line["entityUrn"] for line in printed + remaining) == sorted(urns)  # each exactly once
        gms.apply([proposal(urn, "datasetProperties", {"description": "y"}) for urn in urns], ACTOR)
        self.read_lines(second, 5)
        second.kill()  # a crash before any commit: all it printed comes again (at least once)
        second.wait()
        third = self.tail(data_dir, *options)
        again = self.read_lines(third, len(remaining) + 30)
        assert sorted((line["entityUrn"], line["version"]) for line in again) == sorted(
            [(line["entityUrn"], 1) for line in remaining] + [(urn, 2) for urn in urns])
        third.send_signal(signal.SIGTERM)
        assert third.wait(WAIT) == 0 and third.stdout.read() == ""

    def test_tail_rejects_bad_filters_with_a_message(self, gms, tmp_path):
        proc = self.tail(tmp_path / "data", "--from", "last tuesday")
        err = proc.communicate(timeout=WAIT)[1]
        assert proc.returncode == 1 and "--from: 'last tuesday' is not an ISO-8601 time" in err
        assert "Traceback" not in err
