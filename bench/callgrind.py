"""Instruction counts of a bench's child run under valgrind's callgrind (hash seeds fixed, so two
runs of the same code count the same), for the benches that print instructions per item."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def instructions(module: str, args: list[str], out: Path) -> int:
    """The total instructions of `python -m module *args` under callgrind, its profile in `out`."""
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", module, *args]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    assert totals is not None, f"no totals in {out}"
    return int(totals.group(1))
