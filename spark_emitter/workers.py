"""The Python interpreter that runs a session's Python code on Spark's executors (UDFs, Python
transforms, `mapPartitions`): the one the user chose, else the one running Lodestar.

PySpark itself defaults to the `python3` on PATH, which in an un-activated virtualenv (or a pipx
install) cannot import `spark_emitter` or its dependencies. The interpreter running this code
has them all, so the executors' Python workers run it: on one machine that is the same file; on
a cluster of several hosts, the same virtualenv path must exist on each worker host (or the user
names another interpreter). Code is not shipped as a zip: a zip of Lodestar's own packages would
still lack their compiled dependencies (orjson, ...), which only an installed interpreter has."""

from __future__ import annotations

import os
import sys
from typing import Any


def use_lodestar_python(spark: Any) -> str:
    """Makes the Python code `spark` ships from now on run on the chosen interpreter:
    `PYSPARK_PYTHON`, else the session's `spark.pyspark.python`, else this process's
    interpreter (`sys.executable`). Returns it."""
    context = spark.sparkContext
    chosen = os.environ.get("PYSPARK_PYTHON") or context.getConf().get("spark.pyspark.python")
    context.pythonExec = chosen or sys.executable  # read by every UDF and RDD function built afterwards
    return context.pythonExec
