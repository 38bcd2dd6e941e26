"""Ingest throughput: Lodestar's POST /v1/proposals against `datahub lite import`, same file, one run.

    .venv/bin/python -m bench.ingest_vs_datahub_lite [--mcps 100000] [--batch 1000] [--workers 2] [--lite-mcps N]

Starts `lodestar serve --workers N` on a fresh data directory, sends the MCPs in batches over HTTP
(over --connections client connections, so GMS is never idle between batches), then imports the
same file (or its first --lite-mcps MCPs) into a fresh DataHub Lite (SQLite engine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.datasets import generate
from ingest.rest import RestClient
from tests.support.processes import TOKEN, ServeProcess


def lodestar_rate(mcps: list[dict], batch: int, connections: int, workers: int,
                  workdir: Path) -> tuple[float, float]:
    bodies = [json.dumps({"proposals": mcps[i:i + batch]}).encode() for i in range(0, len(mcps), batch)]
    with ServeProcess(workdir / "lodestar", None, "--workers", str(workers)) as serve:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

        def send_share(worker: int) -> None:
            """One connection sending every `connections`-th batch, one request in flight."""
            conn = serve.client()._connection()
            for body in bodies[worker::connections]:
                conn.request("POST", "/v1/proposals", body, headers)
                response = conn.getresponse()
                answer = json.loads(response.read())
                assert response.status == 200 and all(r["status"] == "applied" for r in answer["results"]), answer
            conn.close()

        start = time.perf_counter()
        with ThreadPoolExecutor(connections) as pool:
            list(pool.map(send_share, range(connections)))
        elapsed = time.perf_counter() - start
        applied = RestClient(serve.url, TOKEN).entity(mcps[-1]["entityUrn"])
        assert "upstreamLineage" in applied["aspects"]
    return len(mcps) / elapsed, elapsed


def lite_rate(mcps: list[dict], workdir: Path) -> tuple[float, float]:
    home = workdir / "lite-home"
    home.mkdir()
    (home / ".datahubenv").write_text("gms:\n  server: http://localhost:8080\n")
    env = {**os.environ, "HOME": str(home)}
    datahub = str(Path(sys.executable).parent / "datahub")
    subprocess.run([datahub, "lite", "init", "--type", "sqlite"], env=env, check=True, capture_output=True)
    file = workdir / "lite-mcps.json"
    file.write_text(json.dumps(mcps))
    start = time.perf_counter()
    subprocess.run([datahub, "lite", "import", "--file", str(file)], env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    return len(mcps) / elapsed, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcps", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="lodestar serve --workers")
    parser.add_argument("--lite-mcps", type=int, default=None, help="import only the first N MCPs into DataHub Lite")
    args = parser.parse_args()
    mcps = generate(args.mcps)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        rate, elapsed = lodestar_rate(mcps, args.batch, args.connections, args.workers, workdir)
        print(f"lodestar   POST /v1/proposals  {len(mcps):>7} MCPs  {elapsed:7.1f} s  {rate:9,.0f} MCP/s"
              f"  ({args.workers} workers, {args.connections} connections, batches of {args.batch})")
        lite = mcps[: args.lite_mcps] if args.lite_mcps else mcps
        lite_mcp_s, lite_elapsed = lite_rate(lite, workdir)
        print(f"datahub    lite import (sqlite) {len(lite):>7} MCPs  {lite_elapsed:7.1f} s  {lite_mcp_s:9,.0f} MCP/s")
        print(f"ratio      lodestar / datahub lite = {rate / lite_mcp_s:.1f}x   (targets: >= 30x, >= 10,000 MCP/s)")


if __name__ == "__main__":
    main()
