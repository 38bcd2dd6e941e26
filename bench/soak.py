"""Memory over a soak at full rate: is it flat once warm?

    .venv/bin/python -m bench.soak [--seconds 600] [--clients 4] [--warmup 300] [--max-slope 2]

`lodestar serve --workers 2` (embedded stores) is fed new datasets by `--clients` threads as fast
as it takes them (429s waited out as Retry-After says). Every 10 s the soak samples every
process of the server: resident memory from /proc, split into anonymous (heaps) and file-backed
(code, mapped database pages), by role (parent, GMS workers w0 and w1, background = MCP
consumer and MCL processor, decode = the processor's decoding workers); and from /metrics the
bytes SQLite holds (page caches), the blocks of the Python heap, 429s answered and the MCL lag.
It prints a row every 30 s, then the slope per minute of each figure after `--warmup` seconds
(least squares) and the verdict: flat when anonymous memory grows less than `--max-slope` MiB a
minute. The database files grow all along; their pages are in the OS page cache, not in RSS
(but for what is mapped and read: the file column).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench.datasets import dataset_mcps
from ingest.rest import RestClient
from tests.support.fault_injection import Server
from tests.support.processes import TOKEN

SAMPLE_EVERY = 10.0  # seconds
PRINT_EVERY = 3  # samples
ROLES = ("parent", "w0", "w1", "background", "decode")
MIB = 2**20
MAX_SLOPE = 2.0  # MiB a minute of anonymous memory after the warm-up that still counts as flat


@dataclass
class Sample:
    seconds: float
    accepted: int
    refused: int  # 429s answered so far
    lag: int  # MCL records not yet indexed
    resident: dict[str, int]  # total, anonymous, file: bytes of all processes
    by_role: dict[str, int]  # resident bytes per role
    sqlite_heap: int  # bytes SQLite holds, every process
    python_blocks: int  # blocks of the Python heaps, every process
    database: int  # bytes of the database files (with their write-ahead logs)


@dataclass
class SoakReport:
    seconds: float
    clients: int
    warmup: float
    samples: list[Sample] = field(default_factory=list)

    def after_warmup(self) -> list[Sample]:
        return [s for s in self.samples if s.seconds >= self.warmup]

    def slope(self, figure: str) -> float:
        """Growth per minute of `figure` after the warm-up (least squares)."""
        window = self.after_warmup()
        xs = [s.seconds / 60 for s in window]
        ys = [float(_figure(s, figure)) for s in window]
        return _slope(xs, ys)

    def flat(self, max_slope_mib: float = MAX_SLOPE) -> bool:
        return self.slope("anonymous") / MIB < max_slope_mib


def _figure(sample: Sample, figure: str) -> int:
    if figure in sample.resident:
        return sample.resident[figure]
    return int(getattr(sample, figure))


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def soak(seconds: float, clients: int = 4, warmup: float = 300,
         out: Callable[[Sample], None] | None = None) -> SoakReport:
    """Run the soak; `out(sample)` is called after each sample."""
    report = SoakReport(seconds, clients, warmup)
    with tempfile.TemporaryDirectory(prefix="lodestar-soak-") as root:
        data = Path(root) / "data"
        server = Server(data, Path(root) / "serve.out")
        server.start()
        assert server.proc is not None
        stop = threading.Event()
        accepted = [0]
        lock = threading.Lock()

        def feed(client_no: int) -> None:
            client = RestClient(server.url, TOKEN, timeout=120)
            rng = random.Random(client_no)
            batch = 0
            while not stop.is_set():
                first = client_no * 10_000_000 + batch * 64  # new datasets every batch
                mcps = [m for i in range(first, first + 64) for m in dataset_mcps(i, rng)]
                results = client.propose(mcps)
                with lock:
                    accepted[0] += sum(r["status"] in ("applied", "noop") for r in results)
                batch += 1

        feeders = [threading.Thread(target=feed, args=(n,), daemon=True) for n in range(clients)]
        started = time.monotonic()
        for feeder in feeders:
            feeder.start()
        try:
            while time.monotonic() - started < seconds:
                time.sleep(SAMPLE_EVERY)
                sample = _sample(server, data, time.monotonic() - started, accepted[0])
                report.samples.append(sample)
                if out is not None:
                    out(sample)
            stop.set()
            for feeder in feeders:
                feeder.join(120)
            server.stop()
        finally:
            server.close()
    return report


def _sample(server: Server, data: Path, seconds: float, accepted: int) -> Sample:
    assert server.proc is not None
    metrics = _metrics(server.url)
    roles = {str(labels["pid"]): labels["process"] for labels, _ in metrics.get("lodestar_python_heap_blocks", [])}
    resident = {"total": 0, "anonymous": 0, "file": 0}
    by_role = dict.fromkeys(ROLES, 0)
    processes = _group(server.proc.pid)
    background = next((pid for pid, role in roles.items() if role == "background"), None)
    for pid, (parent, status) in processes.items():
        if pid == str(server.proc.pid):
            role = "parent"
        elif parent == background:
            role = "decode"
        else:
            role = roles.get(pid, "parent")  # a worker that has not sampled itself yet
        by_role[role] = by_role.get(role, 0) + status["VmRSS"]
        resident["total"] += status["VmRSS"]
        resident["anonymous"] += status["RssAnon"]
        resident["file"] += status["RssFile"]
    responses = metrics.get("lodestar_http_responses_total", [])
    lags = metrics.get("lodestar_consumer_lag", [])
    return Sample(
        seconds=seconds, accepted=accepted,
        refused=int(sum(value for labels, value in responses if labels["status"] == "429")),
        lag=int(sum(value for labels, value in lags if labels["group"] == "mcl-processor")),
        resident=resident, by_role=by_role,
        sqlite_heap=int(sum(v for _, v in metrics.get("lodestar_sqlite_heap_bytes", []))),
        python_blocks=int(sum(v for _, v in metrics.get("lodestar_python_heap_blocks", []))),
        database=sum(path.stat().st_size for path in data.glob("*.db*")),
    )


def _metrics(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as response:
        text = response.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def _group(leader: int) -> dict[str, tuple[str, dict[str, int]]]:
    """pid -> (parent pid, resident kB converted to bytes: VmRSS, RssAnon, RssFile) of every
    process in the process group of `leader`."""
    found: dict[str, tuple[str, dict[str, int]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != leader:  # pgrp
                continue
            status = {name: int(value.split()[0]) * 1024 for name, _, value in
                      (line.partition(":") for line in (entry / "status").read_text().splitlines())
                      if name in ("VmRSS", "RssAnon", "RssFile")}
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        if len(status) == 3:
            found[entry.name] = (fields[1], status)
    return found


HEADER = (f"{'t':>6} {'MCPs':>10} {'429s':>6} {'MCL lag':>8} | {'RSS':>6} {'anon':>6} {'file':>5} | "
          f"{'SQLite':>6} {'Python':>8} | " + " ".join(f"{role:>10}" for role in ROLES) + f" | {'db files':>8}")
UNITS = (f"{'s':>6} {'':>10} {'':>6} {'records':>8} | {'MiB':>6} {'MiB':>6} {'MiB':>5} | "
         f"{'MiB':>6} {'kblocks':>8} | " + " ".join(f"{'MiB':>10}" for _ in ROLES) + f" | {'MiB':>8}")


def row(sample: Sample) -> str:
    return (f"{sample.seconds:6.0f} {sample.accepted:10,} {sample.refused:6,} {sample.lag:8,} | "
            f"{sample.resident['total'] / MIB:6,.0f} {sample.resident['anonymous'] / MIB:6,.0f} "
            f"{sample.resident['file'] / MIB:5,.0f} | {sample.sqlite_heap / MIB:6,.0f} "
            f"{sample.python_blocks / 1000:8,.0f} | "
            + " ".join(f"{sample.by_role.get(role, 0) / MIB:10,.0f}" for role in ROLES)
            + f" | {sample.database / MIB:8,.0f}")


def verdict(report: SoakReport, max_slope: float) -> list[str]:
    window = report.after_warmup()
    if len(window) < 2:
        return [f"too short for a verdict: no two samples after the {report.warmup:.0f} s warm-up"]
    first, last = window[0], window[-1]
    lines = [f"after the {report.warmup:.0f} s warm-up ({len(window)} samples, "
             f"{first.seconds:.0f}-{last.seconds:.0f} s), growth per minute:"]
    for figure, unit, scale in (("total", "MiB", MIB), ("anonymous", "MiB", MIB), ("file", "MiB", MIB),
                                ("sqlite_heap", "MiB", MIB), ("python_blocks", "kblocks", 1000),
                                ("database", "MiB", MIB)):
        lines.append(f"  {figure:<14} {report.slope(figure) / scale:+9.2f} {unit}/min   "
                     f"({_figure(first, figure) / scale:,.0f} -> {_figure(last, figure) / scale:,.0f} {unit})")
    flat = report.flat(max_slope)
    lines.append(f"verdict: {'FLAT' if flat else 'GROWING'} (anonymous memory {report.slope('anonymous') / MIB:+.2f}"
                 f" MiB/min, threshold {max_slope:g} MiB/min)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=300, help="seconds left out of the slopes")
    parser.add_argument("--max-slope", type=float, default=MAX_SLOPE, help="MiB/min of anonymous memory called flat")
    args = parser.parse_args()
    print(f"soak: lodestar serve --workers 2, {args.clients} clients at full rate, {args.seconds:.0f} s")
    print(HEADER)
    print(UNITS)
    count = [0]

    def show(sample: Sample) -> None:
        count[0] += 1
        if count[0] % PRINT_EVERY == 0:
            print(row(sample), flush=True)

    report = soak(args.seconds, args.clients, args.warmup, show)
    last = report.samples[-1]
    if count[0] % PRINT_EVERY:
        print(row(last))
    print(f"{last.accepted:,} MCPs accepted ({last.accepted / last.seconds:,.0f} MCP/s), {last.refused:,} answered 429")
    for line in verdict(report, args.max_slope):
        print(line)


if __name__ == "__main__":
    main()
