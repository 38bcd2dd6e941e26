"""A process gives the memory malloc holds free back to the system (lodestar/memory.py)."""

from __future__ import annotations

import subprocess
import sys

FREED_IN_THE_MIDDLE = """
from lodestar import memory

blocks = [bytes(64 * 1024) for _ in range(3200)]  # 200 MiB in malloc's heap (below its mmap threshold)
pins = []
for i in range(0, len(blocks), 16):
    pins.append(bytes(2048))  # small blocks between them keep the heap from shrinking at its top
blocks.clear()
before = memory.resident()["anonymous"]
memory.malloc_trimmer()()
after = memory.resident()["anonymous"]
print(before >> 20, after >> 20)
"""


def test_memory_freed_in_the_middle_of_the_heap_goes_back_to_the_system():
    before, after = map(int, subprocess.run([sys.executable, "-c", FREED_IN_THE_MIDDLE], check=True,
                                            capture_output=True, text=True).stdout.split())
    assert before - after > 100, f"anonymous memory {before} MiB before the trim, {after} MiB after"
