"""Subscription throughput: MCLs delivered, decoded, to a Python callback, on the embedded log and on Kafka,
in both wire formats side by side.

    .venv/bin/python -m bench.subscribe [--mcls 100000] [--rounds 2]

Appends realistic MCLs (a dataset's properties with a description and custom properties, the
previous value, system metadata; ~1 KB each) to a fresh embedded log and to fresh Kafka topics
(4 partitions, on the running server), once in each wire format (schemas/mcl_wire.py: Lodestar's
own, and DataHub's schema in Confluent's framing), then times `subscribe(...)` from the earliest
record until the callback has seen them all: every MCL is read, decoded (Avro, JSON values) and
passed through the filters; a second run filters on an aspect half of them carry. The formats
are timed alternately, `--rounds` times each, and the best round of each is printed with the
Confluent format's extra CPU per MCL. First, the in-process cost per MCL of encoding (GMS's
side) and of decoding into a Change (a subscriber's), the formats alternating over many short
rounds (the least of each is the figure least moved by a busy machine). Targets: 20,000 MCL/s
delivered; the Confluent format under 10% more CPU per MCL. Topics and groups made on Kafka are deleted at the end.
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
from ingest.eventlog import EventLog, LogMessage, LogRecord
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.subscribe import Change, decode_change, subscribe
from schemas.events import MCL, default_codec
from schemas.mcl_wire import WIRE_FORMATS, ConfluentMclEncoder, MclReader, datahub_mcl_schema

TARGET = 20_000
CONFLUENT_TARGET = 0.10  # extra CPU per MCL of the Confluent format, at most
CODEC_SAMPLE, CODEC_ROUNDS = 2000, 30  # in-process costs: many short alternating rounds, the least of each
Encode = Callable[[dict], bytes]


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes), user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def encoders() -> dict[str, Encode]:
    """An MCL record encoder per wire format (Confluent's with the id Lodestar's registry gives
    DataHub's schema, which a subscription reads without a registry to ask)."""
    codec = default_codec()
    return {"lodestar": lambda record: codec.encode(MCL, record),
            "confluent": ConfluentMclEncoder(datahub_mcl_schema().default_id).encode}


def mcls(count: int, encode: Encode) -> list[LogMessage]:
    """`count` MCLs (see records), encoded."""
    return [LogMessage(record["entityUrn"], encode(record)) for record in records(count)]


def records(count: int) -> list[dict]:
    """`count` MCL records over count/4 datasets: half datasetProperties, half globalTags, versions rising."""
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
        out.append(record)
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


def report(name: str, count: int, times: tuple[float, float], base: tuple[float, float] | None = None) -> None:
    seconds, cpu = times
    rate = count / seconds
    extra = f";  {cpu / base[1] - 1:+.1%} CPU per MCL (target under +{CONFLUENT_TARGET:.0%})" if base else ""
    print(f"{name:<52} {count:>7} MCLs {seconds:6.2f} s {rate:>8,.0f} MCL/s ({rate / TARGET:.2f}x the target of"
          f" {TARGET:,});  {count / cpu:>8,.0f} MCL per CPU-second of this process{extra}", flush=True)


def codec_costs(mcl_records: list[dict], rounds: int) -> None:
    """CPU per MCL of encoding (GMS's side) and of decoding into a Change (a subscriber's),
    in-process, each format timed alternately `rounds` times; the least of each."""
    reader = MclReader()
    encode = encoders()
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for wire_format in WIRE_FORMATS:
            started = time.process_time()
            encoded = [encode[wire_format](record) for record in mcl_records]
            spent = time.process_time() - started
            best["encode", wire_format] = min(best.get(("encode", wire_format), spent), spent)
            logged = [LogRecord(topics.MCL_VERSIONED, 0, i, "", value, 0) for i, value in enumerate(encoded)]
            started = time.process_time()
            for record in logged:
                decode_change(reader, record)
            spent = time.process_time() - started
            best["decode", wire_format] = min(best.get(("decode", wire_format), spent), spent)
    for step in ("encode", "decode"):
        base, confluent = best[step, "lodestar"], best[step, "confluent"]
        count = len(mcl_records)
        print(f"{step} in-process ({count} MCLs, best of {rounds}): lodestar {base / count * 1e6:5.1f} us,"
              f" confluent {confluent / count * 1e6:5.1f} us per MCL ({confluent / base - 1:+.1%};"
              f" target under +{CONFLUENT_TARGET:.0%})", flush=True)


def run(name: str, logs: dict[str, EventLog], messages: dict[str, list[LogMessage]], rounds: int) -> None:
    """Each format's log filled, then both timed alternately; the best round (least CPU) of each."""
    for wire_format, log_ in logs.items():
        fill(log_, messages[wire_format])
    count = len(messages["lodestar"])
    cases = {"every MCL": (count, {}), "aspects=[globalTags]": (count // 2, {"aspects": ["globalTags"]})}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for _ in range(rounds):
        for case, (wanted, filters) in cases.items():
            for wire_format, log_ in logs.items():
                times = delivered(log_, wanted, **filters)
                if (wire_format, case) not in best or times[1] < best[wire_format, case][1]:
                    best[wire_format, case] = times
    for case, (wanted, _) in cases.items():
        for wire_format in logs:
            report(f"{name}, {wire_format}: {case}", wanted, best[wire_format, case],
                   best["lodestar", case] if wire_format != "lodestar" else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mcls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each format, alternating")
    args = parser.parse_args()
    messages = {wire_format: mcls(args.mcls, encode) for wire_format, encode in encoders().items()}
    sizes = ", ".join(f"{wire_format} {sum(len(m.value) for m in found) / len(found):,.0f}"
                      for wire_format, found in messages.items())
    print(f"{args.mcls} MCLs, bytes on average: {sizes}; a callback counting them (one process)", flush=True)
    codec_costs(records(CODEC_SAMPLE), CODEC_ROUNDS)
    with tempfile.TemporaryDirectory() as tmp:
        logs: dict[str, EventLog] = {f: SqliteEventLog(Path(tmp) / f"{f}.db", partitions=1) for f in WIRE_FORMATS}
        try:
            run("embedded (SQLite)", logs, messages, args.rounds)
        finally:
            for log_ in logs.values():
                log_.close()
    endpoints = Endpoints.from_env()
    prefix = f"bench-subscribe-{uuid.uuid4().hex[:8]}-"
    logs = {f: KafkaEventLog.from_endpoints(endpoints, prefix=f"{prefix}{f}-", partitions=4) for f in WIRE_FORMATS}
    try:
        run("kafka (4 partitions)", logs, messages, args.rounds)
    finally:
        for log_ in logs.values():
            log_.close()
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
