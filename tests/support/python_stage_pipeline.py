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

SCRIPT = ("def transform(record, emitter, context):\n"
          "    emitter.emit({'name': record['name'].upper(), 'n': record['n']})\n")
# Only the system's directories: the virtualenv's bin (and any other Python) is not on it.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def definition(name: str, source: Path, out: Path) -> dict[str, Any]:
    """File (CSV) -> PythonEvaluator (upper-cases `name`) -> File (JSON)."""
    return {"name": name, "stages": [
        {"name": "In", "plugin": {"name": "File", "type": "batchsource", "properties": {
            "referenceName": f"{name}-in", "path": str(source), "format": "csv", "schema": "name string, n int"}}},
        {"name": "Shout", "plugin": {"name": "PythonEvaluator", "type": "transform", "properties": {"script": SCRIPT}},
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


def run_unactivated(folder: Path, name: str, server: str, token: str, *extra: str, timeout: float = 900) -> Ran:
    """Writes the pipeline's input and file in `folder`, runs it with the virtualenv's script while
    PATH holds no Python of the virtualenv and PYSPARK_PYTHON is unset; its run URN."""
    source, out = folder / f"{name}.csv", folder / f"{name}-out"
    source.write_text("ann,1\nbob,2\ncy,3\n")
    path = folder / f"{name}.json"
    path.write_text(json.dumps(definition(name, source, out)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env.update(PATH=BARE_PATH, COLUMNS="400")  # wide: the summary line unwrapped
    done = subprocess.run([lodestar_script(), "pipeline", "run", str(path), "--server", server, "--token", token,
                           *extra], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    found = re.search(r"run (urn:li:dataProcessInstance:\w+) .*: SUCCEEDED", done.stdout)
    assert found, done.stdout
    return Ran(found.group(1), done.stdout)


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
