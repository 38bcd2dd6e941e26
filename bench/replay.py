"""Replay rate: timeseries MCLs replayed into the timeseries read model, embedded and on Kafka + OpenSearch.

    .venv/bin/python -m bench.replay [--points 100000] [--datasets 20000]

Appends `--points` datasetProfile MCLs (2,000 datasets) to the timeseries topic of a fresh
embedded log and of fresh Kafka topics (4 partitions), then times what `lodestar replay --topic
timeseries` does (mcl_processor.replay, batches of 5,000, a checkpoint per batch): read, decode
(ahead, in a worker process per CPU but one), apply: into the live SQLite model (embedded) and
into a staging OpenSearch model switched to at the end (`--into`, Kafka). Target: 20,000
events/s. Beside it, the raw backend baseline: the same documents (same ids) bulk-loaded by
plain bulk requests of one batch each into a fresh index, refreshed once at the end, and the
replay's rate as a share of it. Then a versioned rebuild (`--topic versioned --into`): one
datasetProperties MCL per dataset (`--datasets`) replayed into a staging search index switched
to at the end (lineage and run lineage, on SQLite, replayed in place), embedded and on Kafka +
OpenSearch. What the run made on Kafka and OpenSearch is deleted at the end.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from bench.subscribe import drop_kafka
from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest import topics
from ingest.backends import Endpoints
from ingest.eventlog import EventLog, LogMessage
from ingest.eventlog.kafka import KafkaEventLog
from mcl_processor.annotations import annotations_of
from mcl_processor.decode import MclDecoder
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.lineage.sqlite import SqliteLineageGraph
from mcl_processor.opensearch.indices import BULK_RESULTS, client_for
from mcl_processor.processor import MclProcessor
from mcl_processor.readmodels import ReadModels
from mcl_processor.readmodels_db import FILE_NAME, Database
from mcl_processor.rebuild import Rebuild
from mcl_processor.replay import BATCH, Checkpoint, Filters, Replay, make_plan
from mcl_processor.runs.facts import run_facts_of
from mcl_processor.runs.sqlite import SqliteRunLineage
from mcl_processor.search.opensearch import OpenSearchSearchIndex
from mcl_processor.timeseries.opensearch import BODY, OpenSearchTimeseriesStore, point_id
from mcl_processor.workers import decode, default_workers
from schemas.events import MCL, default_codec
from schemas.registry import default_registry

TARGET = 20_000


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes), user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class OpenSearchModels(ReadModels):
    """Search and timeseries on OpenSearch (indices `<prefix>_*`); lineage and run lineage on
    SQLite in `data_dir` (a replay applies them in place)."""

    search: OpenSearchSearchIndex
    timeseries: OpenSearchTimeseriesStore

    def __init__(self, endpoints: Endpoints, prefix: str, data_dir: Path):
        registry = default_registry()
        client = client_for(endpoints)
        self.db = Database(data_dir / FILE_NAME)
        self.search = OpenSearchSearchIndex(client, annotations_of(registry), prefix)
        self.timeseries = OpenSearchTimeseriesStore(client, prefix)
        self.lineage = SqliteLineageGraph(self.db, annotations_of(registry))
        self.runs = SqliteRunLineage(self.db, run_facts_of(registry))

    def drop(self) -> None:
        self.search.drop()
        self.timeseries.drop()

    def close(self) -> None:
        self.search.client.close()
        self.db.close()


def points(count: int) -> list[LogMessage]:
    codec = default_codec()
    out = []
    for i in range(count):
        urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.sales_{i % 2000:05d},PROD)"
        value = {"timestampMillis": 1_790_000_000_000 + i * 60_000, "rowCount": 1000 + i, "columnCount": 24,
                 "sizeInBytes": 1_000_000 + i, "partitionSpec": {"partition": f"day={i // 2000}", "type": "PARTITION"}}
        record = {"entityType": "dataset", "entityUrn": urn, "changeType": "UPSERT", "aspectName": "datasetProfile",
                  "aspect": {"value": orjson.dumps(value), "contentType": "application/json"},
                  "systemMetadata": {"lastObserved": value["timestampMillis"], "runId": "profiler"},
                  "created": {"time": value["timestampMillis"], "actor": "urn:li:corpuser:profiler"}}
        out.append(LogMessage(urn, codec.encode(MCL, record)))
    return out


def properties(count: int) -> list[LogMessage]:
    """A versioned MCL (datasetProperties, version 1) per dataset."""
    codec = default_codec()
    out = []
    for i in range(count):
        urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.orders_{i:06d},PROD)"
        value = {"name": f"orders_{i:06d}", "description": f"orders of shop {i % 50}, one row per order line",
                 "customProperties": {"owner": f"team{i % 20}", "tier": ("gold", "silver", "bronze")[i % 3]}}
        record = {"entityType": "dataset", "entityUrn": urn, "changeType": "UPSERT", "aspectName": "datasetProperties",
                  "aspect": {"value": orjson.dumps(value), "contentType": "application/json"},
                  "systemMetadata": {"lastObserved": 1_790_000_000_000, "runId": "ingest", "version": "1"},
                  "created": {"time": 1_790_000_000_000, "actor": "urn:li:corpuser:ingest"}}
        out.append(LogMessage(urn, codec.encode(MCL, record)))
    return out


def replayed(gms: Gms, models: ReadModels, checkpoint: Path, topic: str, into: str | None
             ) -> tuple[int, float, float]:
    """(events, seconds, CPU seconds of this process and its workers) of a replay of the whole topic."""
    processor = MclProcessor(gms.registry, gms.codec, models)
    plan = make_plan(gms.log, topic)
    positions = dict(plan.starts)
    saved = Checkpoint(checkpoint)
    rebuild = Rebuild(models, topic, into) if into else None
    replay = Replay(gms.log, processor, gms.store, Filters(), rebuild.staging(fresh=True) if rebuild else None,
                    workers=default_workers())
    started, cpu = time.perf_counter(), cpu_seconds()
    if rebuild:
        replay.rebuild(plan, positions, lambda at, _: saved.save(plan, at), rebuild)
    else:
        replay.run(plan, positions, lambda at, _: saved.save(plan, at))
    return plan.total, time.perf_counter() - started, cpu_seconds() - cpu


def raw_bulk(endpoints: Endpoints, name: str, messages: list[LogMessage]) -> tuple[int, float, float]:
    """(documents, seconds, CPU seconds) of bulk-loading the replay's documents into a fresh
    index: requests of one replay batch, prepared beforehand (not timed), one refresh at the end."""
    decoder = MclDecoder(default_registry(), default_codec())
    bodies = []
    for start in range(0, len(messages), BATCH):
        lines = []
        for p in decode(decoder, None, [m.value for m in messages[start:start + BATCH]]):
            lines += [orjson.dumps({"index": {"_index": name, "_id": point_id(p)}}),
                      orjson.dumps({"urn": p.urn, "timestampMillis": p.timestamp_ms, "partition": p.partition,
                                    "messageId": p.message_id, "value": orjson.Fragment(p.value_json)})]
        bodies.append(b"\n".join(lines) + b"\n")
    client = client_for(endpoints)
    try:
        client.indices.create(index=name, body={**BODY, "settings": {
            "number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}})
        started, cpu = time.perf_counter(), cpu_seconds()
        for body in bodies:
            assert not client.bulk(body=body, params=BULK_RESULTS)["errors"]
        client.indices.refresh(index=name)
        return len(messages), time.perf_counter() - started, cpu_seconds() - cpu
    finally:
        client.indices.delete(index=name, params={"ignore_unavailable": "true"})
        client.close()


def fill(log_: EventLog, messages: list[LogMessage], topic: str = topics.MCL_TIMESERIES) -> None:
    for start in range(0, len(messages), 10_000):
        log_.append(topic, messages[start:start + 10_000])


def report(name: str, count: int, seconds: float, cpu: float) -> float:
    rate = count / seconds
    print(f"{name:<46} {count:>7} events {seconds:6.2f} s {rate:>8,.0f} events/s ({rate / TARGET:.2f}x the target"
          f" of {TARGET:,});  {count / cpu:>8,.0f} events per CPU-second of this process", flush=True)
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--datasets", type=int, default=20_000)
    args = parser.parse_args()
    messages, versioned = points(args.points), properties(args.datasets)
    print(f"{len(messages)} timeseries MCLs of {sum(len(m.value) for m in messages) / len(messages):,.0f} bytes"
          " on average", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        gms = Gms.embedded(Path(tmp))
        models = SqliteReadModels.in_data_dir(Path(tmp))
        try:
            fill(gms.log, messages)
            fill(gms.log, versioned, topics.MCL_VERSIONED)
            report("embedded: SQLite log -> SQLite model", *replayed(gms, models, Path(tmp) / "replay.json",
                                                                     topics.MCL_TIMESERIES, None))
            report("embedded: versioned -> SQLite search (--into)", *replayed(
                gms, models, Path(tmp) / "versioned.json", topics.MCL_VERSIONED, "rebuilt"))
        finally:
            models.close()
            gms.close()
    endpoints = Endpoints.from_env()
    name = f"bench_replay_{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        gms = Gms(SqliteAspectStore(Path(tmp) / "lodestar.db"),
                  KafkaEventLog.from_endpoints(endpoints, prefix=name + "-", partitions=4))
        models = OpenSearchModels(endpoints, name, Path(tmp))
        try:
            fill(gms.log, messages)
            fill(gms.log, versioned, topics.MCL_VERSIONED)
            rate = report("kafka -> OpenSearch (--into, then switch)", *replayed(
                gms, models, Path(tmp) / "replay.json", topics.MCL_TIMESERIES, "rebuilt"))
            raw = report("raw opensearch bulk (same documents)", *raw_bulk(endpoints, name + "_raw", messages))
            print(f"replay / raw bulk = {rate / raw:.0%}", flush=True)
            report("kafka versioned -> OpenSearch search (--into)", *replayed(
                gms, models, Path(tmp) / "versioned.json", topics.MCL_VERSIONED, "rebuilt"))
        finally:
            models.drop()
            models.close()
            gms.close()
            drop_kafka(endpoints, name + "-")


if __name__ == "__main__":
    main()
