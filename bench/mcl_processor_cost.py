"""The MCL processor's cost per MCL, in instructions (callgrind) or CPU seconds, on a fixed input.

    .venv/bin/python -m bench.mcl_processor_cost [--datasets 1000] [--batch 2000] [--callgrind]
                                                 [--source generated|datahub-file]

Writes the MCPs of --datasets datasets (bench.datasets: properties, a 20-field schema, tags,
two upstreams; with `--source datahub-file` as DataHub's SDK writes them, fine-grained lineage
included: bench.datahub_file) through an embedded GMS into a scratch directory, untimed. Then a fresh
processor on fresh read models indexes every MCL from the log, as `lodestar serve` does under
load: it polls batches of --batch records, decodes and prepares them (its worker processes'
part, pickled there and back as the pool does), writes the read models and commits.

Without --callgrind this prints the CPU seconds per MCL of that second part (noisy on a busy
machine). With --callgrind the second part runs twice under `valgrind --tool=callgrind`, once
indexing and once (--dry) only starting up and indexing the first WARM_UP records; the
difference of their instruction counts per MCL after those is printed, which a loaded machine
does not move (hash seeds are fixed: two runs of the same code count the same). With `--parts` it also
prints where that CPU goes: the workers' share (decoding and preparing, pickled there and back)
and the writer's, and inside the writer the read models' parts (the methods named in PARTS,
timed around each call). `--keep DIR`
keeps the scratch data and the callgrind profile of the indexing run there
(`callgrind_annotate DIR/callgrind.out`).
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

from bench.callgrind import instructions
from bench.datahub_file import datahub_file_mcps
from bench.datasets import generate
from bench.parts import timed_parts
from gms.service import Gms
from ingest.proposal import parse_proposal
from mcl_processor import upstream_tags
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.lineage.sqlite import SqliteLineageGraph
from mcl_processor.processor import TOPICS, MclProcessor
from mcl_processor.search import sqlite as sqlite_search
from mcl_processor.workers import decode, uncollected

ACTOR = "urn:li:corpuser:bench"
GROUP = "mcl-processor-cost"  # a group of its own: every run reads the log from the start
WARM_UP = 100  # records indexed before counting
SOURCES = {"generated": generate, "datahub-file": datahub_file_mcps}
WORKERS_SHARE = "workers' share: decoding, preparing, pickling"
WRITERS_SHARE = "writer's share: the read models' transaction and commit"
# The writer's parts timed by --parts: (owner, attribute, label); an indented label is inside the one above.
PARTS = (
    (sqlite_search.SqliteSearchIndex, "apply", "search: the changes' fragments and documents"),
    (sqlite_search.SqliteSearchIndex, "_rebuild", "  documents merged and written (FTS5 tables)"),
    (sqlite_search, "document_rows", "    merging fragments into rows (Python)"),
    (SqliteLineageGraph, "apply", "lineage: edges and field edges"),
    (upstream_tags, "refresh", "upstream tags of fields whose lineage moved"),
)


def write(data_dir: Path, datasets: int, source: str) -> None:
    """The MCPs of `datasets` datasets (from `source`, one of SOURCES) applied by an embedded GMS in data_dir."""
    gms = Gms.embedded(data_dir / "gms")
    try:
        mcps = SOURCES[source](datasets * 4)
        for start in range(0, len(mcps), 1000):
            results = gms.apply([parse_proposal(mcp) for mcp in mcps[start:start + 1000]], ACTOR)
            assert all(result.failure is None for result in results)
    finally:
        gms.close()


def index(data_dir: Path, batch: int, dry: bool, spent: Counter[str] | None = None) -> tuple[int, float]:
    """Index every MCL of data_dir's log into fresh read models, but for a first batch of
    WARM_UP records, which also a `dry` run indexes (once-only work: loading the registry,
    compiling the readers and statements): (MCLs indexed after it, CPU seconds they took).
    Given `spent`, the CPU seconds of the workers' share, the writer's and the writer's PARTS
    after the first batch are added to it."""
    gms = Gms.embedded(data_dir / "gms")
    models_dir = Path(tempfile.mkdtemp(dir=data_dir, prefix="models-"))
    models = SqliteReadModels.in_data_dir(models_dir, gms.registry)
    processor = MclProcessor(gms.registry, gms.mcl_reader, models)
    preparer = models.preparer()
    consumer = gms.log.consumer(f"{GROUP}-{models_dir.name}", TOPICS)
    done, started = -WARM_UP, 0.0
    try:
        while records := consumer.poll(batch if done >= 0 else WARM_UP, 0):
            before = time.process_time()
            with uncollected():  # as in the workers (workers.decode_in_worker)
                decoded = pickle.dumps(decode(processor.decoder, preparer, [r.value for r in records]))
            items = pickle.loads(decoded)
            between = time.process_time()
            with timed_parts(PARTS, spent) if spent is not None and done >= 0 else nullcontext():
                processor.process(records, items)
            if spent is not None and done >= 0:
                spent[WORKERS_SHARE] += between - before
                spent[WRITERS_SHARE] += time.process_time() - between
            consumer.commit(records)
            done += len(records)
            if done == 0:
                if dry:
                    break
                started = time.process_time()
        return done, time.process_time() - started
    finally:
        consumer.close()
        models.close()
        gms.close()


def callgrind(data_dir: Path, batch: int, dry: bool) -> int:
    """Instructions of an `index` run in a child process under callgrind."""
    out = data_dir / ("callgrind.dry.out" if dry else "callgrind.out")
    return instructions("bench.mcl_processor_cost", ["--index", str(data_dir), "--batch", str(batch)]
                        + (["--dry"] if dry else []), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=2000, help="records per polled batch")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--source", choices=SOURCES, default="generated", help="where the MCPs come from")
    parser.add_argument("--parts", action="store_true", help="also print where the CPU goes (without --callgrind)")
    parser.add_argument("--keep", type=Path, help="keep the data and profiles in this (new) directory")
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)  # the child under callgrind
    parser.add_argument("--dry", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.index:
        index(args.index, args.batch, args.dry)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.keep or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=args.keep is None)
        write(data_dir, args.datasets, args.source)
        if args.callgrind:
            base = callgrind(data_dir, args.batch, dry=True)
            total = callgrind(data_dir, args.batch, dry=False)
            mcls, _ = index(data_dir, args.batch, dry=False)  # (counted again, natively)
            print(f"{mcls} MCLs of {args.datasets} {args.source} datasets, batches of {args.batch}: "
                  f"{(total - base) / mcls:,.0f} instructions per MCL ({total:,} - {base:,} to start and warm up)")
        else:
            spent: Counter[str] | None = Counter() if args.parts else None
            mcls, cpu = index(data_dir, args.batch, dry=False, spent=spent)
            print(f"{mcls} MCLs of {args.datasets} {args.source} datasets, batches of {args.batch}: "
                  f"{cpu / mcls * 1e6:,.0f} us CPU per MCL")
            if spent is not None:
                for label in (WORKERS_SHARE, WRITERS_SHARE):
                    print(f"  {label:62} {spent[label] / mcls * 1e6:6,.0f} us")
                for _, _, label in PARTS:  # inside the writer's share
                    print(f"    {label:60} {spent[label] / mcls * 1e6:6,.0f} us")


if __name__ == "__main__":
    main()
