"""Running GMS processes: one in-process server, or several workers behind one listener.

With several workers, the parent process accepts connections and hands them round-robin
to the workers over Unix sockets (SCM_RIGHTS), so the load spreads evenly however few
connections there are; each worker runs its own GMS on the shared data directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from gms.api.app import create_app
from gms.api.auth import ADMIN, TokenAuth
from gms.service import Gms


class ServeError(Exception):
    """The server could not start: a taken port, an unusable data directory."""


def _open_gms(data_dir: Path) -> Gms:
    try:
        return Gms.embedded(data_dir)
    except OSError as err:
        raise ServeError(f"cannot open data directory {data_dir}: {err}") from None


def _auth(token: str) -> TokenAuth:
    auth = TokenAuth()
    auth.add(token, ADMIN)
    return auth


def _with_mcp_consumer(gms: Gms, run: Callable[[], None]) -> None:
    """Run the server while a thread applies proposals from the MCP topic."""
    stop = threading.Event()
    consumer = threading.Thread(target=gms.consume_proposals, args=(stop,), name="mcp-consumer", daemon=True)
    consumer.start()
    try:
        run()
    finally:
        stop.set()
        consumer.join(timeout=5)


def serve_one(data_dir: Path, host: str, port: int, token: str) -> None:
    """GMS in this process, until SIGINT or SIGTERM."""
    gms = _open_gms(data_dir)
    try:
        app = create_app(gms, _auth(token))
        _with_mcp_consumer(gms, lambda: _run_app(app, host, port))
    finally:
        gms.close()


def _run_app(app: web.Application, host: str, port: int) -> None:
    try:
        web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)
    except OSError as err:
        raise ServeError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def serve_workers(data_dir: Path, host: str, port: int, token: str, workers: int) -> int:
    """`workers` GMS processes behind one listening socket; returns the exit status."""
    try:
        listener = socket.create_server((host, port), backlog=1024)
    except OSError as err:
        raise ServeError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    channels, children = [], []
    for worker in range(workers):
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            listener.close()
            parent_end.close()
            os._exit(_worker_main(child_end, data_dir, token, consume=worker == 0))
        child_end.close()
        channels.append(parent_end)
        children.append(pid)

    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        stopping.set()
        listener.close()  # wakes accept()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    turn = 0
    while not stopping.is_set():
        try:
            conn, _ = listener.accept()
        except OSError:
            break
        with conn:
            try:
                socket.send_fds(channels[turn % workers], [b"c"], [conn.fileno()])
            except OSError:  # a worker died: stop serving rather than drop connections silently
                break
        turn += 1
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    return next((code for code in codes if code != 0), 0)


def _worker_main(channel: socket.socket, data_dir: Path, token: str, consume: bool) -> int:
    try:
        gms = _open_gms(data_dir)
    except ServeError as err:
        print(f"lodestar: error: {err}", file=sys.stderr)
        return 1
    try:
        app = create_app(gms, _auth(token))
        run = lambda: asyncio.run(_serve_handed_connections(app, channel))  # noqa: E731
        if consume:
            _with_mcp_consumer(gms, run)
        else:
            run()
    finally:
        gms.close()
    return 0


async def _serve_handed_connections(app: web.Application, channel: socket.socket) -> None:
    """Serve the connections the parent hands over until SIGTERM."""
    loop = asyncio.get_running_loop()
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    channel.setblocking(False)

    def adopt() -> None:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 64)
        except BlockingIOError:
            return
        if not fds:  # the parent is gone
            done.set()
            return
        for fd in fds:
            sock = socket.socket(fileno=fd)
            sock.setblocking(False)
            loop.create_task(loop.connect_accepted_socket(runner.server, sock))

    loop.add_reader(channel.fileno(), adopt)
    await done.wait()
    loop.remove_reader(channel.fileno())
    await runner.cleanup()
