"""Start-up: from launching `lodestar serve` or `lodestar gms` until it answers, and what loading
DataHub's model costs.

    .venv/bin/python -m bench.startup [--runs 5]

Each run launches the command on the embedded stores with a new data directory (a first start:
it creates the token and the databases) and again on the same directory (a restart), polls
`GET /health` every 5 ms and, at the first 200, takes the wall time since the launch and the CPU
time of the whole process tree (the process, its children, and children already reaped), then
stops it. `serve` and `gms` alternate, so both see the same load. The model's cost is measured
in a fresh interpreter per run: importing the registry module, reading DataHub's schemas from
the pinned package (`load_model`) and building the whole registry (`load_registry`, which
includes `load_model`). CPU seconds are the fair figure on a busy machine; the target is 2 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests

from tests.support.processes import LODESTAR, TOKEN
from tests.support.server import free_port

COMMANDS = ("serve", "gms")
TARGET = 2.0
POLL = 0.005


def tree_cpu(root: psutil.Process) -> float:
    """CPU seconds (user + system) of `root`, its live descendants and the children it reaped."""
    own = root.cpu_times()
    total = own.user + own.system + own.children_user + own.children_system
    for child in root.children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue  # ended meanwhile: counted in its parent's children_* once reaped
        total += times.user + times.system
    return total


def start_once(command: str, data: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) from launching `lodestar COMMAND` until /health answers 200."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([*LODESTAR, command, "--data-dir", str(data), "--port", str(port), "--admin-token", TOKEN,
                             "--access-log", "off"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        watched = psutil.Process(proc.pid)
        with requests.Session() as http:
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"lodestar {command} exited {proc.returncode} before answering")
                try:
                    if http.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                        return time.perf_counter() - started, tree_cpu(watched)
                except requests.ConnectionError:
                    pass
                time.sleep(POLL)
    finally:
        proc.terminate()
        proc.wait(30)


MODEL_PROBE = """
import json, time
from time import perf_counter as wall, process_time as cpu
w, c = wall(), cpu()
from schemas import datahub_model, registry
out = {"import": (wall() - w, cpu() - c)}
w, c = wall(), cpu()
model = datahub_model.load_model()
out["load_model"] = (wall() - w, cpu() - c)
w, c = wall(), cpu()
reg = registry.load_registry()
out["load_registry"] = (wall() - w, cpu() - c)
out["size"] = (len(model.entities), len(model.aspects), len(reg.entities), len(reg.aspects))
print(json.dumps(out))
"""


def model_cost() -> dict[str, list]:
    """The model probe's figures, in an interpreter of its own."""
    done = subprocess.run([sys.executable, "-c", MODEL_PROBE], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def line(label: str, samples: list[tuple[float, float]]) -> str:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    verdict = "met" if statistics.median(cpus) < TARGET else "NOT met"
    return (f"{label:<24} wall median {statistics.median(walls):5.2f} s (min {min(walls):5.2f})   "
            f"CPU median {statistics.median(cpus):5.2f} s (min {min(cpus):5.2f})   target {TARGET:.0f} s: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}, {psutil.cpu_count()} cores, "
          f"{args.runs} runs each, alternating", flush=True)
    samples: dict[str, list[tuple[float, float]]] = {}
    model: dict[str, list[tuple[float, float]]] = {}
    size = ()
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for command in COMMANDS:
                data = Path(tmp) / f"{command}-{run}"
                samples.setdefault(f"{command} (first start)", []).append(start_once(command, data))
                samples.setdefault(f"{command} (restart)", []).append(start_once(command, data))
            probe = model_cost()
            size = probe.pop("size")
            for part, figures in probe.items():
                model.setdefault(part, []).append(tuple(figures))
    for label, figures in samples.items():
        print(line(label, figures))
    print(f"DataHub's model: {size[0]} entities, {size[1]} aspects; the registry: {size[2]} entities, "
          f"{size[3]} aspects")
    for part, figures in model.items():
        wall, cpu = (statistics.median(f[i] for f in figures) for i in (0, 1))
        print(f"  {part:<14} wall median {wall:5.2f} s   CPU median {cpu:5.2f} s")


if __name__ == "__main__":
    main()
