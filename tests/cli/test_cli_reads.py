"""`lodestar search`, `lineage`, `check` and `restore-indices` on the example metadata."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.support.processes import TOKEN, ServeProcess, run_cli

HISTORY = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.history,PROD)"
PURCHASES = "urn:li:dataset:(urn:li:dataPlatform:cdap,default.purchases,PROD)"
STORE_ID = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD),id)"
BODY = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:file,/data/customers.csv,PROD),body)"


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("examples")
    with ServeProcess(data_dir, None, "--examples") as serve:
        status, body = serve.client().request("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
        assert status == 200 and body["indexed"] is True
        yield serve, data_dir


def cli(serve, *args: str):
    return run_cli(*args, "--server", serve.url, "--token", TOKEN)


def test_search_finds_the_example_datasets(examples):
    serve, _ = examples
    done = cli(serve, "search", "purchases", "--types", "dataset")
    assert done.returncode == 0, done.stderr
    assert PURCHASES in done.stdout
    assert done.stdout.splitlines()[1].split()[1] == PURCHASES  # the exact name ranks first


def test_lineage_traces_history_back_to_the_stream(examples):
    serve, _ = examples
    done = cli(serve, "lineage", HISTORY, "--direction", "upstream", "--max-hops", "5")
    assert done.returncode == 0, done.stderr
    assert f"{PURCHASES} -[" in done.stdout and f"-> {HISTORY}" in done.stdout
    assert "default.purchaseStream" in done.stdout


def test_field_lineage_traces_id_back_to_body(examples):
    serve, _ = examples
    done = cli(serve, "lineage", STORE_ID, "--fields", "--direction", "upstream")
    assert done.returncode == 0, done.stderr
    assert f"{BODY} -[" in done.stdout


def test_check_then_restore_after_losing_the_read_models(examples, tmp_path):
    serve, data_dir = examples
    checked = run_cli("check", "--data-dir", str(data_dir))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 difference(s)" in checked.stdout
    copy = tmp_path / "copy"
    copy.mkdir()
    source = sqlite3.connect(data_dir / "lodestar.db")
    source.backup(sqlite3.connect(copy / "lodestar.db"))
    source.close()
    broken = run_cli("check", "--data-dir", str(copy), "--json")
    assert broken.returncode == 1
    report = json.loads(broken.stdout)
    assert report["differences"] > 0 and any(c["kind"] == "missing" for c in report["counts"])
    restored = run_cli("restore-indices", "--data-dir", str(copy))
    assert restored.returncode == 0, restored.stderr
    assert run_cli("check", "--data-dir", str(copy)).returncode == 0
