"""The whole test suite on a busy machine: a CPU-burning process per core beside it, N runs.

    .venv/bin/python -m bench.busy_suite [--runs 3] [--burners N] [-- pytest args]

A test that passes only on a quiet machine is a false alarm waiting to happen; this runs
`bin/test` (as CI does: its pytest-xdist workers, the servers from deploy/) while `--burners`
processes (default: one per core) spin at full speed, and prints each run's outcome and duration.
Exit status: 0 when every run passed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bench.burners import cpu_burners

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1)
    parser.add_argument("pytest_args", nargs="*", default=["-q", "-p", "no:cacheprovider"])
    args = parser.parse_args()
    outcomes = []
    with cpu_burners(args.burners):
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            done = subprocess.run([os.path.join(ROOT, "bin", "test"), *args.pytest_args], cwd=ROOT)
            seconds = time.monotonic() - started
            outcomes.append(done.returncode)
            print(f"run {run}/{args.runs}: pytest exit {done.returncode} in {seconds:.0f} s"
                  f" beside {args.burners} CPU burner(s)", flush=True)
    print(f"{outcomes.count(0)} of {args.runs} runs passed")
    return 0 if all(code == 0 for code in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
