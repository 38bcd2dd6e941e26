"""The access log of `lodestar serve`: one JSON line per request, on by default, never a token."""

from __future__ import annotations

import json
import subprocess
from functools import partial

import requests

from tests.support.builders import dataset_urn, mcp, properties
from tests.support.processes import LODESTAR, TOKEN, ServeProcess, run_cli
from tests.support.server import free_port
from tests.support.waiting import await_

URN = dataset_urn("access.orders")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_every_request_gets_one_line_with_who_what_how_long_and_its_trace_id(tmp_path):
    log = tmp_path / "access.log"
    with ServeProcess(tmp_path / "data", None, "--workers", "2", "--access-log", str(log)) as serve:
        written = requests.post(f"{serve.url}/v1/proposals", headers={**AUTH, "User-Agent": "DataHub-Client/1.7"},
                                json={"proposals": [mcp(URN, "datasetProperties", properties("orders"))]})
        refused = requests.get(f"{serve.url}/v1/entities/{URN}?token=sesame&aspects=status",
                               headers={"Authorization": "Bearer not-a-token"})
        bad = requests.post(f"{serve.url}/v1/proposals", headers=AUTH, data=b"{not json")
        await_(lambda: len(lines_of(log.read_text())) >= 4, "the lines of the three requests and a health check")
    assert (written.status_code, refused.status_code, bad.status_code) == (200, 401, 400)
    by_trace = {line["trace_id"]: line for line in lines_of(log.read_text())}
    ok = by_trace[written.headers["X-Trace-Id"]]
    assert (ok["method"], ok["path"], ok["status"], ok["principal"], ok["user_agent"]) == (
        "POST", "/v1/proposals", 200, "urn:li:corpuser:admin", "DataHub-Client/1.7")
    assert len(written.content) < ok["bytes"] < len(written.content) + 1000  # the body and the headers
    assert ok["duration_ms"] > 0 and ok["remote"] == "127.0.0.1"
    assert ok["time"].endswith("Z")
    denied = by_trace[refused.headers["X-Trace-Id"]]
    assert (denied["status"], denied["principal"]) == (401, None)
    assert denied["path"] == f"/v1/entities/{URN}?token=***&aspects=status"  # a secret in the query is masked
    assert by_trace[bad.headers["X-Trace-Id"]]["status"] == 400
    text = log.read_text()
    assert TOKEN not in text and "not-a-token" not in text and "sesame" not in text


def test_the_log_goes_to_stderr_by_default_and_off_turns_it_off(tmp_path):
    for where, expected in ((None, 1), ("off", 0)):
        url = f"http://127.0.0.1:{(port := free_port())}/v1/entities/{URN}"
        args = [*LODESTAR, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port), "--admin-token", TOKEN]
        proc = subprocess.Popen([*args, *(["--access-log", where] if where else [])],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            await_(partial(_answers, url), "the server answering")
        finally:
            proc.terminate()
            stderr = proc.communicate(timeout=30)[1]
        entity_lines = [line for line in lines_of(stderr) if line["path"] == f"/v1/entities/{URN}"]
        assert len(entity_lines) == expected, where


def _answers(url: str) -> bool:
    try:
        return requests.get(url, headers=AUTH, timeout=5).status_code == 404
    except requests.ConnectionError:
        return False


def test_an_access_log_that_cannot_be_opened_is_one_clear_line(tmp_path):
    done = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--port", str(free_port()),
                   "--access-log", str(tmp_path / "missing" / "access.log"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"cannot open the access log {tmp_path / 'missing' / 'access.log'}: No such file or directory" in done.stderr


def test_secret_looking_parameters_are_masked_however_their_names_are_spelled(tmp_path):
    log = tmp_path / "access.log"
    secrets = {"api-key": "v1", "access-token": "v2", "pwd": "v3", "client_secret": "v4", "X-Auth-Token": "v5",
               "sessionId": "v6", "Credentials": "v7", "PASSWD": "v8", "hmac_signature": "v9", "code": "v10"}
    with ServeProcess(tmp_path / "data", None, "--access-log", str(log)) as serve:
        query = "&".join(f"{name}=secret-{value}" for name, value in secrets.items())
        answered = requests.get(f"{serve.url}/v1/entities/{URN}?{query}&aspects=status&q=shown", headers=AUTH)
        await_(lambda: answered.headers["X-Trace-Id"] in log.read_text(), "the request's line")
    (line,) = [line for line in lines_of(log.read_text()) if line["trace_id"] == answered.headers["X-Trace-Id"]]
    masked = "&".join(f"{name}=***" for name in secrets)
    assert line["path"] == f"/v1/entities/{URN}?{masked}&aspects=status&q=shown"
    assert "secret-" not in log.read_text()
