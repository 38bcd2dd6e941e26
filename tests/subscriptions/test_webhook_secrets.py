"""Webhook secrets are no metadata: they are in the secret store only, never in an aspect, an MCL,
a version, a subscription's output, a restore or a replay (on the embedded stack and on the
distributed one, run as real processes); a rotation keeps the old secret signing beside the new
one for the grace period the caller chose, and no longer; a secret kept in the aspect by an
earlier version is moved out when Lodestar starts."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from gms.access import SUPERUSER
from gms.service import Gms
from gms.store import StoredAspect
from ingest import topics
from ingest.eventlog import EventLog
from ingest.eventlog.kafka import SEQUENCES
from ingest.eventlog.sqlite import SqliteEventLog
from ingest.rest import RestClient
from ingest.subscribe import decode_change
from lodestar.secrets import SECRETS_FILE, fingerprint
from lodestar.webhook_delivery import SIGNATURE, WebhookDispatcher, signature, verify
from lodestar.webhooks import INFO, PREFIX, Webhooks
from schemas.events import default_codec
from tests.support.builders import dataset_urn, mcp, proposal
from tests.support.processes import LODESTAR, ServeProcess, run_cli
from tests.support.server import LOOPBACK_WEBHOOKS, LOOPBACK_WEBHOOKS_ENV
from tests.support.stack import Lodestar, Stack
from tests.support.webhook_receiver import DispatcherThreads, Receiver

WAIT = 30.0
ORDERS = dataset_urn("db.orders")
EMBEDDED = {"LODESTAR_EVENT_LOG": "sqlite", "LODESTAR_ASPECT_STORE": "sqlite", "LODESTAR_READ_MODELS": "sqlite"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def dispatching(server) -> Iterator[Callable[..., WebhookDispatcher]]:
    """Starts a dispatcher on the live server's GMS in a thread; stops it after the test."""
    threads = DispatcherThreads()
    yield lambda gms=None: threads.start(gms or server.gms, attempts=3)
    threads.stop_all()


def await_(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s"
        time.sleep(0.05)  # polling a condition, with a deadline
    return value


def signatures(headers: dict[str, str]) -> list[str]:
    return [part.strip() for part in headers[SIGNATURE].split(",")]


def leaked(found: Iterable[bytes | str], *secret_values: str) -> list[str]:
    """The secrets that occur in any of `found`."""
    blobs = [b if isinstance(b, bytes) else b.encode() for b in found]
    return [s for s in secret_values if any(s.encode() in blob for blob in blobs)]


def new_secret(label: str) -> str:
    return f"{label}-{secrets.token_urlsafe(24)}"


# rotation


def test_a_receiver_knowing_only_the_old_secret_verifies_deliveries_during_the_grace_period_and_not_after(
        server, receiver, dispatching):
    client = server.client()
    old = new_secret("old")
    hook = client.call("POST", "/v1/webhooks", {"url": receiver.url, "secret": old, "aspects": ["datasetProperties"]},
                       ok=(201,))
    assert hook["secret"] == old and hook["secretFingerprint"] == fingerprint(old) and hook["previousSecrets"] == []
    dispatcher = dispatching()
    client.call("POST", "/v1/proposals", {"proposals": [mcp(ORDERS, "datasetProperties", {"description": "0"})]})
    receiver.wait_for(1)
    assert receiver.requests[0][0][SIGNATURE] == signature(old, receiver.requests[0][1])

    rotated = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 2}, ok=(200,))
    new = rotated["secret"]
    await_(lambda: dispatcher.hooks[hook["urn"]].fingerprint == fingerprint(new), "the dispatcher reading the rotation")
    assert new != old and len(new) > 20 and rotated["secretFingerprint"] == fingerprint(new)
    ((previous),) = rotated["previousSecrets"]
    assert previous["fingerprint"] == fingerprint(old)
    deadline_ms = previous["validUntil"]
    assert deadline_ms - 2000 <= time.time() * 1000 <= deadline_ms
    shown = client.call("GET", f"/v1/webhooks/{hook['id']}")
    assert "secret" not in shown and shown["secretFingerprint"] == fingerprint(new)
    assert shown["previousSecrets"] == [previous]

    both = 0  # deliveries signed with both secrets
    for n in range(1, 1000):  # a change at a time until the old secret no longer verifies one
        proposed_ms = time.time() * 1000
        client.call("POST", "/v1/proposals", {"proposals": [mcp(ORDERS, "datasetProperties", {"description": str(n)})]})
        receiver.wait_for(n + 1)
        received_ms = time.time() * 1000
        headers, body = receiver.requests[n]
        assert verify(new, body, headers[SIGNATURE])
        if not verify(old, body, headers[SIGNATURE]):
            break
        assert signatures(headers) == [signature(new, body), signature(old, body)]  # the current one first
        assert proposed_ms < deadline_ms  # signed after the proposal: within the grace period
        both += 1
    else:
        pytest.fail("the old secret still verified deliveries long after its grace period")
    assert both >= 1 and received_ms >= deadline_ms  # signed before it was received: after the grace period
    assert signatures(headers) == [signature(new, body)]
    client.call("POST", "/v1/proposals", {"proposals": [mcp(ORDERS, "datasetProperties", {"description": "last"})]})
    receiver.wait_for(n + 2)
    headers, body = receiver.requests[n + 1]
    assert headers[SIGNATURE] == signature(new, body) and not verify(old, body, headers[SIGNATURE])
    assert client.call("GET", f"/v1/webhooks/{hook['id']}")["previousSecrets"] == []
    store = Webhooks(server.gms).secrets
    assert store.valid(PREFIX + hook["id"]) == {fingerprint(new): None}
    assert store.get(hook["urn"], fingerprint(old)) is None


def test_a_rotation_without_grace_ends_the_old_secret_at_once_and_may_set_the_new_one(server, receiver, dispatching):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["datasetProperties"]}, ok=(201,))
    first = hook["secret"]
    chosen = new_secret("chosen")
    rotated = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 0, "secret": chosen},
                          ok=(200,))
    assert rotated["secret"] == chosen and rotated["previousSecrets"] == []
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {fingerprint(chosen): None}  # the first one is gone
    dispatching()
    client.call("POST", "/v1/proposals", {"proposals": [mcp(ORDERS, "datasetProperties", {"description": "x"})]})
    ((headers, _),) = receiver.wait_for(1)
    body = receiver.requests[0][1]
    assert headers[SIGNATURE] == signature(chosen, body) and not verify(first, body, headers[SIGNATURE])
    history = client.call("GET", f"/v1/entities/{hook['urn'].replace(':', '%3A')}/aspects/{INFO}/versions")
    assert [v["value"]["secretFingerprint"] for v in history["versions"]] == [fingerprint(first), fingerprint(chosen)]


def test_rotations_in_a_row_shorten_the_grace_of_earlier_secrets_to_the_latest_one(server):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    second = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 3600}, ok=(200,))
    third = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 60}, ok=(200,))
    now = time.time() * 1000
    previous = {p["fingerprint"]: p["validUntil"] for p in third["previousSecrets"]}
    assert previous.keys() == {fingerprint(hook["secret"]), fingerprint(second["secret"])}
    assert all(now < until <= now + 60_000 for until in previous.values())
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {**previous, fingerprint(third["secret"]): None}
    fourth = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 0}, ok=(200,))
    assert fourth["previousSecrets"] == []  # 0 ends every earlier secret, also those in their grace period
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {fingerprint(fourth["secret"]): None}


@pytest.mark.parametrize(("body", "message"), [
    ({}, "graceSeconds must be a number of seconds from 0 to 2592000"),
    ({"graceSeconds": -1}, "graceSeconds must be"),
    ({"graceSeconds": True}, "graceSeconds must be"),
    ({"graceSeconds": "60"}, "graceSeconds must be"),
    ({"graceSeconds": 31 * 24 * 3600}, "graceSeconds must be"),
    ({"graceSeconds": 5, "secret": ""}, "secret must be a non-empty string"),
    ({"graceSeconds": 5, "secret": 7}, "secret must be a non-empty string"),
    ({"graceSeconds": 5, "url": "http://example.com"}, "unknown field(s) url"),
    ([5], "body must be a JSON object"),
])
def test_bad_rotations_are_refused_with_a_reason_and_change_nothing(server, body, message):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    status, answer = client.request("POST", f"/v1/webhooks/{hook['id']}/rotate", body)
    assert status == 400 and message in answer["message"]
    assert client.call("GET", f"/v1/webhooks/{hook['id']}")["secretFingerprint"] == fingerprint(hook["secret"])
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {fingerprint(hook["secret"]): None}


def test_rotating_an_unknown_webhook_is_404_and_removing_one_forgets_its_secrets(server):
    client = server.client()
    assert client.request("POST", "/v1/webhooks/nosuchhook/rotate", {"graceSeconds": 1})[0] == 404
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 600}, ok=(200,))
    assert len(Webhooks(server.gms).secrets.valid(hook["urn"])) == 2
    client.call("DELETE", f"/v1/webhooks/{hook['id']}")
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {}
    assert client.request("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 1})[0] == 404


def test_a_rotation_that_loses_a_race_is_412_and_leaves_no_secret_behind(server, monkeypatch):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    webhooks = Webhooks(server.gms)
    real_put = webhooks.secrets.put
    raced: list[str] = []

    def put_then_race(owner: str, secret: str) -> str:  # another rotation lands while this one is under way
        name = real_put(owner, secret)
        if secret == "the loser":
            raced.append(Webhooks(server.gms).rotate(SUPERUSER, hook["id"], {"graceSeconds": 0}).secret or "")
        return name

    monkeypatch.setattr(webhooks.secrets, "put", put_then_race)
    with pytest.raises(Exception, match="If-Version-Match") as refused:
        webhooks.rotate(SUPERUSER, hook["id"], {"graceSeconds": 0, "secret": "the loser"})
    assert getattr(refused.value, "http_status", None) == 412
    assert webhooks.secrets.valid(hook["urn"]) == {fingerprint(raced[0]): None}


# secrets are no metadata


def scan_files(data_dir: Path) -> list[bytes]:
    """Every file of the data directory but the secret store's (its log files too)."""
    return [p.read_bytes() for p in data_dir.rglob("*") if p.is_file() and not p.name.startswith(SECRETS_FILE)]


def raw_records(log: EventLog, names: Iterable[str]) -> list[Any]:
    return [record for topic in names for p in range(log.partitions(topic))
            for record in log.read(topic, p, 0, 1_000_000)]


def tail_output(env: dict[str, str], data_dir: Path, enough: Callable[[list[dict]], bool]) -> str:
    """What `lodestar tail --from earliest --json` prints until `enough` of its lines came."""
    proc = subprocess.Popen([*LODESTAR, "tail", "--from", "earliest", "--json", "--data-dir", str(data_dir)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        await_(lambda: enough([json.loads(line) for line in list(lines) if line.startswith("{")]),
               f"lodestar tail printing the changes (so far: {lines[-3:]})")
    finally:
        proc.terminate()
        proc.wait(WAIT)
        reader.join(WAIT)
    return "".join(lines)


def webhook_infos(changes: list[dict]) -> list[dict]:
    return [c for c in changes if c.get("aspectName") == INFO]


class Scenario:
    """Two webhooks, one with a secret chosen by the caller, one made by Lodestar; both rotated
    (with and without grace); a change delivered to both; every secret seen kept here."""

    def __init__(self, client: RestClient, receiver: Receiver):
        self.chosen = new_secret("chosen")
        first = client.call("POST", "/v1/webhooks", {"url": receiver.url, "secret": self.chosen,
                                                     "aspects": ["datasetProperties"]}, ok=(201,))
        second = client.call("POST", "/v1/webhooks", {"url": receiver.url + "?second",
                                                      "aspects": ["datasetProperties"]}, ok=(201,))
        self.made = second["secret"]
        self.first_new = client.call("POST", f"/v1/webhooks/{first['id']}/rotate", {"graceSeconds": 600},
                                     ok=(200,))["secret"]
        self.second_new = client.call("POST", f"/v1/webhooks/{second['id']}/rotate",
                                      {"graceSeconds": 0, "secret": new_secret("rotated")}, ok=(200,))["secret"]
        self.hooks = {first["id"]: first["urn"], second["id"]: second["urn"]}
        self.secrets = (self.chosen, self.made, self.first_new, self.second_new)
        self.fingerprints = {fingerprint(s) for s in self.secrets}
        self.client = client

    def check_api(self) -> None:
        """The API's reads show fingerprints, never a secret: the webhooks, and every version of
        their aspects."""
        shown = [self.client.call("GET", "/v1/webhooks")]
        for hook_id, urn in self.hooks.items():
            shown.append(self.client.call("GET", f"/v1/webhooks/{hook_id}"))
            versions = self.client.call("GET", f"/v1/entities/{urn.replace(':', '%3A')}/aspects/{INFO}/versions")
            assert len(versions["versions"]) == 2  # registered, rotated
            shown.append(versions)
            shown.append(self.client.call("GET", f"/v1/entities/{urn.replace(':', '%3A')}"))
        text = json.dumps(shown)
        assert leaked([text], *self.secrets) == []
        assert all(name in text for name in self.fingerprints)

    def check_deliveries(self, receiver: Receiver) -> None:
        receiver.wait_for(2)
        signed = {h["X-Lodestar-Webhook"]: (h[SIGNATURE], body) for h, body in receiver.requests}
        first, second = self.hooks
        header, body = signed[first]
        assert header == f"{signature(self.first_new, body)}, {signature(self.chosen, body)}"  # in its grace period
        header, body = signed[second]
        assert header == signature(self.second_new, body)

    def check_log(self, log: EventLog, names: Iterable[str]) -> None:
        """Not in any record of any topic, raw; the webhooks' MCLs are there, with fingerprints."""
        records = raw_records(log, names)
        assert leaked([r.value for r in records] + [r.key for r in records], *self.secrets) == []
        infos = [change for r in records if r.topic.endswith(topics.MCL_VERSIONED)
                 for change in [decode_change(default_codec(), r)] if change.aspect == INFO]
        assert len({(c.urn, c.version) for c in infos}) == 4  # each registration and rotation
        assert {c.value["secretFingerprint"] for c in infos} == self.fingerprints

    def check_tail(self, env: dict[str, str], data_dir: Path) -> None:
        out = tail_output(env, data_dir, lambda changes: len(webhook_infos(changes)) >= 4)
        assert leaked([out], *self.secrets) == []
        assert all(name in out for name in self.fingerprints)


def test_a_secret_is_never_metadata_on_the_embedded_stack(tmp_path: Path, receiver: Receiver):
    data_dir = tmp_path / "data"
    env = {**os.environ, **EMBEDDED, **LOOPBACK_WEBHOOKS_ENV}
    with ServeProcess(data_dir, env, "--no-webhooks") as served:
        scenario = Scenario(served.client(), receiver)
        hooks = subprocess.Popen([*LODESTAR, "webhooks", "--data-dir", str(data_dir)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:  # started after the rotations, as on the distributed stack: it signs as they left things
            assert "delivering changes to 2 webhook(s)" in hooks.stdout.readline()
            served.client().call("POST", "/v1/proposals", {"proposals": [
                mcp(ORDERS, "datasetProperties", {"description": "for both"})]})
            scenario.check_deliveries(receiver)
        finally:
            hooks.terminate()
            dispatched = hooks.communicate(timeout=WAIT)[0]
        assert hooks.returncode == 0 and leaked([dispatched], *scenario.secrets) == []
        scenario.check_api()
        log = SqliteEventLog(data_dir / "lodestar.db")
        try:
            scenario.check_log(log, topics.ALL)
        finally:
            log.close()
        scenario.check_tail(env, data_dir)
    assert leaked([served.output()], *scenario.secrets) == []  # nor in what the server printed (its access log)
    for command in (("restore-indices",), ("replay", "--topic", "versioned")):
        done = run_cli(*command, "--data-dir", str(data_dir), env=EMBEDDED, timeout=120)
        assert done.returncode == 0, done.stderr
        assert leaked([done.stdout, done.stderr], *scenario.secrets) == []
    files = scan_files(data_dir)
    assert len(files) >= 3 and leaked(files, *scenario.secrets) == []  # aspects, log, read models, offsets
    kept = (data_dir / SECRETS_FILE).read_bytes()
    assert leaked([kept], *scenario.secrets) == [scenario.chosen, scenario.first_new, scenario.second_new]


def test_a_secret_is_never_metadata_on_the_distributed_stack(stack: Stack, receiver: Receiver,  # noqa: F811
                                                              opensearch_url: str):
    api = stack.gms("api")
    stack.await_healthy(api)
    scenario = Scenario(api.client(), receiver)
    hooks = Lodestar("hooks", "webhooks", stack.root / "hooks", stack.env, stack.root / "hooks.out").start()
    stack.processes.append(hooks)  # started after the registrations: finds them through the secret store
    api.client().call("POST", "/v1/proposals", {"proposals": [
        mcp(ORDERS, "datasetProperties", {"description": "for both"})]})
    scenario.check_deliveries(receiver)
    scenario.check_api()
    scenario.check_log(stack.log, (*topics.ALL, SEQUENCES))
    scenario.check_tail(stack.env, stack.root / "tail")
    for command in (("restore-indices",), ("replay", "--topic", "versioned")):
        done = run_cli(*command, "--data-dir", str(stack.root / "tools"), env=stack.env, timeout=300)
        assert done.returncode == 0, done.stderr
    request = urllib.request.Request(f"{opensearch_url}/{stack.run}*/_search?size=10000", method="POST",
                                     data=b'{"query": {"match_all": {}}}',
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        documents = answer.read()
    assert json.loads(documents)["hits"]["hits"]  # the restored read models
    assert leaked([documents], *scenario.secrets) == []
    stack.session.cluster.refresh_schema_metadata()
    tables = stack.session.cluster.metadata.keyspaces[stack.run].tables
    cells: list[bytes | str] = []
    for table in sorted(set(tables) - {"secrets"}):  # aspects, outbox, producers, leases, lineage, runs
        for row in stack.session.execute(f'SELECT * FROM "{stack.run}"."{table}"'):
            cells += [value if isinstance(value, bytes) else str(value) for value in row if value is not None]
    assert "aspects" in tables and any(name in "".join(c for c in cells if isinstance(c, str))
                                       for name in scenario.fingerprints)
    assert leaked(cells, *scenario.secrets) == []
    kept = [row.secret for row in stack.session.execute(f'SELECT secret FROM "{stack.run}".secrets')]
    assert sorted(kept) == sorted([scenario.chosen, scenario.first_new, scenario.second_new])
    hooks.terminate()
    assert hooks.exit_status() == 0
    assert leaked([stack.outputs(10_000)], *scenario.secrets) == []


# upgrading


def legacy_webhook(gms: Gms, url: str, secret: str) -> str:
    """A registration as versions before this one wrote it: the secret in `webhookInfo`."""
    urn = PREFIX + "legacy1"
    info = {"url": url, "secret": secret, "entityTypes": [], "aspects": ["datasetProperties"], "changeTypes": [],
            "urnPattern": None, "description": "from before", "registeredAt": int(time.time() * 1000)}
    with gms.store.batch() as batch:
        for aspect, value in (("webhookKey", {"id": "legacy1"}), (INFO, info)):
            row = StoredAspect(urn, aspect, 1, orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode(),
                               {"version": "1"})
            assert batch.insert(row, [])
    return urn


def test_a_secret_an_earlier_version_kept_in_the_aspect_is_moved_into_the_secret_store_when_lodestar_starts(
        tmp_path: Path, receiver: Receiver):
    data_dir = tmp_path / "data"
    legacy = new_secret("legacy")
    gms = Gms.embedded(data_dir)
    urn = legacy_webhook(gms, receiver.url, legacy)
    gms.close()
    with ServeProcess(data_dir, {**EMBEDDED}, "--no-webhooks") as served:  # the API moves it when it starts
        client = served.client()
        info = client.call("GET", f"/v1/entities/{urn.replace(':', '%3A')}/aspects/{INFO}")
        assert "secret" not in info["value"] and legacy not in json.dumps(info)
        assert info["value"]["secretFingerprint"] == fingerprint(legacy) and info["version"] == 2
        assert client.call("GET", "/v1/webhooks")["webhooks"][0]["secretFingerprint"] == fingerprint(legacy)
    assert "moved the secrets of 1 webhook(s)" in served.output()

    gms = Gms.embedded(data_dir)
    dispatcher = WebhookDispatcher(gms, attempts=2, backoff=0.05, addresses=LOOPBACK_WEBHOOKS)  # nothing to move
    thread = threading.Thread(target=dispatcher.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        assert [v.version for v in gms.store.history(urn, INFO)] == [1, 2]
        assert "secret" in gms.store.history(urn, INFO)[0].value  # history keeps it: hence rotate (the docs say)
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "signed with the moved secret"})],
                  SUPERUSER)
        ((headers, _),) = receiver.wait_for(1)
        assert headers[SIGNATURE] == signature(legacy, receiver.requests[0][1])
        rotated = Webhooks(gms).rotate(SUPERUSER, "legacy1", {"graceSeconds": 0})
        await_(lambda: dispatcher.hooks[urn].fingerprint == fingerprint(rotated.secret), "the rotation followed")
        gms.apply([proposal(ORDERS, "datasetProperties", {"description": "signed with the new one only"})],
                  SUPERUSER)
        receiver.wait_for(2)
        headers, body = receiver.requests[1]
        assert headers[SIGNATURE] == signature(rotated.secret or "", body) and not verify(legacy, body,
                                                                                          headers[SIGNATURE])
        assert Webhooks(gms).secrets.valid(urn) == {fingerprint(rotated.secret or ""): None}
    finally:
        dispatcher.stop()
        thread.join(WAIT)
        gms.close()


def test_removing_a_webhook_hard_purges_its_versions_and_its_secrets(server):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    assert client.call("DELETE", f"/v1/webhooks/{hook['id']}?hard=true") == {"removed": hook["id"], "hard": True}
    urn = hook["urn"].replace(":", "%3A")
    assert client.request("GET", f"/v1/entities/{urn}/aspects/{INFO}/versions")[0] == 404
    assert server.gms.store.history(hook["urn"], INFO) == []
    assert Webhooks(server.gms).secrets.valid(hook["urn"]) == {}
    assert client.call("GET", "/v1/webhooks")["webhooks"] == []


def test_a_dispatcher_reading_the_log_from_its_start_keeps_the_newest_registration(server):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, ok=(201,))
    rotated = client.call("POST", f"/v1/webhooks/{hook['id']}/rotate", {"graceSeconds": 0}, ok=(200,))
    dispatcher = WebhookDispatcher(server.gms)  # a new group: it reads the registration's MCLs again, oldest first
    assert dispatcher.hooks[hook["urn"]].version == 2
    log = server.gms.log
    (registered, _) = [decode_change(default_codec(), r) for r in raw_records(log, [topics.MCL_VERSIONED])
                       if r.key == hook["urn"] and b"webhookInfo" in r.value]
    assert registered.version == 1
    dispatcher._follow(registered)
    assert dispatcher.hooks[hook["urn"]].fingerprint == fingerprint(rotated["secret"])  # not back to the first
