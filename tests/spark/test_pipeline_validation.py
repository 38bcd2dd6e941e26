"""A pipeline file is checked before it runs: each error names its problem and its stage (no Spark
needed), and `lodestar pipeline validate` / `list-plugins` say so."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from spark_emitter.pipeline import PipelineError, check, load, parse
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
CUSTOMERS = ROOT / "examples" / "pipelines" / "customers.json"


def bare() -> dict[str, Any]:
    return {"name": "p", "stages": [
        {"name": "src", "plugin": {"name": "File", "type": "batchsource",
                                   "properties": {"referenceName": "in", "path": "/in", "format": "csv",
                                                  "schema": "a string, b int"}}},
        {"name": "proj", "plugin": {"name": "Projection", "type": "transform", "properties": {"rename": "a:c"}}},
        {"name": "sink", "plugin": {"name": "File", "type": "batchsink",
                                    "properties": {"referenceName": "out", "path": "/out", "format": "parquet"}}}],
        "connections": [{"from": "src", "to": "proj"}, {"from": "proj", "to": "sink"}]}


def errors_of(data: dict[str, Any], arguments: dict[str, str] | None = None) -> list[str]:
    return check(parse(data), arguments)


def test_a_valid_pipeline_has_no_errors_as_export_or_bare_config() -> None:
    assert errors_of(bare()) == []
    exported = {"name": "p", "artifact": {"name": "cdap-data-pipeline"}, "config": bare()}
    pipeline = parse(exported)
    assert (pipeline.name, [s.name for s in pipeline.stages], pipeline.order()) == ("p", ["src", "proj", "sink"],
                                                                                  ["src", "proj", "sink"])
    assert check(pipeline) == []


def test_a_cycle_is_named_with_its_stages() -> None:
    data = bare()
    data["stages"].insert(2, {"name": "back", "plugin": {"name": "Projection", "type": "transform"}})
    data["connections"] += [{"from": "proj", "to": "back"}, {"from": "back", "to": "proj"}]
    errors = errors_of(data)
    assert any("cycle" in e and "proj -> back -> proj" in e for e in errors), errors


def test_unknown_plugin_missing_property_and_dangling_connection_are_named() -> None:
    data = bare()
    data["stages"][1]["plugin"]["name"] = "Frobnicate"
    del data["stages"][2]["plugin"]["properties"]["path"]
    data["connections"].append({"from": "proj", "to": "nowhere"})
    errors = errors_of(data)
    assert "connection proj -> nowhere: there is no stage 'nowhere'" in errors
    assert any(e.startswith("stage 'proj': unknown plugin 'Frobnicate'") for e in errors), errors
    assert "stage 'sink': missing required property path of plugin File" in errors


def test_a_field_mutation_naming_a_field_nothing_produces_is_an_error() -> None:
    data = bare()
    data["stages"][1] = {"name": "proj", "plugin": {"name": "PythonEvaluator", "type": "transform", "properties": {
        "script": "def transform(record, emitter, context):\n    emitter.emit(record)\n"}},
        "fieldMutations": [{"inputFields": [{"name": "a"}], "mutation": "up", "outputField": {"name": "A"}},
                           {"inputFields": [{"name": "A"}, {"name": "zzz"}], "mutation": "join2"}]}
    errors = errors_of(data)
    assert errors == ["stage 'proj': field mutation 'join2': no input produces the field 'zzz' (inputs: a, b)"]


def test_projection_of_a_field_that_does_not_come_in_is_an_error() -> None:
    data = bare()
    data["stages"][1]["plugin"]["properties"] = {"drop": "nope"}
    assert errors_of(data) == ["stage 'proj': 'nope' is not an input field (inputs: a, b)"]


def test_macros_are_accepted_by_validate_and_need_a_value_to_run() -> None:
    data = bare()
    data["stages"][0]["plugin"]["properties"]["path"] = "${root}/in"
    assert errors_of(data) == []
    assert errors_of(data, {"root": "/data"}) == []
    assert errors_of(data, {"other": "x"}) == [
        "stage 'src': property path: the macro ${root} has no value (pass it as a runtime argument: --arg root=...)"]


def test_the_forms_errors_are_all_reported() -> None:
    with pytest.raises(PipelineError) as caught:
        parse({"stages": [{"plugin": {}}], "connections": [{"from": 1}]})
    assert caught.value.errors == ["name: the pipeline needs a name", "stages[0]: a stage needs a name",
                                   "connections[0]: a connection is {\"from\": stage, \"to\": stage}"]
    data = copy.deepcopy(bare())
    data["stages"][0]["plugin"]["type"] = "batchsink"
    assert "stage 'src': no connection leads to this batchsink" in errors_of(data)


def test_cli_validate_and_list_plugins(tmp_path: Path) -> None:
    assert load(CUSTOMERS).name == "CustomerPipeline"
    ok = run_cli("pipeline", "validate", str(CUSTOMERS))
    assert ok.returncode == 0 and "is valid" in ok.stdout and "macros: input, store" in ok.stdout, ok.stderr
    missing = run_cli("pipeline", "validate", str(CUSTOMERS), "--arg", "input=/data/customers.csv")
    assert missing.returncode == 1 and "the macro ${store} has no value" in missing.stderr
    broken = bare()
    broken["connections"].append({"from": "sink", "to": "src"})
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    bad = run_cli("pipeline", "validate", str(path))
    assert bad.returncode == 1 and "cycle" in bad.stderr, bad.stderr
    plugins = run_cli("pipeline", "list-plugins")
    assert plugins.returncode == 0
    for name in ("File", "Table", "Projection", "CSVParser", "PythonEvaluator", "Joiner", "GroupByAggregate"):
        assert f"\n{name} (" in "\n" + plugins.stdout
