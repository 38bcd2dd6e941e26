"""Realistic dataset metadata for benchmarks: properties, a 20-field schema, tags, upstream lineage."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

TYPES = [("string", "com.linkedin.schema.StringType"), ("bigint", "com.linkedin.schema.NumberType"),
         ("double", "com.linkedin.schema.NumberType"), ("boolean", "com.linkedin.schema.BooleanType"),
         ("date", "com.linkedin.schema.DateType"), ("timestamp", "com.linkedin.schema.TimeType")]
WORDS = ["order", "customer", "invoice", "payment", "shipment", "product",
         "region", "account", "ledger", "session", "click"]


def dataset_urn(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.db{i % 50}.{WORDS[i % len(WORDS)]}_{i},PROD)"


def dataset_mcps(i: int, rng: random.Random) -> list[dict[str, Any]]:
    """Four MCPs (DataHub file form) for dataset number i."""
    urn = dataset_urn(i)
    word = WORDS[i % len(WORDS)]
    fields = []
    for j in range(20):
        native, type_name = TYPES[(i + j) % len(TYPES)]
        fields.append({"fieldPath": f"{WORDS[j % len(WORDS)]}_{j}", "nativeDataType": native,
                       "type": {"type": {type_name: {}}}, "nullable": j % 3 == 0,
                       "description": f"the {WORDS[j % len(WORDS)]} column {j}"})
    upstreams = [{"dataset": dataset_urn(rng.randrange(max(i, 1))), "type": "TRANSFORMED",
                  "auditStamp": {"time": 1700000000000, "actor": "urn:li:corpuser:etl"}} for _ in range(2)]
    aspects = {
        "datasetProperties": {"name": f"{word}_{i}", "description": f"Daily {word} facts, partition {i % 7}",
                              "customProperties": {"owner": f"team-{i % 13}", "tier": ["gold", "silver"][i % 2],
                                                   "retention": f"{30 + i % 60}d"}},
        "schemaMetadata": {"schemaName": f"{word}_{i}", "platform": "urn:li:dataPlatform:hive", "version": 0,
                           "hash": "", "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
                           "fields": fields},
        "globalTags": {"tags": [{"tag": f"urn:li:tag:{t}"} for t in ("pii", "finance", "raw")[: 1 + i % 3]]},
        "upstreamLineage": {"upstreams": upstreams},
    }
    return [{"entityType": "dataset", "entityUrn": urn, "changeType": "UPSERT", "aspectName": name,
             "aspect": {"json": value}} for name, value in aspects.items()]


def stream(first: int, stop: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """The MCPs of datasets first..stop-1, made as they are read (a run in several parts passes
    the same `rng` on, and gets what one part would)."""
    for i in range(first, stop):
        yield from dataset_mcps(i, rng)


def generate(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """`count` MCPs (a multiple of four), in DataHub's file form."""
    return list(stream(0, count // 4, random.Random(seed)))
