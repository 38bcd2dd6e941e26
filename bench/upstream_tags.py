"""What upstream tags cost the MCL processor's write path, and what `upstreamTags:` queries take.

    .venv/bin/python -m bench.upstream_tags [--mcps 20000] [--chains 25] [--hops 40]

On the embedded read models (SQLite), applied in batches of 10,000 as the processor does:

1. the read_models benchmark's datasets (properties, schema, dataset tags, upstreams: no field
   tags, no field edges), with upstream tags kept and without (the derivation switched off):
   the ratio (best of 3 alternating rounds) is what the feature costs every other MCL;
2. `chains` x `hops` runs, each deriving the 20 fields of one dataset from the one before it
   (field operations: read, write), with and without; then a PII tag on the first field of
   each chain, which re-derives the `hops` fields downstream of it;
3. `upstreamTags:pii` over HTTP-free calls of the index: p50/p99 of 200 queries.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from bench.datasets import generate
from mcl_processor import upstream_tags
from mcl_processor.changes import AspectChange, ChangeBatch, chunks
from mcl_processor.embedded import SqliteReadModels

FIELDS = 20
BATCH = 10_000
ROUNDS = 3


def dataset(chain: int, hop: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,lineage.chain{chain}.step{hop},PROD)"


def field(dataset_urn: str, i: int) -> str:
    return f"urn:li:schemaField:({dataset_urn},col_{i})"


def run_change(chain: int, hop: int) -> AspectChange:
    """A run deriving every field of step `hop` from the same field of step `hop - 1`."""
    source, destination = dataset(chain, hop - 1), dataset(chain, hop)
    columns = [f"col_{i}" for i in range(FIELDS)]
    operations = [{"name": "read", "type": "READ", "source": source, "outputs": columns, "description": ""},
                  {"name": "write", "type": "WRITE", "destination": destination, "description": "",
                   "inputs": [{"origin": "read", "field": c} for c in columns]}]
    return AspectChange(f"urn:li:dataProcessInstance:chain{chain}-step{hop}", "dataProcessInstance",
                        "fieldOperations", 1, {"operations": operations})


@contextmanager
def models(enabled: bool) -> Iterator[SqliteReadModels]:
    with tempfile.TemporaryDirectory() as tmp:
        read_models = SqliteReadModels.in_data_dir(Path(tmp))
        try:
            if enabled:
                yield read_models
            else:
                with mock.patch.object(upstream_tags, "refresh", lambda *args: None):
                    yield read_models
        finally:
            read_models.close()


def apply_all(read_models: SqliteReadModels, changes: list[AspectChange]) -> float:
    """Seconds to apply the changes in batches of BATCH."""
    started = time.perf_counter()
    for batch in chunks(changes, BATCH):
        read_models.apply(ChangeBatch(changes=tuple(batch)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcps", type=int, default=20_000)
    parser.add_argument("--chains", type=int, default=25)
    parser.add_argument("--hops", type=int, default=40)
    args = parser.parse_args()

    datasets = [AspectChange(m["entityUrn"], "dataset", m["aspectName"], 1, m["aspect"]["json"])
                for m in generate(args.mcps)]
    rates = {False: 0.0, True: 0.0}
    for enabled in (False, True) * ROUNDS:  # the best of alternating rounds: load elsewhere skews single ones
        with models(enabled) as read_models:
            rates[enabled] = max(rates[enabled], len(datasets) / apply_all(read_models, datasets))
    print(f"{len(datasets)} dataset MCLs (best of {ROUNDS})   without {rates[False]:9,.0f} MCL/s   with upstream tags "
          f"{rates[True]:9,.0f} MCL/s   ratio {rates[True] / rates[False]:.3f}")

    runs = [run_change(c, h) for h in range(1, args.hops + 1) for c in range(args.chains)]
    tags = [AspectChange(field(dataset(c, 0), 0), "schemaField", "globalTags", 1,
                         {"tags": [{"tag": "urn:li:tag:pii"}]}) for c in range(args.chains)]
    seconds = {}
    for enabled in (False, True):
        with models(enabled) as read_models:
            seconds[enabled] = apply_all(read_models, runs)
            if not enabled:
                continue
            started = time.perf_counter()
            read_models.apply(ChangeBatch(changes=tuple(tags)))
            tagging = time.perf_counter() - started
            found = read_models.search.query("upstreamTags:pii", count=10)
            assert found.total == args.chains * args.hops, found.total
            samples = []
            for _ in range(200):
                started = time.perf_counter()
                read_models.search.query("upstreamTags:pii", count=10)
                samples.append(time.perf_counter() - started)
    print(f"{len(runs)} runs ({FIELDS} field edges each)   without {len(runs) / seconds[False]:7,.0f} runs/s   "
          f"with {len(runs) / seconds[True]:7,.0f} runs/s   ratio {seconds[False] / seconds[True]:.3f}")
    print(f"tag {args.chains} first fields as PII (re-derives {args.chains * args.hops} fields, "
          f"{args.hops} hops deep)   {tagging * 1000:.0f} ms")
    ordered = sorted(samples)
    print(f"query upstreamTags:pii ({found.total} hits, first page)   p50 {statistics.median(ordered) * 1000:.1f} ms"
          f"   p99 {ordered[int(len(ordered) * 0.99) - 1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
