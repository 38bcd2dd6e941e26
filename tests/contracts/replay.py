"""Replay's contract: the same results on every event-log and read-model adapter, in the
library and through the command."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gms.service import Gms
from ingest import topics
from ingest.subscribe import decode_change
from mcl_processor.distributed import DistributedReadModels
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from mcl_processor.readmodels import ReadModels
from mcl_processor.rebuild import Rebuild
from mcl_processor.replay import Filters, Replay, make_plan
from schemas.events import default_codec
from tests.support.builders import dataset_urn, proposal
from tests.support.processes import LODESTAR
from tests.support.readmodels import ModelsFactory
from tests.support.upstream_tags_example import (
    KEY,
    LOYALTY_RUN,
    PII,
    SEGMENT,
    SPEND_RUN,
    UID,
    loyalty_operations,
    spend_operations,
)

ACTOR = "urn:li:corpuser:tester"


URNS = [dataset_urn(f"db.t{i}") for i in range(8)]


RUN = "urn:li:dataProcessInstance:run1"


WAIT = 30.0


def catalog(live: Live) -> None:
    """Versioned aspects for search and lineage: tags, dataset and field lineage with upstream
    tags, a soft-deleted entity, a changed aspect and a deleted entity."""
    live.write(*[proposal(urn, "datasetProperties", {"name": f"t{i}", "description": f"table {i}"})
                 for i, urn in enumerate(URNS)])
    live.write(proposal(URNS[1], "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
               proposal(URNS[2], "upstreamLineage", {"upstreams": [{"dataset": URNS[1], "type": "TRANSFORMED"}]}),
               proposal(URNS[3], "status", {"removed": True}), proposal(UID, "globalTags", PII),
               proposal(SPEND_RUN, "fieldOperations", spend_operations()),
               proposal(LOYALTY_RUN, "fieldOperations", loyalty_operations()))
    live.write(proposal(URNS[4], "datasetProperties", {"name": "t4", "description": "changed"}))
    live.write(proposal(URNS[0], "datasetKey", change="DELETE"))


def profiles(start: int, count: int) -> list:
    return [proposal(URNS[i % len(URNS)], "datasetProfile", {"timestampMillis": start + i, "rowCount": start + i})
            for i in range(count)]


class Live:
    """GMS and the read models, with a stand-in for the live MCL processor that indexes every
    MCL appended since its last call."""

    def __init__(self, gms: Gms, models: ReadModels):
        self.gms, self.models = gms, models
        self.processor = MclProcessor(gms.registry, gms.codec, models)
        self.read: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()

    def write(self, *proposals) -> None:
        results = self.gms.apply(list(proposals), ACTOR)
        assert all(r.failure is None for r in results)
        self.index()

    def index(self) -> None:
        with self.lock:
            for topic in (topics.MCL_VERSIONED, topics.MCL_TIMESERIES):
                for part in range(self.gms.log.partitions(topic)):
                    while records := self.gms.log.read(topic, part, self.read.get((topic, part), 0), 5000):
                        self.processor.process(records)
                        self.read[(topic, part)] = records[-1].offset + 1

    def state(self) -> dict[str, Any]:
        """What readers see of the models the versioned topic feeds: search and lineage."""
        search, lineage = self.models.search, self.models.lineage
        out: dict[str, Any] = {query: search.query(query, count=100, include_removed=True).to_json()
                                  for query in ("*", "table", "tags:pii", "upstreamTags:pii")}
        out["lineage"] = [lineage.query(urn, "both", 5).to_json() for urn in URNS[:3]]
        out["fields"] = [lineage.field_query(urn, "upstream", 5).to_json() for urn in (KEY, SEGMENT)]
        return out

    def series(self, aspect: str = "datasetProfile") -> dict[str, list]:
        return {urn: self.models.timeseries.query(urn, aspect, limit=10_000) for urn in URNS}

    @contextmanager
    def ingesting_profiles(self, first: int, last: int, before_writes: Callable[[], None] = lambda: None
                           ) -> Iterator[list[int]]:
        """While the body runs: the live MCL processor, and a writer of profiles `first`, ... (40 a
        round, up to `last`), started after `before_writes`; yields [how many are written].
        Afterwards the writer is done and the processor caught up with everything."""
        stop, done = threading.Event(), threading.Event()
        written = [first]
        processor = threading.Thread(target=self.processor.run, args=(self.gms.log, stop),
                                     kwargs={"poll_timeout": 0.1, "workers": 0})

        def ingest() -> None:
            while not done.is_set() and written[0] < last:
                assert all(r.failure is None for r in self.gms.apply(profiles(written[0], 40), ACTOR))
                written[0] += 40

        writer = threading.Thread(target=ingest)
        processor.start()
        try:
            before_writes()
            writer.start()
            yield written
        finally:
            done.set()
            if writer.is_alive():
                writer.join()
            caught_up = self.processor.wait_until_caught_up(self.gms.log, WAIT)
            stop.set()
            processor.join()
        assert caught_up

    def replay(self, topic: str = topics.MCL_TIMESERIES, into: str | None = None, batch: int = 100,
               aspect: str | None = None, workers: int = 0) -> int:
        plan = make_plan(self.gms.log, topic)
        positions = dict(plan.starts)
        rebuild = Rebuild(self.models, topic, into, [aspect] if aspect else None) if into else None
        replay = Replay(self.gms.log, self.processor, self.gms.store, Filters(aspect),
                        rebuild.staging(fresh=True) if rebuild else None, batch, workers)
        if rebuild:
            return replay.rebuild(plan, positions, lambda *_: None, rebuild)
        return replay.run(plan, positions, lambda *_: None)


class ReplayContract(ABC):
    @abstractmethod
    def open_gms(self, data_dir: Path) -> Gms: ...

    @pytest.fixture
    def live(self, models_factory: ModelsFactory, tmp_path: Path) -> Iterator[Live]:
        gms = self.open_gms(tmp_path / "data")
        models = models_factory(tmp_path / "data")
        yield Live(gms, models)
        models.close()
        gms.close()

    def test_a_rebuild_into_a_fresh_model_equals_the_live_one_and_is_switched_to_whole(self, live):
        live.write(*[proposal(urn, "datasetProperties", {"description": urn}) for urn in URNS])
        live.write(*profiles(0, 400))
        live.write(proposal(RUN, "dataProcessInstanceRunEvent", {"timestampMillis": 5, "status": "STARTED"}))
        live.write(proposal(URNS[0], "datasetKey", change="DELETE"))  # its points go, and must not come back
        expected = live.series()
        assert expected[URNS[0]] == [] and len(expected[URNS[1]]) == 50
        runs = live.models.timeseries.query(RUN, "dataProcessInstanceRunEvent")
        live.models.timeseries.clear()  # readers see an empty model until the rebuild is switched to

        rebuild = Rebuild(live.models, topics.MCL_TIMESERIES, "rebuilt")
        staged = rebuild.staging(fresh=True)
        replay = Replay(live.gms.log, live.processor, live.gms.store, Filters(), staged, batch=100)
        plan = make_plan(live.gms.log, topics.MCL_TIMESERIES)
        positions = dict(plan.starts)
        seen_while_building = []
        replay.run(plan, positions, lambda *_: seen_while_building.append(live.series()[URNS[1]]))
        assert seen_while_building and all(points == [] for points in seen_while_building)
        assert [staged.timeseries.query(urn, "datasetProfile", limit=10_000) for urn in URNS] == list(expected.values())
        assert not live.models.timeseries.switched("rebuilt") and live.models.timeseries.building("rebuilt")
        replay.rebuild(plan, positions, lambda *_: None, rebuild)
        assert live.models.timeseries.switched("rebuilt")
        assert live.series() == expected
        assert live.models.timeseries.query(RUN, "dataProcessInstanceRunEvent") == runs
        live.write(*profiles(1000, 8))  # the live processor now writes to the rebuilt model
        assert len(live.series()[URNS[1]]) == 51

    def test_replays_are_idempotent(self, live):
        live.write(*[proposal(urn, "datasetProperties", {"description": urn}) for urn in URNS])
        live.write(*profiles(0, 200))
        series, hits = live.series(), live.models.search.query("db").total
        for workers in (0, 1):  # decoded here, or ahead in a worker process
            assert live.replay(workers=workers) == 200
            live.replay(topics.MCL_VERSIONED, workers=workers)  # search analysed in the worker too
            assert live.series() == series and live.models.search.query("db").total == hits
        live.replay(into="again")
        assert live.series() == series
        found = live.models.search.query("db", count=100).to_json()
        live.replay(topics.MCL_VERSIONED, into="again", workers=1)  # analysed in the worker, into a fresh index
        assert live.models.search.query("db", count=100).to_json() == found

    def test_only_the_chosen_aspect_is_rebuilt(self, live):
        live.write(*profiles(0, 80),
                   proposal(RUN, "dataProcessInstanceRunEvent", {"timestampMillis": 5, "status": "STARTED"}))
        expected = live.series()
        live.models.timeseries.clear()
        live.replay(into="profiles", aspect="datasetProfile")
        assert live.series() == expected
        assert live.models.timeseries.query(RUN, "dataProcessInstanceRunEvent") == []  # not replayed, left alone

    def test_a_rebuild_beside_live_ingestion_loses_and_doubles_nothing(self, live):
        live.write(*profiles(0, 400))
        with live.ingesting_profiles(400, 800) as written:
            live.replay(into="beside", batch=200)
        assert written[0] > 400  # ingestion went on during the rebuild
        series = live.series()
        assert sorted(p["rowCount"] for points in series.values() for p in points) == list(range(written[0]))

    def test_an_in_place_replay_beside_live_ingestion_loses_and_doubles_nothing(self, live):
        live.write(*profiles(0, 400))

        def clear_once_indexed() -> None:
            assert live.processor.wait_until_caught_up(live.gms.log, WAIT)  # its group is past the 400
            live.models.timeseries.clear()  # so only the replay can bring them back

        with live.ingesting_profiles(400, 800, clear_once_indexed) as written:
            assert live.replay(batch=50) >= 400
        assert written[0] > 400
        series = live.series()
        assert sorted(p["rowCount"] for points in series.values() for p in points) == list(range(written[0]))

    def test_a_search_rebuild_equals_the_live_index_and_lineage_is_replayed_in_place(self, live):
        catalog(live)
        expected = live.state()
        assert expected["upstreamTags:pii"]["total"] == 2 and expected["tags:pii"]["total"] == 2  # a dataset, a field
        live.models.clear()  # readers see empty models until the rebuild is switched to
        rebuild = Rebuild(live.models, topics.MCL_VERSIONED, "rebuilt")
        staged = rebuild.staging(fresh=True)
        replay = Replay(live.gms.log, live.processor, live.gms.store, Filters(), staged, batch=5)
        plan = make_plan(live.gms.log, topics.MCL_VERSIONED)
        positions = dict(plan.starts)
        seen_while_building = []
        replay.run(plan, positions,
                   lambda *_: seen_while_building.append(live.models.search.query("*", include_removed=True).total))
        assert len(seen_while_building) > 1 and set(seen_while_building) == {0}
        assert {h.urn for h in staged.search.query("*", count=100, include_removed=True).hits} == {
            hit["urn"] for hit in expected["*"]["results"]}
        assert live.models.lineage.query(URNS[2], "upstream", 5).to_json() != {}  # lineage: in place, at once
        replay.rebuild(plan, positions, lambda *_: None, rebuild)
        assert live.models.search.switched("rebuilt")
        assert live.state() == expected
        assert live.processor.check(live.gms.store).ok
        live.write(proposal(URNS[5], "datasetProperties", {"name": "t5", "description": "written after"}))
        assert [h.urn for h in live.models.search.query("after").hits] == [URNS[5]]  # into the rebuilt index

    def test_readers_see_the_old_index_or_the_rebuilt_one_whole(self, live):
        live.write(*[proposal(dataset_urn(f"db.r{i}"), "datasetProperties", {"name": f"r{i}"}) for i in range(60)])
        live.models.search.clear()
        stop, totals, failures = threading.Event(), [], []

        def read() -> None:  # a reader querying all along, the switch included
            try:
                while not stop.is_set():
                    totals.append(live.models.search.query("*").total)
                    stop.wait(0.005)
            except Exception as error:
                failures.append(error)

        def reads_until(condition) -> None:
            deadline = time.monotonic() + WAIT
            while not condition() and not failures and time.monotonic() < deadline:
                stop.wait(0.005)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            reads_until(lambda: totals)  # the reader saw the old index first
            live.replay(topics.MCL_VERSIONED, into="whole", batch=3)
            totals_at_switch = len(totals)
            reads_until(lambda: len(totals) > totals_at_switch)  # at least one read after the switch
        finally:
            stop.set()
            reader.join()
        assert failures == []
        assert set(totals) == {0, 60} and totals[0] == 0 and totals[-1] == 60
        assert totals == sorted(totals)  # never back to the old index

    def test_a_search_rebuild_beside_live_ingestion_loses_nothing(self, live):
        live.write(*[proposal(urn, "datasetProperties", {"name": urn, "description": "round 0"}) for urn in URNS])
        stop, done = threading.Event(), threading.Event()
        rounds = [0]
        processor = threading.Thread(target=live.processor.run, args=(live.gms.log, stop),
                                     kwargs={"poll_timeout": 0.1, "workers": 0})  # the live MCL processor

        def ingest() -> None:  # up to 30 rounds, while the rebuild runs
            while not done.is_set() and rounds[0] < 30:
                assert all(r.failure is None for r in live.gms.apply(
                    [proposal(urn, "datasetProperties", {"name": urn, "description": f"round {rounds[0] + 1}"})
                     for urn in URNS], ACTOR))
                rounds[0] += 1

        writer = threading.Thread(target=ingest)
        processor.start()
        writer.start()
        try:
            live.replay(topics.MCL_VERSIONED, into="beside", batch=4)
        finally:
            done.set()
            writer.join()
            caught_up = live.processor.wait_until_caught_up(live.gms.log, WAIT)
            stop.set()
            processor.join()
        assert caught_up and rounds[0] > 0
        hits = live.models.search.query("*", count=100).hits
        assert sorted(h.urn for h in hits) == sorted(URNS)
        assert {h.description for h in hits} == {f"round {rounds[0]}"}
        assert live.processor.check(live.gms.store).ok

    def test_a_plan_notes_what_retention_dropped(self, live):
        live.write(*profiles(0, 40))
        log_ = live.gms.log
        before = int(time.time() * 1000) - 60_000
        assert make_plan(log_, topics.MCL_TIMESERIES, from_ms=before).truncated == {}
        full = make_plan(log_, topics.MCL_TIMESERIES)
        part = max(full.ends, key=lambda p: full.ends[p])
        log_.delete_before(topics.MCL_TIMESERIES, part, 3)
        assert make_plan(log_, topics.MCL_TIMESERIES, from_ms=before).truncated == {part: 3}
        assert make_plan(log_, topics.MCL_TIMESERIES, from_offset=1).truncated == {part: 3}
        later = make_plan(log_, topics.MCL_TIMESERIES, from_offset=4)
        assert later.truncated == {} and later.starts[part] == 4
        assert later.total == sum(max(0, end - 4) for end in full.ends.values())


class ReplayCommandContract(ABC):
    """`lodestar replay` as a process, on the embedded read models of a data directory."""

    @abstractmethod
    def open_gms(self, data_dir: Path) -> Gms: ...

    def cli_env(self) -> dict[str, str]:
        return {}

    def open_models(self, data_dir: Path) -> ReadModels:
        """The read models the command's configuration (`cli_env`) opens."""
        return SqliteReadModels.in_data_dir(data_dir)

    @pytest.fixture
    def live(self, tmp_path: Path) -> Iterator[Live]:
        gms = self.open_gms(tmp_path / "data")
        models = self.open_models(tmp_path / "data")
        self.data_dir = tmp_path / "data"
        yield Live(gms, models)
        if isinstance(models, DistributedReadModels):
            models.search.drop()
            models.timeseries.drop()
        models.close()
        gms.close()

    def replay(self, *args: str, crash: bool = False) -> subprocess.CompletedProcess:
        env = {**os.environ, **self.cli_env(), **({"LODESTAR_CRASH_AT": "replay-after-checkpoint"} if crash else {})}
        return subprocess.run([*LODESTAR, "replay", "--data-dir", str(self.data_dir), *args], env=env,
                              capture_output=True, text=True, timeout=120)

    def test_a_killed_replay_resumes_from_its_checkpoint(self, live):
        # the entities first, so that their profiles' batches write nothing else: on Kafka, offsets
        # (which the counts below are) also hold the markers of each batch's transactions
        live.write(*[proposal(urn, "status", {"removed": False}) for urn in URNS])
        live.write(*profiles(0, 600))
        expected = live.series()
        live.models.timeseries.clear()
        killed = self.replay("--topic", "timeseries", "--into", "fresh", "--batch-size", "100", crash=True)
        assert killed.returncode == 137, killed.stderr
        assert len(list((self.data_dir / "replay").glob("*.json"))) == 1  # its checkpoint
        assert live.series() == {urn: [] for urn in URNS}  # not switched: readers see the old model
        resumed = self.replay("--topic", "timeseries", "--into", "fresh", "--batch-size", "100")
        assert resumed.returncode == 0, resumed.stderr
        assert "resuming: 100 of 600 events were replayed before" in resumed.stdout
        assert "replayed 500 events" in resumed.stdout and "readers now use fresh" in resumed.stdout
        assert live.series() == expected
        assert list((self.data_dir / "replay").glob("*.json")) == []

    def test_a_start_past_retention_restores_versioned_aspects_from_the_store(self, live):
        live.write(*[proposal(urn, "datasetProperties", {"description": f"about {urn}"}) for urn in URNS])
        live.models.clear()
        log_ = live.gms.log
        for part in range(log_.partitions(topics.MCL_VERSIONED)):
            log_.delete_before(topics.MCL_VERSIONED, part, log_.end_offset(topics.MCL_VERSIONED, part) - 1)
        done = self.replay("--topic", "versioned", "--from", "2020-01-01T00:00:00Z")
        assert done.returncode == 0, done.stderr
        assert "older than what MetadataChangeLog_Versioned_v1 still holds" in done.stderr
        assert "restoring the versioned read models from the aspect store instead" in done.stderr
        assert live.models.search.query("about").total == len(URNS)
        timeseries = self.replay("--topic", "timeseries", "--from-offset", "0")
        assert timeseries.returncode == 0 and "past its retention" not in timeseries.stderr

    def rows(self, live: Live) -> list[int]:
        return sorted(p["rowCount"] for points in live.series().values() for p in points)

    def held_rows(self, live: Live, start: int = 0, end: int | None = None) -> list[int]:
        """The rowCounts of the profiles the timeseries topic holds at offsets [start, end)."""
        log_, codec, found = live.gms.log, default_codec(), []
        for part in range(log_.partitions(topics.MCL_TIMESERIES)):
            first = max(start, log_.first_offset(topics.MCL_TIMESERIES, part))
            found += [decode_change(codec, record).value["rowCount"]
                      for record in log_.read(topics.MCL_TIMESERIES, part, first, 10_000)
                      if end is None or record.offset < end]
        return sorted(found)

    def moment_after_all(self, live: Live) -> str:
        """An ISO time after every record logged so far (which the clock has passed)."""
        log_ = live.gms.log
        newest = max(record.timestamp_ms for topic in (topics.MCL_VERSIONED, topics.MCL_TIMESERIES)
                     for part in range(log_.partitions(topic)) for record in log_.read(topic, part, 0, 10_000))
        moment = newest + 2  # a margin for the float seconds the command turns it into
        while time.time() * 1000 <= moment:
            time.sleep(0.001)
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=moment)).isoformat()

    def test_a_time_range_or_an_offset_range_replays_only_what_it_covers(self, live):
        live.write(*profiles(0, 40))
        start = self.moment_after_all(live)
        live.write(*profiles(40, 40))
        end = self.moment_after_all(live)
        live.write(*profiles(80, 40))
        live.models.timeseries.clear()
        done = self.replay("--topic", "timeseries", "--from", start, "--to", end)
        assert done.returncode == 0, done.stderr
        assert "replayed 40 events" in done.stdout
        assert self.rows(live) == list(range(40, 80))
        live.models.timeseries.clear()
        expected = self.held_rows(live, 1, 3)
        assert 0 < len(expected) < 120
        done = self.replay("--topic", "timeseries", "--from-offset", "1", "--to-offset", "3")
        assert done.returncode == 0, done.stderr
        assert self.rows(live) == expected

    def test_urn_like_replays_only_the_matching_entities(self, live):
        live.write(*profiles(0, 80))
        expected = live.series()
        assert len(expected[URNS[1]]) == 10
        live.models.timeseries.clear()
        done = self.replay("--topic", "timeseries", "--urn-like", "%db.t1,%")
        assert done.returncode == 0, done.stderr
        assert live.series() == {urn: expected[urn] if urn == URNS[1] else [] for urn in URNS}

    def test_a_timeseries_start_past_retention_says_points_are_lost_and_replays_what_is_held(self, live):
        live.write(*profiles(0, 80))
        log_ = live.gms.log
        for part in range(log_.partitions(topics.MCL_TIMESERIES)):
            log_.delete_before(topics.MCL_TIMESERIES, part, max(0, log_.end_offset(topics.MCL_TIMESERIES, part) - 2))
        held = self.held_rows(live)
        assert 0 < len(held) < 80
        live.models.timeseries.clear()
        done = self.replay("--topic", "timeseries", "--from", "2020-01-01T00:00:00Z")
        assert done.returncode == 0, done.stderr
        assert "older than what MetadataChangeLog_Timeseries_v1 still holds" in done.stderr
        assert "timeseries points older than that are lost (the topic is their only copy); replaying what it" \
               " holds" in done.stderr
        assert self.rows(live) == held

    def test_the_command_rebuilds_search_and_replays_lineage_in_place(self, live):
        catalog(live)
        expected = live.state()
        live.models.clear()
        done = self.replay("--topic", "versioned", "--into", "fresh", "--batch-size", "5")
        assert done.returncode == 0, done.stderr
        assert "readers now use fresh" in done.stdout
        assert live.state() == expected
        assert live.processor.check(live.gms.store).ok

    def test_an_unfinished_rebuild_keeps_its_name_and_resumes(self, live):
        catalog(live)
        expected = live.state()
        live.models.clear()
        killed = self.replay("--topic", "versioned", "--into", "next", "--batch-size", "5", crash=True)
        assert killed.returncode == 137, killed.stderr
        assert live.state()["*"]["total"] == 0  # not switched: readers see the old index
        other = self.replay("--topic", "versioned", "--from-offset", "0", "--into", "next")  # another request
        assert other.returncode == 1 and "Traceback" not in other.stderr
        assert "--into next: an unfinished rebuild into next exists" in other.stderr
        resumed = self.replay("--topic", "versioned", "--into", "next", "--batch-size", "5")
        assert resumed.returncode == 0, resumed.stderr
        assert re.search(r"resuming: \d+ of \d+ events", resumed.stdout) and "readers now use next" in resumed.stdout
        assert live.state() == expected

    def test_a_versioned_rebuild_past_retention_restores_the_staging_index_from_the_store(self, live):
        catalog(live)
        expected = live.state()
        live.models.search.clear()
        log_ = live.gms.log
        for part in range(log_.partitions(topics.MCL_VERSIONED)):
            log_.delete_before(topics.MCL_VERSIONED, part, log_.end_offset(topics.MCL_VERSIONED, part) - 1)
        done = self.replay("--topic", "versioned", "--from", "2020-01-01T00:00:00Z", "--into", "restored")
        assert done.returncode == 0, done.stderr
        assert "restoring the versioned read models from the aspect store instead" in done.stderr
        assert "readers now use restored" in done.stdout
        assert live.state() == expected

    def test_bad_requests_are_refused_with_a_message(self, live):
        for args, message in ((("--topic", "versioned", "--into", "x", "--aspect", "datasetProperties"),
                               "rebuilds the whole search index: it cannot be combined with --aspect"),
                              (("--topic", "versioned", "--into", "x", "--urn-like", "%db%"), "with --urn-like"),
                              (("--topic", "versioned", "--into", "Bad-Name"), "lowercase letters and digits"),
                              (("--topic", "timeseries", "--into", "Bad-Name"), "lowercase letters and digits"),
                              (("--topic", "timeseries", "--aspect", "datasetProperties"), "is a versioned aspect"),
                              (("--topic", "timeseries", "--from", "soon"), "is not an ISO-8601 time"),
                              (("--topic", "timeseries", "--from", "2026-01-01", "--from-offset", "3"), "not both")):
            result = self.replay(*args)
            assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr
