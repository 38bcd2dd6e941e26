"""A live embedded Lodestar server in a thread of the test process, and free ports."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from gms.service import Gms
from ingest.rest import RestClient
from lodestar.api.app import create_app
from lodestar.api.auth import ADMIN, TokenAuth
from lodestar.webhook_addresses import ALLOW_ENV, AddressRules
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor

TOKEN = "test-admin-token"
# The operator's setting that lets webhooks deliver to loopback, where the tests' receivers listen
# (by default Lodestar refuses non-public addresses): for servers in this process and in others.
LOOPBACK = "127.0.0.0/8"
LOOPBACK_WEBHOOKS = AddressRules.parse(LOOPBACK)
LOOPBACK_WEBHOOKS_ENV = {ALLOW_ENV: LOOPBACK}


_PORTS = random.SystemRandom()  # not the random module's state, which a test may seed
_HANDED_OUT: set[int] = set()  # never handed out twice by this process: a server binds its port later


def free_port() -> int:
    """A port free now, below the kernel's ephemeral range: a port the kernel hands out (bind to
    0) may be taken as the source port of some client connection before the server binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = _PORTS.randrange(max(1024, low - 12000), low)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port


@dataclass
class LiveServer:
    url: str
    token: str
    gms: Gms

    def client(self, token: str | None = TOKEN) -> RestClient:
        return RestClient(self.url, token)


class ServerThread(threading.Thread):
    def __init__(self, app: web.Application, port: int):
        super().__init__(daemon=True, name="test-gms")
        self.app, self.port = app, port
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(self.app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", self.port)
        self.loop.run_until_complete(site.start())
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.runner.cleanup())
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.join(timeout=10)


def start_server(gms: Gms, read_models: SqliteReadModels, processor: MclProcessor | None = None,
                 webhook_addresses: AddressRules = LOOPBACK_WEBHOOKS) -> tuple[LiveServer, ServerThread]:
    """A live server on a free port; its webhooks may point to loopback unless `webhook_addresses` says otherwise."""
    auth = TokenAuth()
    auth.add(TOKEN, ADMIN)
    port = free_port()
    thread = ServerThread(create_app(gms, auth, read_models, processor, webhook_addresses=webhook_addresses), port)
    thread.start()
    assert thread.ready.wait(60), "server did not start"
    return LiveServer(f"http://127.0.0.1:{port}", TOKEN, gms), thread
