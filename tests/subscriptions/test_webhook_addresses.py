"""Webhook URLs an attacker would choose: non-http(s) schemes, loopback, private, link-local and
cloud-metadata addresses in any notation, redirects. They are refused when a webhook is
registered (unless the operator allows the network) and again at each delivery; a delivery that
fails in any way is that delivery's failure (retried, then a dead letter): the sender goes on
and the `webhooks` group keeps committing."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gms.access import SUPERUSER
from gms.service import Gms, Limits
from ingest import topics
from ingest.proposal import Proposal
from lodestar.webhook_addresses import AddressRefused, AddressRules
from lodestar.webhook_delivery import GROUP, WebhookDispatcher
from lodestar.webhooks import INFO, PREFIX, Webhooks
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.support.builders import dataset_urn, mcp
from tests.support.processes import LODESTAR, ServeProcess, run_cli
from tests.support.server import LOOPBACK_WEBHOOKS, LiveServer, start_server
from tests.support.webhook_receiver import DispatcherThreads, Receiver

WAIT = 20.0
ORDERS = dataset_urn("db.orders")
REFUSED_BY_DEFAULT = [
    ("http://127.0.0.1:9/hook", "127.0.0.1 is a loopback address"),
    ("http://0x7f000001:9/hook", "127.0.0.1 is a loopback address"),  # hex
    ("http://2130706433:9/hook", "127.0.0.1 is a loopback address"),  # decimal
    ("http://0177.0.0.1:9/hook", "127.0.0.1 is a loopback address"),  # octal
    ("http://localhost:9/hook", "is a loopback address"),  # a name, resolved
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://10.1.2.3/hook", "10.1.2.3 is a private address"),
    ("http://192.168.0.1/hook", "192.168.0.1 is a private address"),
    ("http://100.64.0.1/hook", "100.64.0.1 is a non-public address"),  # shared address space
    ("http://0.0.0.0:9/hook", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.1/hook", "224.0.0.1 is a multicast address"),
    ("http://[::1]:9/hook", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]:9/hook", "::ffff:7f00:1 (127.0.0.1) is a loopback address"),  # IPv4-mapped
    ("http://[::ffff:169.254.169.254]/", "(169.254.169.254) is a link-local address"),
    ("http://[2002:7f00:1::]/", "(127.0.0.1) is a loopback address"),  # 6to4
    ("http://[64:ff9b::a00:1]/", "(10.0.0.1) is a private address"),  # NAT64
    ("http://[fe80::1]/hook", "fe80::1 is a link-local address"),
    ("http://[fd00::1]/hook", "fd00::1 is a private address"),
    ("file:///etc/passwd", "is not an http(s) URL"),
    ("gopher://127.0.0.1:9/x", "is not an http(s) URL"),
    ("http:///no-host", "is not an http(s) URL"),
    ("http://127.0.0.1:port/x", "is not an http(s) URL"),
]


def _server(tmp_path: Path, addresses: AddressRules) -> Iterator[LiveServer]:
    gms = Gms.embedded(tmp_path / "data", Limits(max_aspect_bytes=64 * 1024, max_request_bytes=1024 * 1024))
    read_models = SqliteReadModels.in_data_dir(tmp_path / "data", gms.registry)
    processor = MclProcessor(gms.registry, gms.codec, read_models)
    stop = threading.Event()
    indexing = threading.Thread(target=processor.run, args=(gms.log, stop, 0.05), daemon=True)
    indexing.start()
    live, thread = start_server(gms, read_models, processor, webhook_addresses=addresses)
    yield live
    thread.stop()
    stop.set()
    indexing.join(10)
    read_models.close()
    gms.close()


@pytest.fixture
def strict_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A live server with the default address rules: public addresses only."""
    yield from _server(tmp_path, AddressRules())


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def dispatching(server: LiveServer) -> Iterator[Callable[..., WebhookDispatcher]]:
    threads = DispatcherThreads()
    yield lambda addresses=LOOPBACK_WEBHOOKS: threads.start(server.gms, attempts=2, addresses=addresses)
    threads.stop_all()


def await_(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {WAIT:g}s"
        time.sleep(0.05)  # polling a condition, with a deadline
    return value


def dead_letters(server: LiveServer, webhook_id: str) -> list[dict]:
    return server.client().call("GET", f"/v1/webhooks/{webhook_id}/dead-letters")["deadLetters"]


@pytest.mark.parametrize(("url", "reason"), REFUSED_BY_DEFAULT)
def test_registering_a_url_to_a_non_public_address_is_refused_by_default(strict_server, url, reason):
    status, answer = strict_server.client().request("POST", "/v1/webhooks", {"url": url})
    assert status == 400 and answer["error"] == "invalid_webhook", answer
    assert answer["message"].startswith("url: ") and reason in answer["message"]
    assert strict_server.client().call("GET", "/v1/webhooks")["webhooks"] == []


def test_a_public_address_is_accepted_and_the_operator_allows_networks_by_cidr():
    AddressRules().check_url("https://93.184.216.34/hook")  # public: no error
    AddressRules().check_url("http://[2606:4700:4700::1111]/hook")
    allowed = AddressRules.parse("127.0.0.0/8, 10.0.0.0/8")
    allowed.check_url("http://127.0.0.1:9/hook")
    allowed.check_url("http://0x0a010203/hook")  # 10.1.2.3
    allowed.check_url("http://[::ffff:127.0.0.1]/hook")  # the allowed IPv4 address, mapped
    with pytest.raises(AddressRefused, match="169.254.169.254 is a link-local address"):
        allowed.check_url("http://169.254.169.254/")
    AddressRules.parse("all").check_url("http://169.254.169.254/")
    with pytest.raises(AddressRefused, match="is not an http"):
        AddressRules.parse("all").check_url("file:///etc/passwd")
    with pytest.raises(ValueError, match="'10.0.0.300/8' is not a CIDR"):
        AddressRules.parse("10.0.0.300/8")


def test_lodestar_serve_refuses_loopback_unless_the_operator_allows_it(tmp_path):
    body = {"url": "http://127.0.0.1:9/hook"}
    with ServeProcess(tmp_path / "strict") as served:
        status, answer = served.client().request("POST", "/v1/webhooks", body)
        assert status == 400 and "127.0.0.1 is a loopback address" in answer["message"]
    with ServeProcess(tmp_path / "allowing", None, "--webhook-allow-private", "127.0.0.1/32") as served:
        assert served.client().request("POST", "/v1/webhooks", body)[0] == 201
        status, answer = served.client().request("POST", "/v1/webhooks", {"url": "http://169.254.169.254/"})
        assert status == 400 and "169.254.169.254 is a link-local address" in answer["message"]
    with ServeProcess(tmp_path / "env", {"LODESTAR_WEBHOOK_ALLOW_PRIVATE": "all"}) as served:
        assert served.client().request("POST", "/v1/webhooks", {"url": "http://169.254.169.254/"})[0] == 201


def test_a_bad_allow_setting_is_one_line_on_stderr(tmp_path):
    done = run_cli("webhooks", "--data-dir", str(tmp_path / "data"), "--webhook-allow-private", "10.0.0/33",
                   timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "--webhook-allow-private: '10.0.0/33' is not a CIDR" in done.stderr


def test_delivery_checks_the_address_again(server, receiver, dispatching):
    """Registered while loopback was allowed (or the name resolved elsewhere then): the
    dispatcher with the default rules refuses to connect, and dead-letters the change."""
    hook = server.client().call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["globalTags"]}, ok=(201,))
    dispatching(AddressRules())
    server.client().call("POST", "/v1/proposals", {"proposals": [
        mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})]})
    (letter,) = await_(lambda: dead_letters(server, hook["id"]), "the dead letter")
    assert letter["lastError"] == "refused: host '127.0.0.1': 127.0.0.1 is a loopback address" \
                                  " (allow it with LODESTAR_WEBHOOK_ALLOW_PRIVATE)"
    assert receiver.requests == []


def test_a_redirect_is_not_followed(server, receiver, dispatching):
    elsewhere = Receiver()
    try:
        receiver.statuses = [302] * 10
        receiver.location = elsewhere.url + "?stolen"
        hook = server.client().call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["globalTags"]},
                                    ok=(201,))
        dispatching()
        server.client().call("POST", "/v1/proposals", {"proposals": [
            mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})]})
        (letter,) = await_(lambda: dead_letters(server, hook["id"]), "the dead letter")
        assert letter["lastError"] == "HTTP 302 (redirects are not followed)" and letter["attempts"] == 2
        assert len(receiver.requests) == 2 and elsewhere.requests == []  # the signature went nowhere else
    finally:
        elsewhere.close()


def _written_directly(gms: Gms, hook_id: str, url: str) -> str:
    """A webhook whose `webhookInfo` was written as a plain proposal, past registration's checks."""
    urn = PREFIX + hook_id
    info = {"url": url, "secretFingerprint": Webhooks(gms).secrets.put(urn, "k"), "previousSecrets": [],
            "entityTypes": [], "aspects": ["globalTags"], "changeTypes": [], "urnPattern": None,
            "description": None, "registeredAt": int(time.time() * 1000)}
    (result,) = gms.apply([Proposal("webhook", urn, "UPSERT", INFO, info)], SUPERUSER)
    assert result.failure is None
    return urn


@pytest.mark.parametrize(("url", "error"), [
    ("file:///etc/passwd", "refused: 'file:///etc/passwd' is not an http(s) URL"),
    ("http://[::1", "refused: 'http://[::1' is not an http(s) URL"),
    ("{receiver}/x\x00", "InvalidURL: "),  # the request itself fails (a NUL in its path), the receiver up
])
def test_a_bad_url_written_directly_is_a_failed_delivery_and_the_group_keeps_committing(
        server, receiver, dispatching, url, error):
    _written_directly(server.gms, "badurl", url.format(receiver=receiver.url))
    server.client().call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["globalTags"]}, ok=(201,))
    dispatcher = dispatching()
    for n in range(3):
        server.client().call("POST", "/v1/proposals", {"proposals": [
            mcp(ORDERS, "globalTags", {"tags": [{"tag": f"urn:li:tag:t{n}"}]})]})
    letters = await_(lambda: len(found := dead_letters(server, "badurl")) == 3 and found, "three dead letters")
    assert all(letter["attempts"] == 2 and letter["lastError"].startswith(error) for letter in letters), letters
    assert sorted(json.loads(letter["body"])["change"]["aspect"]["tags"][0]["tag"] for letter in letters) == [
        f"urn:li:tag:t{n}" for n in range(3)]
    assert len(receiver.wait_for(3)) == 3 and dispatcher.dead == 3  # the other webhook got every change
    log, topic = server.gms.log, topics.MCL_VERSIONED
    await_(lambda: all(log.committed(GROUP, topic, p) == log.end_offset(topic, p)
                       for p in range(log.partitions(topic))), "the webhooks group committed every change")


def test_lodestar_webhooks_warns_at_start_of_each_webhook_whose_url_is_refused(tmp_path, receiver):
    data_dir = tmp_path / "data"
    gms = Gms.embedded(data_dir)
    try:
        _written_directly(gms, "fileurl", "file:///etc/passwd")
        loopback = Webhooks(gms, addresses=LOOPBACK_WEBHOOKS).register(SUPERUSER, {"url": receiver.url})
    finally:
        gms.close()
    proc = subprocess.Popen([*LODESTAR, "webhooks", "--data-dir", str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "LODESTAR_EVENT_LOG": "sqlite",
                                                                    "LODESTAR_ASPECT_STORE": "sqlite"})
    try:
        assert "delivering changes to 2 webhook(s)" in proc.stdout.readline()
        warnings = {proc.stderr.readline(), proc.stderr.readline()}
    finally:
        proc.terminate()
        proc.communicate(timeout=WAIT)
    assert warnings == {
        "lodestar: warning: webhook fileurl: url: 'file:///etc/passwd' is not an http(s) URL; its changes will be"
        " dead letters until it is registered anew (or the address allowed)\n",
        f"lodestar: warning: webhook {loopback.id}: url: host '127.0.0.1': 127.0.0.1 is a loopback address (allow it"
        " with LODESTAR_WEBHOOK_ALLOW_PRIVATE); its changes will be dead letters until it is registered anew (or"
        " the address allowed)\n"}
