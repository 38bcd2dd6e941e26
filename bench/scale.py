"""A million entities on one machine: how the embedded stores hold up as the corpus grows.

    .venv/bin/python -m bench.scale [--datasets 1000000] [--checkpoints 100000,250000,500000]
                                    [--workers 2] [--keep DIR]

Loads datasets (4 MCPs each, the realistic generator of bench/datasets.py) into one
`lodestar serve --workers N`, in parts ending at each checkpoint (by default a tenth, a quarter,
half and all of `--datasets`). At each checkpoint it prints: the ingest rate of the part just
loaded (from its first request until everything is searchable) and its ratio to the first
part's (target >= 80%); the data directory's size on disk per dataset; p50/p99 of the read-model
search shapes and of 5-hop upstream lineage over HTTP (target p99 < 50 ms), each started with the
read models dropped from the OS page cache, as a load larger than memory leaves them; the resident memory
of each process (serve's parent, its workers, the background process that indexes); and the
rate of `lodestar restore-indices` run as its own process on a consistent copy of the aspect
store (at the last checkpoint, once serve has stopped, on the data directory itself; target >=
10,000 aspects/s, its start-up included), with its peak resident memory (its workers included).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import psutil

from bench.datasets import dataset_urn, stream
from bench.read_models import QUERIES, SHAPES, ingest, percentiles, request_bodies, timed_gets
from tests.support.processes import LODESTAR, ServeProcess

P99_TARGET = 0.050
RATE_FLOOR = 0.8  # of the first part's ingest rate
RESTORE_TARGET = 10_000


def checkpoints_of(datasets: int, given: str | None) -> list[int]:
    """The checkpoints in increasing order, ending with `datasets`."""
    marks = [int(mark) for mark in given.split(",")] if given else [datasets // 10, datasets // 4, datasets // 2]
    marks = sorted({mark for mark in marks if 0 < mark < datasets} | {datasets})
    return marks


def disk_bytes(directory: Path) -> int:
    """Bytes the files under a directory take on disk (allocated blocks)."""
    return sum(path.stat().st_blocks * 512 for path in directory.rglob("*") if path.is_file())


def resident(serve: ServeProcess) -> dict[str, int]:
    """Resident bytes of serve's processes: its parent and its children (in the order forked:
    the background process first, then the workers w0, w1, ...)."""
    assert serve.proc is not None
    parent = psutil.Process(serve.proc.pid)
    children = sorted(parent.children(), key=lambda child: child.pid)
    names = ["parent", "background", *(f"w{i}" for i in range(len(children) - 1))]
    return {name: process.memory_info().rss for name, process in zip(names, [parent, *children], strict=False)}


def drop_from_page_cache(data: Path, database: str = "readmodels.db") -> None:
    """Have the OS page cache drop a database's pages (its write-ahead log's too), so that the
    next queries read from the disk what they need, as after a load larger than memory."""
    for path in data.glob(f"{database}*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # only pages already on the disk can be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def restore_rate(data: Path, work: Path, in_place: bool) -> tuple[int, float, int]:
    """Restore the read models with `lodestar restore-indices` in its own process, from a
    consistent copy of the aspect store, or `in_place` (serve stopped: the data directory's own
    read models are deleted first, so a million datasets need no second copy on disk): (aspects
    restored, seconds, peak resident bytes of that process and its workers together)."""
    target = data if in_place else work / "restore"
    if in_place:
        for path in data.glob("readmodels.db*"):
            path.unlink()
    else:
        if target.exists():
            for path in target.iterdir():
                path.unlink()
        else:
            target.mkdir()
        source, copy = sqlite3.connect(data / "lodestar.db"), sqlite3.connect(target / "lodestar.db")
        with copy:
            source.backup(copy)  # a snapshot, with what the write-ahead log holds
        source.close()
        copy.close()
    start = time.perf_counter()
    proc = subprocess.Popen([*LODESTAR, "restore-indices", "--data-dir", str(target)], stdout=subprocess.PIPE,
                            text=True)
    watched, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:  # the process and its decode workers together
            peak = max(peak, sum(p.memory_info().rss for p in [watched, *watched.children(recursive=True)]))
        except psutil.NoSuchProcess:
            continue  # a worker exited as it was read: sample again
        time.sleep(0.2)
    elapsed = time.perf_counter() - start
    out = proc.stdout.read() if proc.stdout else ""
    found = re.search(r"restored (\d+) aspects", out)
    assert proc.returncode == 0 and found, f"restore-indices failed ({proc.returncode}): {out}"
    return int(found.group(1)), elapsed, peak


def report(serve: ServeProcess, data: Path, loaded: int, rate: float, first_rate: float, rng: random.Random) -> None:
    """Print the figures of one checkpoint taken while serve runs."""
    mib = 1024 * 1024
    print(f"\n== {loaded:,} datasets ({time.strftime('%H:%M:%S')})", flush=True)
    ratio = rate / first_rate
    print(f"ingest + indexing of this part   {rate:9,.0f} MCP/s   {ratio:6.0%} of the first part's"
          f"   (target >= {RATE_FLOOR:.0%})  {'ok' if ratio >= RATE_FLOOR else 'MISSED'}")
    size = disk_bytes(data)
    print(f"on disk                          {size / mib:9,.0f} MiB   {size / loaded / 1024:6.1f} KiB per dataset"
          f"  (lodestar.db {disk_bytes_of(data, 'lodestar.db') / mib:,.0f} MiB,"
          f" readmodels.db {disk_bytes_of(data, 'readmodels.db') / mib:,.0f} MiB)")
    for shape, make in SHAPES.items():
        paths = [f"/v1/search?{urlencode({'query': make(rng), 'count': 10})}" for _ in range(QUERIES)]
        drop_from_page_cache(data)
        samples = timed_gets(serve, paths)
        print(f"search {shape:<25} {percentiles(samples)}   {verdict(p99(samples))}", flush=True)
    walks = [{"urn": dataset_urn(rng.randrange(loaded)), "maxHops": 5, "direction": "upstream"}
             for _ in range(QUERIES)]
    drop_from_page_cache(data)
    samples = timed_gets(serve, [f"/v1/lineage?{urlencode(walk)}" for walk in walks])
    print(f"lineage 5 hops upstream          {percentiles(samples)}   {verdict(p99(samples))}")
    print("resident memory (serve)          " + "   ".join(f"{name} {rss / mib:,.0f} MiB"
                                                          for name, rss in resident(serve).items()))


def report_restore(data: Path, work: Path, in_place: bool) -> None:
    """Print the rate and peak memory of `restore-indices` (see `restore_rate`)."""
    mib = 1024 * 1024
    restored, seconds, peak = restore_rate(data, work, in_place)
    rate = restored / seconds
    print(f"restore-indices  {restored:>10,} aspects  {seconds:7.1f} s  {rate:9,.0f} /s"
          f"   (target >= {RESTORE_TARGET:,})  {'ok' if rate >= RESTORE_TARGET else 'MISSED'}"
          f"   peak resident {peak / mib:,.0f} MiB", flush=True)


def disk_bytes_of(data: Path, database: str) -> int:
    """A database's bytes on disk, its write-ahead log and shared memory included."""
    return sum(path.stat().st_blocks * 512 for path in data.glob(f"{database}*"))


def verdict(seconds: float) -> str:
    return f"(target p99 < {P99_TARGET * 1000:.0f} ms)  {'ok' if seconds < P99_TARGET else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1_000_000)
    parser.add_argument("--checkpoints", help="comma-separated dataset counts (default: 10%%, 25%%, 50%%)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the data in this (new) directory instead of a temporary one")
    args = parser.parse_args()
    marks = checkpoints_of(args.datasets, args.checkpoints)
    mcp_rng, query_rng = random.Random(7), random.Random(11)  # the generator's seed, as bench.read_models
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        data = work / "data"
        print(f"loading {args.datasets:,} datasets ({args.datasets * 4:,} MCPs), checkpoints at "
              + ", ".join(f"{mark:,}" for mark in marks), flush=True)
        with ServeProcess(data, None, "--workers", str(args.workers)) as serve:
            loaded, first_rate = 0, 0.0
            for mark in marks:
                _, seconds = ingest(serve, request_bodies(stream(loaded, mark, mcp_rng)))
                rate = (mark - loaded) * 4 / seconds
                first_rate = first_rate or rate
                loaded = mark
                report(serve, data, loaded, rate, first_rate, query_rng)
                if mark == marks[-1]:
                    serve.stop()
                report_restore(data, work, in_place=mark == marks[-1])


if __name__ == "__main__":
    main()
