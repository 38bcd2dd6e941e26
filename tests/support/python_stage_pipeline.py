"""A pipeline with a Python stage (`PythonEvaluator`), run by the `lodestar` script as a user of
an un-activated virtualenv would run it, and the lineage it records read back through the API:
what the local and the cluster runs of the same pipeline are compared on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ingest.rest import RestClient
from tests.support.spark_harness import files
from tests.support.waiting import await_

SCRIPT = ("import time\n\n"
          "def transform(record, emitter, context):\n"
          "    time.sleep(PAUSE)\n"
          "    emitter.emit({'name': record['name'].upper(), 'n': record['n']})\n")
NAMES = ("ann", "bob", "cy", "dee", "eve", "fay", "gil", "hal", "ida", "jo")
# Only the system's directories: the virtualenv's bin (and any other Python) is not on it.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def definition(name: str, source: Path, out: Path, pause: float = 0.0) -> dict[str, Any]:
    """File (CSV) -> PythonEvaluator (upper-cases `name`, after `pause` seconds a record) -> File (JSON)."""
    script = SCRIPT.replace("PAUSE", repr(pause))
    return {"name": name, "stages": [
        {"name": "In", "plugin": {"name": "File", "type": "batchsource", "properties": {
            "referenceName": f"{name}-in", "path": str(source), "format": "csv", "schema": "name string, n int"}}},
        {"name": "Shout", "plugin": {"name": "PythonEvaluator", "type": "transform", "properties": {"script": script}},
         "fieldMutations": [{"inputFields": [{"name": "name", "type": "string"}], "mutation": "upper",
                             "description": "upper-case the name", "outputField": {"name": "name", "type": "string"}}]},
        {"name": "Out", "plugin": {"name": "File", "type": "batchsink", "properties": {
            "referenceName": f"{name}-out", "path": str(out), "format": "json"}}}],
        "connections": [{"from": "In", "to": "Shout"}, {"from": "Shout", "to": "Out"}]}


def lodestar_script() -> str:
    """The `lodestar` console script of the virtualenv running the tests, by its absolute path."""
    return str(Path(sys.executable).parent / "lodestar")


@dataclass
class Ran:
    run_urn: str
    stdout: str


def start_unactivated(folder: Path, name: str, server: str, token: str, *extra: str, files: int = 1,
                      rows: int = 3, pause: float = 0.0) -> subprocess.Popen[str]:
    """Writes the pipeline's input (`rows` rows; `files` > 1: a folder of that many files, read in
    as many partitions) and file in `folder`, and starts it with the virtualenv's script while
    PATH holds no Python of the virtualenv and PYSPARK_PYTHON is unset."""
    source, out = folder / f"{name}.csv", folder / f"{name}-out"
    lines = [f"{NAMES[i % len(NAMES)]},{i + 1}\n" for i in range(rows)]
    if files == 1:
        source.write_text("".join(lines))
    else:
        source.mkdir()
        for f in range(files):
            (source / f"part-{f}.csv").write_text("".join(lines[f::files]))
    path = folder / f"{name}.json"
    path.write_text(json.dumps(definition(name, source, out, pause)))
    env = unactivated_env(COLUMNS="400")  # wide: the summary line unwrapped
    return subprocess.Popen([lodestar_script(), "pipeline", "run", str(path), "--server", server, "--token", token,
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def unactivated_env(**extra: str) -> dict[str, str]:
    """This process's environment as a shell without the virtualenv activated has it: PATH with
    no Python of the virtualenv, PYSPARK_PYTHON unset (and `extra` set)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    return {**env, "PATH": BARE_PATH, **extra}


PROGRAM = """\
import sys

from pyspark.sql import SparkSession, functions as F, types as T

from spark_emitter import EndPoint, InputField, ReadOperation, TransformOperation, WriteOperation, attach, lodestar_run

master, server, token, name, source, out = sys.argv[1:]
spark = SparkSession.builder.master(master).appName(name).getOrCreate()
listener = attach(spark, server=server, token=token)
with lodestar_run(spark, program=name) as run:
    shout = F.udf(lambda value: value.upper(), T.StringType())  # Python, on the executors
    rows = spark.read.schema("name string, n int").csv(source)
    rows.select(shout("name").alias("name"), "n").write.json(out)
    src, dst = EndPoint.of("default", source), EndPoint.of("default", out)
    run.lineage.record([
        ReadOperation("In.read", "read", src, ["name", "n"]),
        TransformOperation("Shout.upper", "upper-case the name", [InputField("In.read", "name")], ["name"]),
        WriteOperation("Out.write", "write", dst, [InputField("Shout.upper", "name"), InputField("In.read", "n")])])
assert listener.flush(60) and (listener.counts.failed, listener.counts.dropped) == (0, 0), listener.counts
listener.close(30)
spark.stop()
print(f"run {run.urn} of {name}: SUCCEEDED")
"""


def run_program_unactivated(folder: Path, name: str, server: str, token: str, master: str,
                            timeout: float = 900) -> Ran:
    """A `lodestar_run` program (the pipeline's File -> Python upper-case -> File, written with
    the DataFrame API, a Python UDF and the listener attached) run by the virtualenv's
    interpreter by its path, PATH holding no Python of the virtualenv and PYSPARK_PYTHON unset."""
    source, out = folder / f"{name}.csv", folder / f"{name}-out"
    source.write_text("".join(f"{NAMES[i]},{i + 1}\n" for i in range(3)))
    program = folder / f"{name}.py"
    program.write_text(PROGRAM)
    process = subprocess.Popen([sys.executable, str(program), master, server, token, name, str(source), str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=unactivated_env(),
                               cwd=folder)
    return finished(process, timeout)


def finished(process: subprocess.Popen[str], timeout: float = 900) -> Ran:
    """The run of a pipeline or program started un-activated, once it succeeded."""
    stdout, stderr = process.communicate(timeout=timeout)
    assert process.returncode == 0, stdout[-3000:] + stderr[-5000:]
    found = re.search(r"run (urn:li:dataProcessInstance:\w+) .*: SUCCEEDED", stdout)
    assert found, stdout
    return Ran(found.group(1), stdout)


def run_unactivated(folder: Path, name: str, server: str, token: str, *extra: str, timeout: float = 900) -> Ran:
    """start_unactivated with 3 rows, awaited: its run URN."""
    return finished(start_unactivated(folder, name, server, token, *extra), timeout)


def recorded_lineage(client: RestClient, folder: Path, name: str, run_urn: str) -> dict[str, Any]:
    """What the run of pipeline `name` recorded, with the datasets named IN and OUT: the run's
    field operations, the incoming field lineage of each output field, and the rows written."""
    source, out = files(folder / f"{name}.csv"), files(folder / f"{name}-out")
    named = {source: "IN", out: "OUT"}

    def incoming(field: str) -> dict[str, list[str]]:
        def read() -> dict[str, list[str]]:
            body = client.call("GET", f"/v3/namespaces/default/datasets/{quote(out, safe='')}/lineage/fields/"
                               f"{field}?direction=incoming&start=0&end=now%2B1h")
            return {named.get(e.get("urn") or e["dataset"], "?"): e["fields"] for e in body["incoming"]}
        return await_(read, f"the backward lineage of {out} {field}")

    operations = client.aspect(run_urn, "fieldOperations")["value"]["operations"]
    return {"operations": sorted((op["name"], op["type"], named.get(op.get("source") or op.get("destination"), "-"),
                                  tuple((i["origin"], i["field"]) for i in op.get("inputs") or []),
                                  tuple(op.get("outputs") or [])) for op in operations),
            "incoming": {f: incoming(f) for f in ("name", "n")},
            "rows": sorted((r["name"], r["n"]) for r in out_rows(folder / f"{name}-out"))}


def out_rows(folder: Path) -> list[dict[str, Any]]:
    """The JSON rows of a Spark output folder."""
    return [json.loads(line) for part in sorted(folder.glob("part-*")) for line in part.read_text().splitlines()]
