"""Ingest throughput against `datahub lite import`, same file, one run: the write path alone
(`lodestar gms`, no indexing) and with indexing (`lodestar serve`: accepted and indexed),
beside the raw SQLite ceiling of the same MCPs.

    .venv/bin/python -m bench.ingest_vs_datahub_lite [--mcps 100000] [--batch 1000] [--workers 2] [--lite-mcps N]
                                                     [--source generated|datahub-file]

Each Lodestar side starts on a fresh data directory and is sent the MCPs in batches over HTTP
(over --connections client connections, so it is never idle between batches); `serve` is also
timed until everything is searchable. The CPU time of its processes (user + system, from /proc)
is printed per MCP: on a loaded machine it moves less than the rates. Then the same file (or its
first --lite-mcps MCPs) is imported into a fresh DataHub Lite (SQLite engine), and written by a
raw SQLite client (`raw_sqlite_rate`: no parsing, no validation, no HTTP; a version row and a
log row per MCP, a transaction per --batch MCPs, the pages and journal settings of Lodestar's
store): the ceiling the write path is compared with. The MCPs are the
realistic generator's (bench/datasets.py), or with `--source datahub-file` the same datasets as
DataHub's SDK and file sink write them, fine-grained lineage included (bench/datahub_file.py).
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
from dataclasses import dataclass
from pathlib import Path

from bench.datahub_file import datahub_file_mcps
from bench.datasets import generate
from ingest.backends.sqlite import PAGE_SIZE, connect
from ingest.rest import RestClient
from tests.support.processes import TOKEN, ServeProcess


@dataclass(frozen=True)
class Run:
    accepted_s: float
    indexed_s: float | None  # None: nothing indexes (lodestar gms)
    cpu_s: float  # user + system of the server's processes while it ran


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children still running."""
    tick = os.sysconf("SC_CLK_TCK")
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0.0
    for process in [pid, *map(int, children)]:
        try:
            fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def post_all(server: ServeProcess, bodies: list[bytes], connections: int) -> None:
    """Every body POSTed to /v1/proposals, one request in flight per connection; a 429 (the
    indexing lags) is retried after the Retry-After it names."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def send_share(worker: int) -> None:
        conn = server.client()._connection()
        for body in bodies[worker::connections]:
            while True:
                conn.request("POST", "/v1/proposals", body, headers)
                response = conn.getresponse()
                answer = json.loads(response.read())
                if response.status != 429:
                    break
                time.sleep(int(response.headers["Retry-After"]))
            assert response.status == 200 and all(r["status"] == "applied" for r in answer["results"]), answer
        conn.close()

    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(send_share, range(connections)))


def lodestar_run(command: str, mcps: list[dict], batch: int, connections: int, workers: int,
                 workdir: Path) -> Run:
    bodies = [json.dumps({"proposals": mcps[i:i + batch]}).encode() for i in range(0, len(mcps), batch)]
    with ServeProcess(workdir / command, None, "--workers", str(workers), command=command) as server:
        assert server.proc is not None
        cpu_before = cpu_seconds(server.proc.pid)
        start = time.perf_counter()
        post_all(server, bodies, connections)
        accepted = time.perf_counter() - start
        indexed = None
        if command == "serve":
            while not server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]:
                pass  # each call waits up to 30 s for the indexing to catch up
            indexed = time.perf_counter() - start
        cpu = cpu_seconds(server.proc.pid) - cpu_before
        applied = RestClient(server.url, TOKEN).entity(mcps[-1]["entityUrn"])
        assert "upstreamLineage" in applied["aspects"]
    return Run(accepted, indexed, cpu)


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


RAW_SCHEMA = (
    "CREATE TABLE aspects (urn TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL, value TEXT,"
    " system_metadata TEXT NOT NULL)",
    "CREATE UNIQUE INDEX aspects_version ON aspects (urn, aspect, version)",
    "CREATE TABLE log (part INTEGER NOT NULL, offset INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,"
    " PRIMARY KEY (part, offset)) WITHOUT ROWID",
)


def raw_sqlite_rate(mcps: list[dict], batch: int, workdir: Path) -> float:
    """MCP/s of SQLite alone writing what the write path must at least write for these MCPs: a
    version row (the aspect's JSON) and a log row (the MCP's bytes, about an MCL's size), one
    transaction per `batch`, on a connection set up as the aspect store's. The rows are made
    before the clock starts: this is the storage ceiling, not a client."""
    conn = connect(workdir / "raw.db", PAGE_SIZE)
    for statement in RAW_SCHEMA:
        conn.execute(statement)
    stamp = json.dumps({"runId": "no-run-id-provided", "lastObserved": 0})
    rows = [((mcp["entityUrn"], mcp["aspectName"], 1, json.dumps(mcp["aspect"]["json"]), stamp),
             (0, offset, mcp["entityUrn"], json.dumps(mcp).encode())) for offset, mcp in enumerate(mcps)]
    start = time.perf_counter()
    for i in range(0, len(rows), batch):
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO aspects VALUES (?, ?, ?, ?, ?)", [version for version, _ in rows[i:i + batch]])
        conn.executemany("INSERT INTO log VALUES (?, ?, ?, ?)", [entry for _, entry in rows[i:i + batch]])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return len(rows) / elapsed


SOURCES = {"generated": generate, "datahub-file": datahub_file_mcps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcps", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="lodestar gms / serve --workers")
    parser.add_argument("--lite-mcps", type=int, default=None, help="import only the first N MCPs into DataHub Lite")
    parser.add_argument("--source", choices=SOURCES, default="generated", help="where the MCPs come from")
    args = parser.parse_args()
    mcps = SOURCES[args.source](args.mcps)
    count = len(mcps)
    size = sum(len(json.dumps(mcp)) for mcp in mcps) / count
    setup = (f"({args.workers} workers, {args.connections} connections, batches of {args.batch};"
             f" {args.source} MCPs of {size:,.0f} B on average)")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        runs = {command: lodestar_run(command, mcps, args.batch, args.connections, args.workers, workdir)
                for command in ("gms", "serve")}
        lite = mcps[: args.lite_mcps] if args.lite_mcps else mcps
        lite_mcp_s, lite_elapsed = lite_rate(lite, workdir)
        ceiling = raw_sqlite_rate(mcps, args.batch, workdir)
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}   {setup}")
    gms, serve = runs["gms"], runs["serve"]
    assert serve.indexed_s is not None
    gms_rate, accepted, indexed = count / gms.accepted_s, count / serve.accepted_s, count / serve.indexed_s
    print(f"lodestar gms    accepted  {count:>7} MCPs {gms.accepted_s:7.1f} s {gms_rate:9,.0f} MCP/s"
          f"   CPU {gms.cpu_s / count * 1e6:4.0f} us/MCP   {gms_rate / lite_mcp_s:5.1f}x lite"
          f"   {gms_rate / ceiling:4.0%} of raw sqlite   (targets >= 25,000 MCP/s, >= 35% of raw sqlite, >= 30x lite)")
    print(f"lodestar serve  accepted  {count:>7} MCPs {serve.accepted_s:7.1f} s {accepted:9,.0f} MCP/s"
          f"   CPU {serve.cpu_s / count * 1e6:4.0f} us/MCP   {accepted / lite_mcp_s:5.1f}x lite"
          "   (target >= 7,500 MCP/s)")
    print(f"lodestar serve  indexed   {count:>7} MCPs {serve.indexed_s:7.1f} s {indexed:9,.0f} MCP/s"
          f"                  {indexed / lite_mcp_s:5.1f}x lite   {indexed / accepted:4.0%} of accepted"
          "   (targets >= 10,000 MCP/s, >= 90% of accepted)")
    print(f"datahub lite    import    {len(lite):>7} MCPs {lite_elapsed:7.1f} s {lite_mcp_s:9,.0f} MCP/s   (sqlite)")
    print(f"raw sqlite      write     {count:>7} MCPs {count / ceiling:7.1f} s {ceiling:9,.0f} MCP/s"
          f"   (a version row and a log row per MCP, transactions of {args.batch})")


if __name__ == "__main__":
    main()
