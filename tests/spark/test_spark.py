"""The Spark listener's test modules (`spark_cases_lineage.py`, `spark_cases_listener.py`: real
PySpark jobs against a real `lodestar serve`), run by pytest in a process of their own.

Why a process of their own: py4j's callback server, through which Spark calls the listener,
waits for connections with select(), which only serves file descriptors below 1024; by the time
the whole suite reaches these tests its process holds more open files than that (the listener
refuses to attach in such a process, see `spark_emitter.listener`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1200)  # the subprocess's own limit; each case there has the suite's limit
def test_spark_listener_cases() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/spark/spark_cases_lineage.py",
         "tests/spark/spark_cases_listener.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, env=os.environ.copy())
    assert result.returncode == 0, result.stdout[-30000:] + result.stderr[-5000:]
    assert re.search(r"^24 passed\b", result.stdout, re.MULTILINE), result.stdout[-3000:]
