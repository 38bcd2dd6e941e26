"""The `lodestar` command as a user runs it: serve, ingest, get, and its one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from ingest.rest import RestClient
from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import LODESTAR, TOKEN, ServeProcess, run_cli
from tests.support.server import free_port

URN = dataset_urn("cli.orders")


@pytest.fixture
def served(tmp_path):
    with ServeProcess(tmp_path / "data") as serve:
        yield serve


def cli(served, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, "--server", served.url, "--token", TOKEN)


def write(path, content) -> str:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_ingest_then_get(served, tmp_path):
    file = write(tmp_path / "mcps.json", [mcp(URN, "datasetProperties", properties("from the CLI")),
                                         mcp(URN, "status", {"removed": False})])
    done = cli(served, "ingest", file)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 proposals: 2 applied, 0 noop, 0 dropped, 0 failed"
    again = cli(served, "ingest", file)
    assert again.stdout.strip() == "2 proposals: 0 applied, 2 noop, 0 dropped, 0 failed"
    got = cli(served, "get", URN)
    assert got.returncode == 0
    assert json.loads(got.stdout)["aspects"]["datasetProperties"]["value"]["description"] == "from the CLI"
    one = cli(served, "get", URN, "--aspect", "datasetProperties", "--version", "1")
    assert json.loads(one.stdout)["version"] == 1


def test_ingest_datahub_mce_and_file_form(served, tmp_path):
    file = write(tmp_path / "datahub.json", [
        {"proposedSnapshot": {"com.linkedin.pegasus2avro.metadata.snapshot.DatasetSnapshot": {
            "urn": URN, "aspects": [
                {"com.linkedin.pegasus2avro.dataset.DatasetProperties": {"description": "from an MCE",
                                                                         "customProperties": {}}},
                {"com.linkedin.pegasus2avro.common.Status": {"removed": False}}]}}},
        {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "globalTags",
         "aspect": {"json": {"tags": [{"tag": "urn:li:tag:gold"}]}}},
    ])
    done = cli(served, "ingest", file)
    assert done.returncode == 0, done.stderr
    assert "3 applied" in done.stdout
    entity = served.client().entity(URN)["aspects"]
    assert entity["datasetProperties"]["value"]["description"] == "from an MCE"
    assert entity["globalTags"]["value"]["tags"] == [{"tag": "urn:li:tag:gold"}]


def test_ingest_reports_failures_and_exits_non_zero(served, tmp_path):
    file = write(tmp_path / "mixed.json", [mcp(URN, "status", {"removed": False}),
                                          mcp(URN, "status", {"removed": "maybe"})])
    done = cli(served, "ingest", file)
    assert done.returncode == 1
    assert "1 applied" in done.stdout and "1 failed" in done.stdout
    assert f"failed: proposal 1 ({URN} status): aspect status: field 'removed'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    ('"a string"', "expected a JSON array of proposals"),
    ("[1, 2]", "item 0 is not a JSON object"),
    ('[{"proposedSnapshot": {"x.DatasetSnapshot": {"urn": "u", "aspects": [{"x.Nope": {}}]}}}]',
     "item 0: unknown aspect type x.Nope"),
])
def test_bad_input_files_get_one_line_errors(served, tmp_path, content, message):
    done = cli(served, "ingest", write(tmp_path / "bad.json", content))
    assert done.returncode == 1
    assert message in done.stderr
    assert done.stderr.startswith("lodestar: error:") and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_missing_file_and_unreachable_server(tmp_path):
    missing = run_cli("ingest", str(tmp_path / "nope.json"), "--server", "http://127.0.0.1:1")
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    file = write(tmp_path / "ok.json", [mcp(URN, "status", {"removed": False})])
    down = run_cli("ingest", file, "--server", f"http://127.0.0.1:{free_port()}", "--token", "x")
    assert down.returncode == 1
    assert "cannot reach Lodestar at" in down.stderr and "Traceback" not in down.stderr


def test_get_of_a_missing_entity_and_a_bad_token(served):
    missing = cli(served, "get", dataset_urn("nope"))
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr and "not found" in missing.stderr
    denied = run_cli("get", URN, "--server", served.url, "--token", "wrong")
    assert denied.returncode == 1 and "HTTP 401" in denied.stderr


def test_serve_creates_an_admin_token_on_first_start_and_the_cli_finds_it(tmp_path):
    data_dir = tmp_path / "fresh"
    port = free_port()
    proc = subprocess.Popen([*LODESTAR, "serve", "--data-dir", str(data_dir), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "Lodestar GMS on" in proc.stdout.readline()
        token_line = proc.stdout.readline()
        assert token_line.startswith("admin token (new): ")
        token = token_line.split(": ", 1)[1].strip()
        assert re.fullmatch("[0-9a-f]{64}", token)  # never taken for an option after --token
        assert (data_dir / "admin.token").read_text().strip() == token
        assert oct((data_dir / "admin.token").stat().st_mode & 0o777) == "0o600"
        server = f"http://127.0.0.1:{port}"
        _wait_healthy(server)
        done = run_cli("get", URN, "--server", server, "--data-dir", str(data_dir))
        assert "HTTP 404" in done.stderr  # authenticated with the stored token, entity absent
    finally:
        proc.terminate()
        proc.wait(30)
    for again in ([], ["--admin-token", "chosen-by-the-operator"]):  # a stored or a given token is never printed
        proc = subprocess.Popen([*LODESTAR, "serve", "--data-dir", str(data_dir), "--port", str(port), *again],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert "Lodestar GMS on" in proc.stdout.readline()
            assert proc.stdout.readline() == f"admin token: in {data_dir / 'admin.token'}\n"
            _wait_healthy(f"http://127.0.0.1:{port}")
        finally:
            proc.terminate()
            output = proc.communicate(timeout=30)[0]
        assert token not in output and "chosen-by-the-operator" not in output


def test_serve_reads_the_admin_token_from_a_file_so_ps_does_not_show_it(tmp_path):
    token_file = tmp_path / "admin-token"
    token_file.write_text("from-a-file-not-the-command-line\n")
    port = free_port()
    proc = subprocess.Popen([*LODESTAR, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port)],
                            env={**os.environ, "LODESTAR_ADMIN_TOKEN_FILE": str(token_file)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}")
        client = RestClient(f"http://127.0.0.1:{port}", "from-a-file-not-the-command-line")
        assert client.request("GET", "/v1/webhooks")[0] == 200
        assert b"from-a-file" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    finally:
        proc.terminate()
        proc.wait(30)
    for content, message in (("two words", "must hold one token (no spaces), not several words"),
                             ("", "must hold one token (no spaces), not nothing")):
        token_file.write_text(content)
        done = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--port", str(free_port()),
                       "--admin-token-file", str(token_file))
        assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr
    done = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--admin-token-file", str(tmp_path / "missing"))
    assert done.returncode == 1 and "cannot read the admin token file" in done.stderr


def test_serve_reports_a_taken_port(tmp_path, served):
    done = run_cli("serve", "--data-dir", str(tmp_path / "other"), "--port", str(served.port))
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{served.port}" in done.stderr and "Traceback" not in done.stderr


def test_the_cli_finds_a_server_on_another_port_through_its_data_directory(tmp_path, monkeypatch):
    """No --server and no LODESTAR_SERVER: the CLI asks the address the data directory's server
    wrote into server.url, which is there while it runs and gone after a clean stop."""
    monkeypatch.delenv("LODESTAR_SERVER", raising=False)
    data_dir = tmp_path / "data"
    env = {"LODESTAR_DATA_DIR": str(data_dir)}
    file = write(tmp_path / "mcps.json", [mcp(URN, "datasetProperties", properties("found by its data directory"))])
    with ServeProcess(data_dir, None, "--workers", "2") as serve:
        assert serve.port != 8080 and (data_dir / "server.url").read_text() == f"{serve.url}\n"
        done = run_cli("ingest", file, env=env)
        assert done.returncode == 0 and "1 applied" in done.stdout, done.stderr
        got = run_cli("get", URN, "--aspect", "datasetProperties", env=env)
        assert json.loads(got.stdout)["value"]["description"] == "found by its data directory", got.stderr
    assert serve.proc.returncode == 0 and not (data_dir / "server.url").exists()


def test_a_killed_servers_address_is_named_as_such_when_nothing_answers_there(tmp_path, monkeypatch):
    monkeypatch.delenv("LODESTAR_SERVER", raising=False)
    data_dir = tmp_path / "data"
    serve = ServeProcess(data_dir).start()
    serve.proc.kill()  # no clean stop: server.url stays behind
    serve.wait()
    done = run_cli("get", URN, env={"LODESTAR_DATA_DIR": str(data_dir)})
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"lodestar: error: cannot reach Lodestar at {serve.url}: ")
    assert f"the address is from {data_dir / 'server.url'}" in done.stderr
    assert "start the server again, or give --server or LODESTAR_SERVER" in done.stderr
    other = ServeProcess(tmp_path / "other")  # --server beats the data directory's address
    with other:
        done = run_cli("get", URN, "--server", other.url, "--token", TOKEN, env={"LODESTAR_DATA_DIR": str(data_dir)})
        assert "HTTP 404" in done.stderr


def test_serve_with_examples_loads_the_seed_examples(tmp_path):
    with ServeProcess(tmp_path / "ex", None, "--examples") as serve:
        app = serve.client().entity("urn:li:dataFlow:(cdap,PurchaseHistory,default)")
        assert "dataFlowInfo" in app["aspects"]
        store = serve.client().entity("urn:li:dataset:(urn:li:dataPlatform:cdap,default.Store,PROD)")
        assert "upstreamLineage" in store["aspects"]


def _wait_healthy(server: str) -> None:
    client = RestClient(server)
    deadline = time.monotonic() + 30
    while True:
        try:
            if client.request("GET", "/health")[0] == 200:
                return
        except Exception:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.05)
