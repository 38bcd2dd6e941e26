"""`lodestar tag|property|principal|token|grant|revoke|grants` as a user runs them."""

from __future__ import annotations

import json
import subprocess

import pytest

from ingest.rest import RestClient
from tests.support.metadata_fixtures import dataset_mcps
from tests.support.processes import TOKEN, ServeProcess, run_cli

FIELD = "default/datasets/customers/field/ssn"
MAX_LENGTH = 20  # LODESTAR_METADATA_MAX_LENGTH of the served process (CDAP's default: 50)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    env = {"LODESTAR_METADATA_MAX_LENGTH": str(MAX_LENGTH)}
    with ServeProcess(tmp_path_factory.mktemp("cli") / "data", env) as serve:
        mcps = dataset_mcps("default", "customers", fields=(("ssn", "string"),))
        results = RestClient(serve.url, TOKEN).propose(mcps)
        assert all(r["status"] == "applied" for r in results)
        yield serve


def cli(served, *args: str, token: str = TOKEN) -> subprocess.CompletedProcess:
    return run_cli(*args, "--server", served.url, "--token", token)


def _ok(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _fails(done: subprocess.CompletedProcess, says: str) -> None:
    assert done.returncode == 1
    assert done.stderr.startswith("lodestar: error:") and says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_tags_by_cdap_path_and_by_urn(served):
    assert _ok(cli(served, "tag", "add", FIELD, "PII", "raw")) == ["PII", "raw"]
    assert _ok(cli(served, "tag", "remove", FIELD, "raw")) == ["PII"]
    urn = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:cdap,default.customers,PROD),ssn)"
    assert _ok(cli(served, "tag", "list", urn, "--scope", "user")) == ["PII"]
    assert _ok(cli(served, "tag", "add", urn, "checked", "--scope", "system")) == ["checked"]
    assert _ok(cli(served, "tag", "list", FIELD)) == ["USER:", "  PII", "SYSTEM:", "  checked"]
    assert _ok(cli(served, "tag", "remove", FIELD)) == []
    assert _ok(cli(served, "tag", "list", FIELD)) == ["USER:", "  (none)", "SYSTEM:", "  checked"]
    assert _ok(cli(served, "tag", "list", FIELD, "--scope", "SYSTEM")) == ["checked"]


def test_properties(served):
    ds = "default/datasets/customers"
    assert _ok(cli(served, "property", "set", ds, "owner=sales team", "tier=gold")) == ["owner=sales team",
                                                                                       "tier=gold"]
    assert _ok(cli(served, "property", "remove", ds, "tier")) == ["owner=sales team"]
    system = dict(line.split("=", 1) for line in _ok(cli(served, "property", "list", ds, "--scope", "SYSTEM")))
    assert system["entity-name"] == "customers" and json.loads(system["schema"]) == [{"name": "ssn",
                                                                                      "type": "STRING"}]
    both = _ok(cli(served, "property", "list", ds))
    assert both[:3] == ["USER:", "  owner=sales team", "SYSTEM:"]
    assert "  entity-name=customers" in both[3:] and "  owner=sales team" not in both[3:]


def test_bad_input_is_one_line(served):
    _fails(cli(served, "property", "set", "default/datasets/customers", "novalue"), "'novalue' is not key=value")
    _fails(cli(served, "tag", "add", "default/datasets/customers", "ba$d"), "tag 'ba$d' holds '$'")
    _fails(cli(served, "tag", "list", "default/datasets/nosuch"), "HTTP 404")
    _fails(cli(served, "tag", "list", "default/datasets"), "needs a name")


def test_the_length_limit_is_configured_by_the_environment(served, tmp_path):
    assert _ok(cli(served, "tag", "add", FIELD, "t" * MAX_LENGTH)) == ["t" * MAX_LENGTH]
    _fails(cli(served, "tag", "add", FIELD, "u" * (MAX_LENGTH + 1)),
           f"is {MAX_LENGTH + 1} characters long, over the limit of {MAX_LENGTH}")
    _fails(cli(served, "property", "set", FIELD, "k=" + "v" * (MAX_LENGTH + 1)), f"over the limit of {MAX_LENGTH}")
    assert "u" * (MAX_LENGTH + 1) not in _ok(cli(served, "tag", "list", FIELD))
    refused = run_cli("serve", "--data-dir", str(tmp_path), "--port", "0", env={"LODESTAR_METADATA_MAX_LENGTH": "lots"})
    _fails(refused, "LODESTAR_METADATA_MAX_LENGTH must be a positive number of characters, not 'lots'")


def test_principals_tokens_and_grants(served):
    assert json.loads(cli(served, "principal", "add", "carol").stdout)["principal"] == "urn:li:corpuser:carol"
    token = json.loads(cli(served, "token", "create", "carol", "--name", "laptop").stdout)["token"]
    _fails(cli(served, "tag", "add", FIELD, "x", token=token), "HTTP 403: urn:li:corpuser:carol has no WRITE")
    grants = json.loads(cli(served, "grant", "carol", "default/datasets/customers", "READ", "WRITE").stdout)
    assert grants["grants"] == [{"resource": "urn:li:dataset:(urn:li:dataPlatform:cdap,default.customers,PROD)",
                                 "privileges": ["READ", "WRITE"]}]
    assert "x" in _ok(cli(served, "tag", "add", FIELD, "x", token=token))
    assert json.loads(cli(served, "grants", token=token).stdout)["grants"] == grants["grants"]
    cli(served, "revoke", "carol", "default/datasets/customers", "WRITE")
    _fails(cli(served, "tag", "remove", FIELD, "x", token=token), "has no WRITE or ADMIN privilege")
    _fails(cli(served, "grant", "carol", "instance", "FLY"), "READ, WRITE, ADMIN")
    second = json.loads(cli(served, "token", "create", "carol").stdout)
    _ok(cli(served, "token", "revoke", second["id"]))
    _fails(cli(served, "tag", "list", FIELD, token=second["token"]), "HTTP 401")
    assert _ok(cli(served, "tag", "list", FIELD, token=token))  # carol's other token still works
    _ok(cli(served, "principal", "remove", "carol"))  # a removed principal's tokens: 403, naming why
    _fails(cli(served, "tag", "list", FIELD, token=token), "HTTP 403: principal urn:li:corpuser:carol is removed")
    _fails(cli(served, "token", "revoke", "0" * 64), "HTTP 404")


def test_cdap_search(served):
    _ok(cli(served, "tag", "add", "default/datasets/customers", "gold-tier"))
    _ok(cli(served, "tag", "add", FIELD, "searched"))
    RestClient(served.url, TOKEN).call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
    lines = _ok(cli(served, "search", "gold", "--target", "dataset", "--scope", "user"))
    assert lines == ["1 result(s)", "dataset      namespace=default,dataset=customers"]
    assert _ok(cli(served, "search", "gold", "--target", "field")) == ["0 result(s)"]
    assert _ok(cli(served, "search", "field:ss*", "--namespace", "default", "--target", "field")) == [
        "1 result(s)", "field        namespace=default,dataset=customers,field=ssn"]
    assert _ok(cli(served, "search", "schema:ssn", "--namespace", "default"))[1].startswith("dataset")
    # --cdap alone: CDAP's language in every namespace; without it nor the others, /v1/search's
    assert _ok(cli(served, "search", "tags:gold", "--cdap")) == [
        "1 result(s)", "dataset      namespace=default,dataset=customers"]
    assert _ok(cli(served, "search", "gold*", "--cdap"))[0] == "1 result(s)"
    native = _ok(cli(served, "search", "customers", "--types", "dataset"))  # /v1/search: its answer's shape
    assert native[1].split() == ["dataset", "urn:li:dataset:(urn:li:dataPlatform:cdap,default.customers,PROD)"]
