"""A webhook receiver for tests: a real HTTP server on a loopback port recording what it is sent."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gms.service import Gms
from lodestar.webhook_addresses import AddressRules
from lodestar.webhook_delivery import WebhookDispatcher
from tests.support.server import LOOPBACK_WEBHOOKS, free_port

WAIT = 20.0


class Receiver:
    """An HTTP server on a free port that records each POST (and GET) and answers the next status of
    `statuses` (then 200), with a Location header when `location` is set (a redirect)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.times: list[float] = []  # time.monotonic() of each request's arrival
        self.statuses: list[int] = []
        self.location: str | None = None
        self.lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.requests.append((dict(self.headers), body))
                    receiver.times.append(time.monotonic())
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.lock.notify_all()
                self.send_response(status)
                if receiver.location is not None:
                    self.send_header("Location", receiver.location)
                self.end_headers()

            do_GET = do_POST  # noqa: N815 (a redirect followed arrives as a GET)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int) -> list[tuple[dict[str, str], dict]]:
        with self.lock:
            assert self.lock.wait_for(lambda: len(self.requests) >= count, WAIT), \
                f"{len(self.requests)} of {count} requests arrived"
            return [(headers, json.loads(body)) for headers, body in self.requests]

    def settled(self, seconds: float = 0.5) -> int:
        """How many requests came, once none came for `seconds`."""
        with self.lock:
            while self.lock.wait(seconds):
                pass
            return len(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class DispatcherThreads:
    """Webhook dispatchers a test runs in threads of its own (short backoff and timeout, loopback
    receivers allowed unless told otherwise); `stop_all` stops them and waits for their threads."""

    def __init__(self) -> None:
        self.started: list[tuple[WebhookDispatcher, threading.Thread]] = []

    def start(self, gms: Gms, attempts: int, addresses: AddressRules = LOOPBACK_WEBHOOKS) -> WebhookDispatcher:
        dispatcher = WebhookDispatcher(gms, attempts=attempts, backoff=0.05, timeout=5.0, addresses=addresses)
        thread = threading.Thread(target=dispatcher.run, kwargs={"handle_signals": False})
        thread.start()
        self.started.append((dispatcher, thread))
        return dispatcher

    def stop_all(self) -> None:
        for dispatcher, thread in self.started:
            dispatcher.stop()
            thread.join(WAIT)
