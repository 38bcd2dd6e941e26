"""What a Lodestar process holds in memory, as Prometheus gauges on /metrics.

Each process of `lodestar serve` (the GMS workers and the background process alike) samples
itself every few seconds: its resident set split into anonymous memory (the heaps: Python's,
malloc's and SQLite's page caches) and file-backed pages (code and the mapped read-model
database, which the OS may drop at will), the bytes SQLite's allocator holds (page caches and
statements, bounded by `cache_size` per connection) and the blocks Python's allocator has
handed out (the Python heap). With `--workers` every process shows up, labelled by role and pid.

Before each sample, the process hands the memory malloc holds free back to the system
(glibc's `malloc_trim`): large request bodies and batches are freed in the middle of malloc's
heaps, which it would otherwise keep, so the resident memory would creep up with each peak.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from prometheus_client import Gauge

RESIDENT = Gauge("lodestar_process_resident_bytes", "Resident memory of a Lodestar process by kind: total,"
                 " anonymous (heaps, SQLite's page caches included), file (code, mapped database pages)",
                 ["process", "kind"], multiprocess_mode="all")
SQLITE_HEAP = Gauge("lodestar_sqlite_heap_bytes", "Bytes SQLite's allocator holds in a process (page caches,"
                    " prepared statements)", ["process"], multiprocess_mode="all")
PYTHON_BLOCKS = Gauge("lodestar_python_heap_blocks", "Memory blocks Python's allocator has handed out in a process",
                      ["process"], multiprocess_mode="all")
INTERVAL = 5.0  # seconds between samples
_STATUS_FIELDS = {"VmRSS": "total", "RssAnon": "anonymous", "RssFile": "file"}


def resident() -> dict[str, int]:
    """This process's resident bytes by kind (total, anonymous, file); empty where /proc is missing."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, int] = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name in _STATUS_FIELDS:
            found[_STATUS_FIELDS[name]] = int(value.split()[0]) * 1024  # kB
    return found


def _sqlite_memory_used() -> Callable[[], int] | None:
    """sqlite3_memory_used() of the SQLite library Python's sqlite3 module uses (linked to its
    extension module or built into it), or None if that library does not export it."""
    import _sqlite3

    try:
        function = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_int64, []
    return function


def malloc_trimmer() -> Callable[[], None] | None:
    """glibc's malloc_trim(0), or None where the C library has none."""
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_int, [ctypes.c_size_t]
    return lambda: function(0)


def sample(process: str, sqlite_used: Callable[[], int] | None) -> None:
    """Set this process's gauges once."""
    for kind, value in resident().items():
        RESIDENT.labels(process, kind).set(value)
    if sqlite_used is not None:
        SQLITE_HEAP.labels(process).set(sqlite_used())
    PYTHON_BLOCKS.labels(process).set(sys.getallocatedblocks())


def sample_until(process: str, stop: threading.Event, every: float = INTERVAL) -> None:
    """Trim and sample at once, then every `every` seconds until stop is set (a thread's loop)."""
    sqlite_used, trim = _sqlite_memory_used(), malloc_trimmer()
    while True:
        if trim is not None:
            trim()
        sample(process, sqlite_used)
        if stop.wait(every):
            return
