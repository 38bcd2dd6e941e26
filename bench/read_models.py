"""Read models at scale: indexing rate, search and lineage latency, restore rate, in one run.

    .venv/bin/python -m bench.read_models [--datasets 100000] [--workers 2]

Ingests 4 MCPs per dataset (properties, 20-field schema, tags, two upstreams: ~2 lineage
edges per dataset) through `lodestar serve`, timing from the first request until everything
is searchable; then times 5 search shapes and 5-hop lineage over HTTP (p50/p99 of 200
queries each), then `restore-indices` from the aspect store on a copy of the data.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import orjson

from bench.datasets import WORDS, dataset_urn, generate
from tests.support.processes import TOKEN, ServeProcess

QUERIES = 200
SHAPES = {
    "free text (2 terms)": lambda rng: f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
    "prefix": lambda rng: f"{rng.choice(WORDS)[:4]}*",
    "property key:value": lambda rng: f"owner:team-{rng.randrange(13)}",
    "tag filter + text": lambda rng: f"tags:pii {rng.choice(WORDS)}",
    "schema field": lambda rng: f"schema:{rng.choice(WORDS)}_{rng.randrange(20)}",
}


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:6.1f} ms   p99 {p99 * 1000:6.1f} ms"


def request_bodies(mcps: Iterable[dict], batch: int = 1000) -> Iterator[bytes]:
    """`/v1/proposals` bodies of `batch` MCPs each."""
    chunk: list[dict] = []
    for mcp in mcps:
        chunk.append(mcp)
        if len(chunk) == batch:
            yield orjson.dumps({"proposals": chunk})
            chunk = []
    if chunk:
        yield orjson.dumps({"proposals": chunk})


def ingest(serve: ServeProcess, bodies: Iterable[bytes]) -> tuple[float, float]:
    """Post the bodies on two connections, each taking the next one as it is done (a generator
    of bodies is read as the posting goes). (seconds until every MCP was accepted, seconds
    until everything was searchable)"""
    pending = iter(bodies)
    taking = threading.Lock()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def next_body() -> bytes | None:
        with taking:
            return next(pending, None)

    def share(worker: int) -> None:
        conn = serve.client()._connection()
        while (body := next_body()) is not None:
            while True:
                conn.request("POST", "/v1/proposals", body, headers)
                response = conn.getresponse()
                response.read()
                if response.status != 429:  # the processor lags too far behind: wait as told
                    break
                time.sleep(int(response.headers["Retry-After"]))
            assert response.status == 200, response.status
        conn.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(share, range(2)))
    accepted = time.perf_counter() - start
    while not serve.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]:
        pass  # each call waits up to 30 s for the processor to catch up
    return accepted, time.perf_counter() - start


def timed_gets(serve: ServeProcess, paths: list[str]) -> list[float]:
    client = serve.client()
    samples = []
    for path in paths:
        start = time.perf_counter()
        status, _ = client.request("GET", path)
        samples.append(time.perf_counter() - start)
        assert status == 200, path
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    mcps = generate(args.datasets * 4)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with ServeProcess(data, None, "--workers", str(args.workers)) as serve:
            accepted, elapsed = ingest(serve, list(request_bodies(mcps)))
            print(f"end-to-end ingest + indexing  {len(mcps):>8} MCPs  {elapsed:7.1f} s"
                  f"  {len(mcps) / elapsed:9,.0f} MCP/s   (target >= 5,000; all accepted after {accepted:.1f} s)")
            for shape, make in SHAPES.items():
                paths = [f"/v1/search?{urlencode({'query': make(rng), 'count': 10})}" for _ in range(QUERIES)]
                print(f"search {shape:<24} {percentiles(timed_gets(serve, paths))}   (target p99 < 50 ms)")
            walks = [{"urn": dataset_urn(rng.randrange(args.datasets)), "maxHops": 5, "direction": "upstream"}
                     for _ in range(QUERIES)]
            paths = [f"/v1/lineage?{urlencode(walk)}" for walk in walks]
            print(f"lineage 5 hops upstream        {percentiles(timed_gets(serve, paths))}   (target p99 < 50 ms)")
        copy = Path(tmp) / "copy"
        copy.mkdir()
        shutil.copy(data / "lodestar.db", copy / "lodestar.db")
        from lodestar.cli.common import Local

        with Local(copy) as local:
            start = time.perf_counter()
            restored = local.processor.restore(local.gms.store)
            elapsed = time.perf_counter() - start
        print(f"restore-indices               {restored:>8} aspects  {elapsed:7.1f} s  {restored / elapsed:9,.0f} /s"
              "   (target >= 10,000)")


if __name__ == "__main__":
    main()
