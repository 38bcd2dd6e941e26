"""A restore's CPU under two checkouts of Lodestar, measured so that the machine's drift cancels out.

    .venv/bin/python -m bench.restore_turns --old ../other-checkout [--datasets 20000] [--rounds 3]

Writes the MCPs of --datasets datasets (bench.datasets: properties, a 20-field schema, tags,
two upstreams) through an embedded GMS into a scratch directory, untimed. Then one process per
checkout (this one and --old, each importing its own code) opens a copy of that aspect store
with fresh read models, and the two take turns, so that a slower minute of a shared machine
slows both alike:

- preparing: each prepares the same page of the store as a restore's worker does (its input
  and its results pickled there and back, as between the pool and the writer), page after page;
- writing: each writes the next few prepared pages (`PAGES_PER_TRANSACTION`) in one
  transaction into its read models, as a restore's writer does (unpickling the results).

Prints the CPU seconds each side took for each part, and new/old ratios. Both checkouts must
have `mcl_processor.restore` (`scan_pages`, `_write`, `PAGES_PER_TRANSACTION`) and
`mcl_processor.workers.prepare_in_worker`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.mcl_processor_cost import write

# Run by each side's process, with its checkout first on the path: reads "prepare N" and
# "write N" lines and answers each with the CPU seconds it took.
CHILD = """
import pickle, sys, time
from pathlib import Path
from gms.service import Gms
from mcl_processor import restore, workers
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from mcl_processor.readmodels import collector_paused

data = Path(sys.argv[1])
gms = Gms.embedded(data / "gms")
models = SqliteReadModels.in_data_dir(data / "models", gms.registry)
processor = MclProcessor(gms.registry, gms.mcl_reader, models)
workers._preparer = models.preparer()
rows = list(restore.scan_pages(gms.store))
sent = [pickle.dumps([(row.urn, row.aspect, row.value_json) for row in page]) for page in rows]
prepared = {}  # page -> its results, pickled
per = restore.PAGES_PER_TRANSACTION
print(len(rows), per, flush=True)
with collector_paused():
    for line in sys.stdin:
        part, number = line.split()
        number = int(number)
        started = time.process_time()
        if part == "prepare":  # the worker's part
            prepared[number] = pickle.dumps(workers.prepare_in_worker(pickle.loads(sent[number])))
        else:  # the writer's
            with models.transaction():
                for page in range(number * per, min(len(rows), (number + 1) * per)):
                    restore._write(models, processor.decoder, gms.store, rows[page], pickle.loads(prepared[page]))
        print(time.process_time() - started, flush=True)
models.close()
gms.close()
"""


class Side:
    """One checkout's process, on its own copy of the aspect store."""

    def __init__(self, name: str, checkout: Path, store: Path, scratch: Path):
        self.name = name
        data = scratch / name
        shutil.copytree(store, data / "gms")
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.process = subprocess.Popen([sys.executable, "-c", CHILD, str(data)], cwd=checkout, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pages, per_transaction = self.process.stdout.readline().split()  # type: ignore[union-attr]
        self.pages, self.per_transaction = int(pages), int(per_transaction)

    def turn(self, command: str) -> float:
        """Run one command; the CPU seconds it took."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def taking_turns(sides: tuple[Side, Side], commands: list[str]) -> dict[str, float]:
    """Each command run by both sides, the one going first alternating: CPU seconds per side."""
    spent = {side.name: 0.0 for side in sides}
    for number, command in enumerate(commands):
        for side in sides if number % 2 else sides[::-1]:
            spent[side.name] += side.turn(command)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the other checkout (its top directory)")
    parser.add_argument("--datasets", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3, help="how many times both prepare every page")
    args = parser.parse_args()
    if not (args.old / "mcl_processor" / "restore.py").is_file():
        parser.error(f"--old {args.old}: not a checkout of Lodestar (no mcl_processor/restore.py)")
    checkout = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        write(scratch / "store", args.datasets)
        sides = (Side("old", args.old.resolve(), scratch / "store" / "gms", scratch),
                 Side("new", checkout, scratch / "store" / "gms", scratch))
        try:
            pages = sides[0].pages
            prepare = taking_turns(sides, [f"prepare {page}" for _ in range(args.rounds) for page in range(pages)])
            groups = -(-pages // sides[0].per_transaction)
            writing = taking_turns(sides, [f"write {group}" for group in range(groups)])
        finally:
            for side in sides:
                side.close()
    print(f"{pages} pages of {args.datasets} datasets; old {args.old}, new {checkout}")
    for label, spent in ((f"preparing, {args.rounds} rounds", prepare), ("writing", writing)):
        old, new = spent["old"], spent["new"]
        print(f"{label:<22} old {old:7.2f} s   new {new:7.2f} s   new/old {new / old:.3f}")


if __name__ == "__main__":
    main()
