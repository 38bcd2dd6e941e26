"""Subscription throughput: MCLs delivered, decoded, to a Python callback, on the embedded log and on Kafka.

    .venv/bin/python -m bench.subscribe [--mcls 100000]

Appends realistic MCLs (a dataset's properties with a description and custom properties, the
previous value, system metadata; ~1 KB each) to a fresh embedded log and to fresh Kafka topics
(4 partitions, on the running server), then times `subscribe(...)` from the earliest record
until the callback has seen them all: every MCL is read, decoded (Avro, JSON values) and
passed through the filters; a second run filters on an aspect half of them carry. Target:
20,000 MCL/s delivered. Topics and groups made on Kafka are deleted at the end.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
from confluent_kafka.admin import AdminClient

from ingest import topics
from ingest.backends import Endpoints
from ingest.eventlog import EventLog, LogMessage
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.subscribe import Change, subscribe
from schemas.events import MCL, default_codec

TARGET = 20_000


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes), user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def mcls(count: int) -> list[LogMessage]:
    """`count` MCLs over count/4 datasets: half datasetProperties, half globalTags, versions rising."""
    codec = default_codec()
    out = []
    for i in range(count):
        urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.sales_{i // 4:07d},PROD)"
        aspect = "datasetProperties" if i % 2 else "globalTags"
        version = i % 4 // 2 + 1
        value = {"description": f"Orders of region {i % 17}, one row per order line, refreshed hourly " * 3,
                 "customProperties": {"owner": f"team-{i % 13}", "retention": "400d", "tier": "gold"}} \
            if aspect == "datasetProperties" else {"tags": [{"tag": "urn:li:tag:pii"}, {"tag": f"urn:li:tag:t{i % 9}"}]}
        meta = {"lastObserved": 1_790_000_000_000 + i, "runId": "bench", "version": str(version),
                "aspectCreated": {"time": 1_790_000_000_000, "actor": "urn:li:corpuser:etl"},
                "aspectModified": {"time": 1_790_000_000_000 + i, "actor": "urn:li:corpuser:etl"}}
        record = {"entityType": "dataset", "entityUrn": urn, "changeType": "UPSERT", "aspectName": aspect,
                  "aspect": {"value": orjson.dumps(value), "contentType": "application/json"},
                  "systemMetadata": meta, "previousAspectValue": {"value": orjson.dumps(value),
                                                                   "contentType": "application/json"}
                  if version > 1 else None,
                  "created": {"time": 1_790_000_000_000 + i, "actor": "urn:li:corpuser:etl"}}
        out.append(LogMessage(urn, codec.encode(MCL, record)))
    return out


def fill(log_: EventLog, messages: list[LogMessage]) -> None:
    for start in range(0, len(messages), 10_000):
        log_.append(topics.MCL_VERSIONED, messages[start:start + 10_000])


def delivered(log_: EventLog, count: int, **filters: object) -> tuple[float, float]:
    """(seconds, CPU seconds) until the callback saw `count` changes, from the earliest record."""
    seen = 0
    subscription = subscribe(log_, f"bench-{uuid.uuid4().hex[:8]}", start="earliest", handle_signals=False,
                             max_records=5000, **filters)

    def callback(change: Change) -> None:
        nonlocal seen
        seen += 1
        if seen == count:
            subscription.stop()

    started, cpu = time.perf_counter(), cpu_seconds()
    subscription.run(callback)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    subscription.close()
    return seconds, cpu


def report(name: str, count: int, times: tuple[float, float]) -> None:
    seconds, cpu = times
    rate = count / seconds
    print(f"{name:<42} {count:>7} MCLs {seconds:6.2f} s {rate:>8,.0f} MCL/s ({rate / TARGET:.2f}x the target of"
          f" {TARGET:,});  {count / cpu:>8,.0f} MCL per CPU-second of this process", flush=True)


def run(name: str, log_: EventLog, messages: list[LogMessage]) -> None:
    fill(log_, messages)
    report(f"{name}: every MCL", len(messages), delivered(log_, len(messages)))
    report(f"{name}: aspects=[globalTags]", len(messages) // 2,
           delivered(log_, len(messages) // 2, aspects=["globalTags"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mcls", type=int, default=100_000)
    args = parser.parse_args()
    messages = mcls(args.mcls)
    size = sum(len(m.value) for m in messages) / len(messages)
    print(f"{len(messages)} MCLs of {size:,.0f} bytes on average; a callback counting them (one process)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        log_ = SqliteEventLog(Path(tmp) / "lodestar.db", partitions=1)
        try:
            run("embedded (SQLite)", log_, messages)
        finally:
            log_.close()
    endpoints = Endpoints.from_env()
    prefix = f"bench-subscribe-{uuid.uuid4().hex[:8]}-"
    kafka = KafkaEventLog.from_endpoints(endpoints, prefix=prefix, partitions=4)
    try:
        run("kafka (4 partitions)", kafka, messages)
    finally:
        kafka.close()
        drop_kafka(endpoints, prefix)


def drop_kafka(endpoints: Endpoints, prefix: str) -> None:
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    wait: Callable[[dict], None] = lambda futures: [f.result() for f in futures.values()]  # noqa: E731
    names = [n for n in admin.list_topics(timeout=30).topics if n.startswith(prefix)]
    if names:
        wait(admin.delete_topics(names, operation_timeout=30))
    groups = [g.group_id for g in admin.list_consumer_groups(request_timeout=30).result().valid
              if g.group_id.startswith(prefix)]
    if groups:
        wait(admin.delete_consumer_groups(groups, request_timeout=30))


if __name__ == "__main__":
    main()
