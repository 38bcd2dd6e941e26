"""Security headers on every answer: the web UI's page and files carry a Content-Security-Policy
allowing only Lodestar's own scripts, styles and API; every other answer (JSON, errors, refusals)
one allowing nothing; none may be framed, sniffed or leak its address as a referrer."""

from __future__ import annotations

import pytest
import requests

from lodestar.api.security_headers import API_POLICY, UI_POLICY
from tests.support.server import TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}
COMMON = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


@pytest.mark.parametrize(("method", "path", "headers", "policy"), [
    ("GET", "/", {}, UI_POLICY),
    ("GET", "/ui/app.js", {}, UI_POLICY),
    ("GET", "/ui/no-such-file.js", {}, UI_POLICY),
    ("GET", "/health", {}, API_POLICY),
    ("GET", "/openapi.json", {}, API_POLICY),
    ("GET", "/v1/entities/urn%3Ali%3Acorpuser%3Anobody", AUTH, API_POLICY),  # 404
    ("GET", "/v1/webhooks", {}, API_POLICY),  # 401
    ("POST", "/v1/proposals", AUTH, API_POLICY),  # 400: no body
])
def test_every_answer_carries_the_security_headers(server, method, path, headers, policy):
    answer = requests.request(method, server.url + path, headers=headers, timeout=30)
    assert {name: answer.headers.get(name) for name in COMMON} == COMMON, (answer.status_code, path)
    assert answer.headers["Content-Security-Policy"] == policy


def test_the_ui_policy_forbids_inline_and_foreign_scripts_and_framing():
    directives = dict(part.strip().split(" ", 1) for part in UI_POLICY.split(";"))
    assert directives["script-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'" and directives["connect-src"] == "'self'"
    assert API_POLICY.startswith("default-src 'none'")
