"""The program API and pipeline runner's test module (`spark_cases_pipelines.py`: real PySpark
against a real `lodestar serve`), run by pytest in a process of its own, for the reason
`test_spark.py` gives (py4j's callback server, which the listener needs, only serves file
descriptors below 1024)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = 14


@pytest.mark.timeout(1200)
def test_pipeline_and_program_cases() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/spark/spark_cases_pipelines.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, env=os.environ.copy())
    assert result.returncode == 0, result.stdout[-30000:] + result.stderr[-5000:]
    assert re.search(rf"^{CASES} passed\b", result.stdout, re.MULTILINE), result.stdout[-3000:]
