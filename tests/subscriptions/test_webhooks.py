"""Webhooks: registration through the API (stored as MCPs), delivery of matching changes to a
real local HTTP receiver with an HMAC signature, retries with backoff, dead letters in the API."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from gms.access import SUPERUSER
from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.eventlog.kafka import KafkaEventLog
from lodestar.webhook_delivery import WebhookDispatcher, signature
from lodestar.webhooks import Webhooks
from tests.support.backends import SESSION_TIMEOUT_MS, drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, mcp, proposal
from tests.support.processes import LODESTAR, ServeProcess
from tests.support.server import LOOPBACK_WEBHOOKS, LOOPBACK_WEBHOOKS_ENV, LiveServer
from tests.support.webhook_receiver import Receiver

WAIT = 20.0
ORDERS, ITEMS = dataset_urn("db.orders"), dataset_urn("db.items")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def dispatching(server: LiveServer) -> Iterator[list[WebhookDispatcher]]:
    """Starts the dispatcher (after the test registered its webhooks) in a thread; stops it after."""
    started: list[tuple[WebhookDispatcher, threading.Thread]] = []

    def start(**options) -> WebhookDispatcher:
        dispatcher = WebhookDispatcher(server.gms, **{"attempts": 3, "backoff": 0.05, "timeout": 5.0,
                                                      "addresses": LOOPBACK_WEBHOOKS, **options})
        thread = threading.Thread(target=dispatcher.run, kwargs={"handle_signals": False})
        thread.start()
        started.append((dispatcher, thread))
        dispatcher.test_thread = thread
        return dispatcher

    yield start
    for dispatcher, thread in started:
        dispatcher.stop()
        thread.join(WAIT)


def propose(server: LiveServer, *mcps: dict) -> None:
    server.client().call("POST", "/v1/proposals", {"proposals": list(mcps)})


def test_matching_changes_are_posted_signed_to_each_webhook(server, receiver, dispatching):
    client = server.client()
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "before any webhook"}))
    tags = client.call("POST", "/v1/webhooks", {"url": receiver.url, "secret": "s3cret", "aspects": ["globalTags"]},
                       ok=(201,))
    items = client.call("POST", "/v1/webhooks", {"url": receiver.url + "?items", "urnPattern": "%db.items%",
                                                 "changeTypes": ["UPSERT"]}, ok=(201,))
    assert tags["secret"] == "s3cret" and len(items["secret"]) > 20 and tags["aspects"] == ["globalTags"]
    dispatching()
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "not for either"}),
            mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
            mcp(ITEMS, "datasetProperties", {"description": "for items"}))
    propose(server, mcp(ITEMS, "globalTags", {"tags": []}))  # for both
    requests = receiver.wait_for(5)
    assert receiver.settled() == 5
    got = sorted((h["X-Lodestar-Webhook"], b["change"]["entityUrn"], b["change"]["aspectName"]) for h, b in requests)
    assert got == sorted([(tags["id"], ORDERS, "globalTags"), (tags["id"], ITEMS, "globalTags"),
                          (items["id"], ITEMS, "datasetKey"), (items["id"], ITEMS, "datasetProperties"),
                          (items["id"], ITEMS, "globalTags")])
    secrets = {tags["id"]: "s3cret", items["id"]: items["secret"]}
    for headers, body in receiver.requests:
        key = secrets[headers["X-Lodestar-Webhook"]].encode()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        assert headers["X-Lodestar-Signature"] == expected and headers["Content-Type"] == "application/json"
    (tagged,) = [b for h, b in receiver.wait_for(5) if b["change"]["entityUrn"] == ORDERS]
    assert tagged["change"]["aspect"] == {"tags": [{"tag": "urn:li:tag:pii"}]} and tagged["change"]["version"] == 1
    assert "metadataChange" not in tagged  # only changes of CDAP tags and properties carry one
    assert tagged["delivery"] == f"{tagged['change']['topic']}/{tagged['change']['partition']}/" \
                                 f"{tagged['change']['offset']}"
    listed = client.call("GET", "/v1/webhooks")["webhooks"]
    assert {hook["id"] for hook in listed} == {tags["id"], items["id"]} and all("secret" not in h for h in listed)
    assert len(client.call("GET", f"/v1/entities/urn%3Ali%3Awebhook%3A{tags['id']}/aspects/webhookInfo/versions")
               ["versions"]) == 1  # stored as an aspect, versioned


def test_a_change_of_tags_or_properties_carries_its_change_record(server, receiver, dispatching):
    server.client().call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["userScopeMetadata"]}, ok=(201,))
    dispatching()
    propose(server, mcp(ORDERS, "userScopeMetadata", {"tags": ["finance"], "properties": {"owner": "hr"}}))
    propose(server, mcp(ORDERS, "userScopeMetadata", {"tags": ["finance", "PII"], "properties": {"owner": "security"}}))
    first, second = (body["metadataChange"] for _, body in receiver.wait_for(2))
    assert first["scope"] == "USER" and first["urn"] == ORDERS and first["updater"] == SUPERUSER
    assert first["changes"] == {"additions": {"properties": {"owner": "hr"}, "tags": ["finance"]},
                                "deletions": {"properties": {}, "tags": []}}
    assert second["changes"] == {"additions": {"properties": {"owner": "security"}, "tags": ["PII"]},
                                 "deletions": {"properties": {"owner": "hr"}, "tags": []}}
    assert second["previous"] == first["updated"]


def test_a_failing_url_is_retried_and_then_dead_lettered(server, receiver, dispatching):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["datasetProperties"]}, ok=(201,))
    receiver.statuses = [500, 503]  # the third send succeeds
    dispatching()
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "third time lucky"}))
    requests = receiver.wait_for(3)
    assert len({json.dumps(body, sort_keys=True) for _, body in requests}) == 1  # the same delivery each time
    assert client.call("GET", f"/v1/webhooks/{hook['id']}/dead-letters")["deadLetters"] == []

    receiver.statuses = [502] * 3  # every send of the next change fails
    propose(server, mcp(ITEMS, "datasetProperties", {"description": "never accepted"}))
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "delivered after the dead one"}))
    requests = receiver.wait_for(7)
    assert [b["change"]["aspect"]["description"] for _, b in requests[3:]] == ["never accepted"] * 3 + [
        "delivered after the dead one"]
    deadline = time.monotonic() + WAIT
    while not (dead := client.call("GET", f"/v1/webhooks/{hook['id']}/dead-letters")["deadLetters"]):
        assert time.monotonic() < deadline, "no dead letter listed"
        time.sleep(0.05)
    (letter,) = dead
    assert letter["attempts"] == 3 and letter["lastError"] == "HTTP 502"
    assert json.loads(letter["body"])["change"]["aspect"] == {"description": "never accepted"}
    assert letter["messageId"] == json.loads(letter["body"])["delivery"]


def test_a_failing_webhook_does_not_hold_the_others_up(server, receiver, dispatching):
    dead = Receiver()
    dead.statuses = [500] * 100
    try:
        client = server.client()
        client.call("POST", "/v1/webhooks", {"url": dead.url, "aspects": ["datasetProperties"]}, ok=(201,))
        client.call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["datasetProperties"]}, ok=(201,))
        dispatching(attempts=3, backoff=5.0)  # the dead URL's first change is retried 5 s, then 10 s later
        for n in range(3):
            propose(server, mcp(ORDERS, "datasetProperties", {"description": f"orders {n}"}),
                    mcp(ITEMS, "datasetProperties", {"description": f"items {n}"}))
        live = receiver.wait_for(6)
        assert len(dead.requests) == 1  # the live URL had all six before the dead one's first retry
        for urn in (ORDERS, ITEMS):  # and in version order per URN
            assert [b["change"]["version"] for _, b in live if b["change"]["entityUrn"] == urn] == [1, 2, 3]
    finally:
        dead.close()


def test_retries_back_off_doubling(server, receiver, dispatching):
    server.client().call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["datasetProperties"]},
                         ok=(201,))
    receiver.statuses = [500, 500, 500]  # the fourth send succeeds
    dispatching(attempts=4, backoff=0.3)
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "retried"}))
    receiver.wait_for(4)
    times = receiver.times[:4]
    gaps = [times[i + 1] - times[i] for i in range(3)]
    assert all(gap >= nominal - 0.01 for gap, nominal in zip(gaps, (0.3, 0.6, 1.2), strict=True)), gaps
    assert gaps[1] > 1.5 * gaps[0] and gaps[2] > 1.5 * gaps[1], gaps
    assert receiver.settled() == 4


def test_stop_ends_a_backoff_at_once_and_the_change_is_sent_again_after_a_restart(server, receiver, dispatching):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": receiver.url, "aspects": ["datasetProperties"]}, ok=(201,))
    first = dispatching(attempts=3, backoff=60.0)
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "delivered"}))
    receiver.wait_for(1)
    receiver.statuses = [500]
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "cut short"}))
    receiver.wait_for(2)
    asked = time.monotonic()
    first.stop()  # during the 60 s wait before the second send
    first.test_thread.join(WAIT)
    assert not first.test_thread.is_alive() and time.monotonic() - asked < 5.0
    assert (first.delivered, first.dead) == (1, 0)  # the second neither delivered nor dead: not committed
    dispatching(attempts=3, backoff=0.05)
    requests = receiver.wait_for(3)
    assert requests[2][1] == requests[1][1]  # the same delivery, sent again; the first one was committed
    assert receiver.settled() == 3
    assert client.call("GET", f"/v1/webhooks/{hook['id']}/dead-letters")["deadLetters"] == []


def test_lodestar_webhooks_leaves_at_once_on_sigterm_during_a_backoff(tmp_path, receiver):
    data_dir = tmp_path / "data"
    gms = Gms.embedded(data_dir)
    try:
        Webhooks(gms, addresses=LOOPBACK_WEBHOOKS).register(SUPERUSER, {"url": receiver.url,
                                                                        "aspects": ["datasetProperties"]})
        receiver.statuses = [500] * 10
        env = {**os.environ, "LODESTAR_EVENT_LOG": "sqlite", "LODESTAR_ASPECT_STORE": "sqlite",
               **LOOPBACK_WEBHOOKS_ENV}
        proc = subprocess.Popen([*LODESTAR, "webhooks", "--data-dir", str(data_dir), "--backoff", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert "delivering changes to 1 webhook(s)" in proc.stdout.readline()
            gms.apply([proposal(ORDERS, "datasetProperties", {"description": "x"})], SUPERUSER)
            receiver.wait_for(1)
            asked = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=WAIT)
            assert proc.returncode == 0 and time.monotonic() - asked < 5.0, err
            assert "0 delivered, 0 dead letter(s)" in out
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        gms.close()


def test_a_removed_webhook_gets_nothing_more(server, receiver, dispatching):
    client = server.client()
    hook = client.call("POST", "/v1/webhooks", {"url": receiver.url, "entityTypes": ["dataset"]}, ok=(201,))
    dispatching()
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "one"}))
    receiver.wait_for(2)  # key aspect and properties
    client.call("DELETE", f"/v1/webhooks/{hook['id']}")
    assert client.request("GET", f"/v1/webhooks/{hook['id']}")[0] == 404
    sentinel = client.call("POST", "/v1/webhooks", {"url": receiver.url + "?sentinel", "aspects": ["status"]},
                           ok=(201,))
    propose(server, mcp(ORDERS, "datasetProperties", {"description": "two"}))
    propose(server, mcp(ORDERS, "status", {"removed": False}))
    requests = receiver.wait_for(3)
    assert [h["X-Lodestar-Webhook"] for h, _ in requests[2:]] == [sentinel["id"]]


@pytest.mark.parametrize(("body", "message"), [
    ({"url": "ftp://example.com/x"}, "is not an http(s) URL"),
    ({"url": "http://example.com/x", "aspects": ["noSuchAspect"]}, "aspects: unknown aspect 'noSuchAspect'"),
    ({"url": "http://example.com/x", "changeTypes": ["MERGE"]}, "changeTypes: unknown changeType 'MERGE'"),
    ({"url": "http://example.com/x", "colour": "blue"}, "unknown field(s) colour"),
    ([1, 2], "body must be a JSON object"),
    ({"url": "http://example.com/x", "urnPattern": "%" * 1001}, "urnPattern: 1001 characters, over the limit of 1000"),
])
def test_bad_registrations_are_refused_with_a_reason(server, body, message):
    status, answer = server.client().request("POST", "/v1/webhooks", body)
    assert status == 400 and message in answer["message"]
    assert server.client().call("GET", "/v1/webhooks")["webhooks"] == []


def test_delivery_from_the_kafka_log(tmp_path, kafka_bootstrap, receiver):
    prefix = unique_name("webhooks") + "-"
    gms = Gms(SqliteAspectStore(tmp_path / "lodestar.db"),
              KafkaEventLog(kafka_bootstrap, prefix, session_timeout_ms=SESSION_TIMEOUT_MS, timeout=WAIT))
    try:
        hook = Webhooks(gms, addresses=LOOPBACK_WEBHOOKS).register(
            SUPERUSER, {"url": receiver.url, "secret": "k", "aspects": ["globalTags"]})
        dispatcher = WebhookDispatcher(gms, attempts=2, backoff=0.05, addresses=LOOPBACK_WEBHOOKS)
        thread = threading.Thread(target=dispatcher.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            gms.apply([proposal(ORDERS, "datasetProperties", {"description": "not sent"}),
                       proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})], SUPERUSER)
            ((headers, body),) = receiver.wait_for(1)
            assert receiver.settled() == 1  # the properties did not pass the filter
        finally:
            dispatcher.stop()
            thread.join(WAIT)
        assert headers["X-Lodestar-Webhook"] == hook.id and body["change"]["aspectName"] == "globalTags"
        assert headers["X-Lodestar-Signature"] == signature("k", receiver.requests[0][1])
    finally:
        gms.close()
        drop_kafka_names(kafka_bootstrap, prefix)


def test_lodestar_serve_delivers_to_webhooks_unless_told_not_to(tmp_path, receiver):
    cases = (((), True), (("--no-webhooks",), False),
             (("--workers", "2"), True), (("--workers", "2", "--no-webhooks"), False))  # workers: the first delivers
    for case, (extra, delivers) in enumerate(cases):
        before = len(receiver.requests)
        with ServeProcess(tmp_path / f"data{case}", LOOPBACK_WEBHOOKS_ENV, *extra) as served:
            client = served.client()
            assert client.request("POST", "/v1/webhooks", {"url": receiver.url, "secret": "k",
                                                           "aspects": ["globalTags"]})[0] == 201
            client.call("POST", "/v1/proposals", {"proposals": [
                mcp(ORDERS, "datasetProperties", {"description": "not sent"}),
                mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})]})
            if delivers:
                headers, body = receiver.wait_for(before + 1)[before]
                assert body["change"]["aspectName"] == "globalTags"
                assert headers["X-Lodestar-Signature"] == signature("k", receiver.requests[before][1])
            # the properties did not pass the filter; without the role nothing is sent (`lodestar webhooks` would)
            assert receiver.settled(0.5 if delivers else 3.0) == before + delivers


def test_an_urn_pattern_that_would_backtrack_a_regex_costs_deliveries_nothing(server, receiver, dispatching):
    """`%`s before a character the URN lacks: as a regular expression, each write of a long URN
    would hold the server for hours; matched as LIKE, at once."""
    client = server.client()
    hostile = client.call("POST", "/v1/webhooks", {"url": receiver.url, "urnPattern": "%%%%%%%%%%%%#"}, ok=(201,))
    fields = client.call("POST", "/v1/webhooks", {"url": receiver.url, "urnPattern": "%db.x_x%",
                                                  "aspects": ["status"]}, ok=(201,))
    dispatching()
    long = dataset_urn("db." + "x" * 3000)
    propose(server, mcp(long, "status", {"removed": False}))
    ((headers, body),) = receiver.wait_for(1)
    assert headers["X-Lodestar-Webhook"] == fields["id"] and body["change"]["entityUrn"] == long
    assert receiver.settled() == 1 and hostile["id"] != fields["id"]
