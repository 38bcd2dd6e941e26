"""A webhook receiver for tests: a real local HTTP server recording what it is sent."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.server import free_port

WAIT_S = 20.0  # a deadline for deliveries to arrive, generous for a busy machine


class Receiver:
    """An HTTP server on a free port that records each POST and answers the next status of
    `statuses` (then 200)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.times: list[float] = []  # time.monotonic() of each request's arrival
        self.statuses: list[int] = []
        self.lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.requests.append((dict(self.headers), body))
                    receiver.times.append(time.monotonic())
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.lock.notify_all()
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = WAIT_S) -> list[tuple[dict[str, str], dict]]:
        with self.lock:
            assert self.lock.wait_for(lambda: len(self.requests) >= count, timeout), \
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
