"""Running GMS processes: one in-process server, or several workers behind one listener.

With several workers, the parent process accepts connections and hands them round-robin
to the workers over Unix sockets (SCM_RIGHTS), so the load spreads evenly however few
connections there are; each worker runs its own GMS on the shared data directory. One more
child runs the background work, the MCP consumer, the MCL processor and the webhook
dispatcher, so that indexing never waits for a request handler's turn at the interpreter
lock (nor they for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from gms.service import SYSTEM_ACTOR, Gms
from ingest.backends.errors import BackendError
from lodestar import memory, metrics
from lodestar.api.access_log import NO_ACCESS_LOG
from lodestar.api.app import create_app
from lodestar.api.auth import ADMIN, TokenAuth
from lodestar.assembly import open_gms, open_read_models
from lodestar.config import Config
from lodestar.priority import lower_priority
from lodestar.server_address import published
from lodestar.webhook_delivery import WebhookDispatcher
from mcl_processor.platform_events import PlatformEventPublisher
from mcl_processor.processor import MclProcessor

log = logging.getLogger(__name__)


class ServeError(Exception):
    """The server could not start: a taken port, an unusable data directory or backend."""


class Roles(enum.Flag):
    """The background work a process does besides serving requests."""

    NONE = 0
    MCP_CONSUMER = enum.auto()  # applies proposals from the MCP topic
    MCL_PROCESSOR = enum.auto()  # maintains the read models from the MCL topics
    WEBHOOKS = enum.auto()  # delivers changes to the registered webhooks (lodestar.webhook_delivery)
    ALL = MCP_CONSUMER | MCL_PROCESSOR | WEBHOOKS


RELAY_INTERVAL = 5.0  # seconds between sweeps of the outbox when the store has one
STOP_TIMEOUT = 25.0  # seconds the background threads get, together, to finish once asked to stop
BACKGROUND_NICENESS = 8  # how far below the workers' CPU priority the indexing background process runs
GC_THRESHOLDS = (10_000, 10, 10)  # a young collection per 10,000 new containers rather than 700


class Node:
    """What one process runs: GMS and the read models on the configured adapters, and the
    background `roles`. With a separate event log, a relay thread also sweeps the outbox, so
    MCLs left pending by a crashed process are published without waiting for a write."""

    def __init__(self, data_dir: Path, roles: Roles, config: Config | None = None, process: str = "main"):
        self.config = config or Config()
        try:
            self.gms = open_gms(self.config, data_dir, process=process)
            try:
                self.read_models = open_read_models(self.config, data_dir, self.gms.registry)
            except BaseException:
                self.gms.close()
                raise
        except OSError as err:
            raise ServeError(f"cannot open data directory {data_dir}: {err}") from None
        except BackendError as err:
            raise ServeError(str(err)) from None
        self.roles = roles
        self.process = process
        self.gms.authorize_consumed = True  # proposals from the MCP topic are checked as their actor
        self.processor = MclProcessor(self.gms.registry, self.gms.mcl_reader, self.read_models) \
            if Roles.MCL_PROCESSOR in roles else None

    def app(self, token: str, yielding_niceness: int = 0) -> web.Application:
        auth = TokenAuth()
        auth.add(token, ADMIN)
        return create_app(self.gms, auth, self.read_models, self.processor, yielding_niceness,
                          self.config.webhook_addresses)

    def run(self, serve: Callable[[], None]) -> None:
        """Serve, with this node's background threads running.

        What the process built to get here (registry, compiled schemas, the app) lives as long
        as the process, so it is frozen out of the cyclic garbage collector: otherwise every
        full collection during a request scans it again (it made parsing a big request body
        six times slower). A request of 1,000 proposals makes some 100,000 containers and no
        garbage cycles, so the collector runs less often too (GC_THRESHOLDS: 15% of a write's
        time went to collections of objects still in use)."""
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        stop = threading.Event()
        work: list[tuple[str, Callable[[], None]]] = [
            ("memory-gauges", lambda: memory.sample_until(self.process, stop))]
        if Roles.MCP_CONSUMER in self.roles:
            work.append(("mcp-consumer", lambda: self.gms.consume_proposals(stop)))
        if self.processor is not None:
            work.append(("mcl-processor", lambda: self.processor.run(self.gms.log, stop)))
            if self.config.event_log == "kafka":  # DataHub Actions' Kafka source reads them
                events = PlatformEventPublisher(self.gms.log, self.gms.mcl_reader.decode,
                                                partial(self.gms.schema_registry.register, SYSTEM_ACTOR),
                                                self.processor.key_aspects, self.config.kafka_prefix)
                work.append(("platform-events", lambda: events.run(stop)))
        dispatcher = WebhookDispatcher(self.gms, addresses=self.config.webhook_addresses) \
            if Roles.WEBHOOKS in self.roles else None
        if dispatcher is not None:
            work.append(("webhooks", lambda: dispatcher.run(handle_signals=False)))
        if not self.config.embedded:
            work.append(("outbox-relay", lambda: _sweep_outbox(self.gms, stop)))
        threads = [threading.Thread(target=target, name=name, daemon=True) for name, target in work]
        for thread in threads:
            thread.start()
        try:
            serve()
        finally:
            stop.set()
            if dispatcher is not None:
                dispatcher.stop()
            _join(threads, STOP_TIMEOUT)
            self.read_models.close()
            self.gms.close()


def _join(threads: list[threading.Thread], timeout: float) -> None:
    """Wait for threads that were asked to stop, `timeout` seconds for all of them. A Kafka
    consumer's close takes up to twice its CLOSE_TIMEOUT under load; a process that exits before
    that leaves its group members behind until their sessions time out (and the group waits
    for them). A thread still running then is named in a warning and left behind."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("stopping: %s did not finish within %gs; left behind", thread.name, timeout)


def _sweep_outbox(gms: Gms, stop: threading.Event) -> None:
    """Publish what is pending, this store's and that of dead producers (taken over), every
    RELAY_INTERVAL (or half the store's lease TTL if shorter); a failure (a backend down or
    timing out) is logged and the next sweep tries again."""
    ttl = gms.store.lease_ttl
    interval = min(RELAY_INTERVAL, ttl / 2) if ttl else RELAY_INTERVAL
    while not stop.wait(interval):
        try:
            gms.relay.publish_pending()
            gms.relay.take_over()
        except Exception as err:
            log.warning("outbox relay: %s; trying again in %gs", err, interval)


def serve_one(data_dir: Path, host: str, port: int, token: str, config: Config | None = None,
              roles: Roles = Roles.ALL, access_log: Mapping[str, Any] = NO_ACCESS_LOG) -> None:
    """GMS and its background `roles` in this process, until SIGINT or SIGTERM; its address is in
    the data directory meanwhile (lodestar.server_address). `access_log`:
    `lodestar.api.access_log.access_log_options`."""
    with _listen(host, port) as listener:
        node = Node(data_dir, roles, config)
        app = node.app(token)
        with published(data_dir, host, listener.getsockname()[1]):
            node.run(lambda: web.run_app(app, sock=listener, print=None, handle_signals=True, **access_log))


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: one the kernel picks)."""
    try:
        return socket.create_server((host, port), backlog=1024)
    except OSError as err:
        raise ServeError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def serve_workers(data_dir: Path, host: str, port: int, token: str, workers: int, config: Config | None = None,
                  roles: Roles = Roles.ALL, access_log: Mapping[str, Any] = NO_ACCESS_LOG) -> int:
    """`workers` GMS processes behind one listening socket, and one more for the background
    `roles` (if any) but webhook delivery, which the first worker runs: the background
    process's interpreter lock is then the MCL processor's (and the MCP consumer's) alone,
    and it is the serial stage of indexing. Returns the exit status.

    With the MCL processor in the background process on the embedded stores, that process runs
    at a lower CPU priority than the workers (BACKGROUND_NICENESS): when requests and indexing
    both want more CPU than there is, requests go first, so a burst of writes is accepted at
    the write path's speed. Once the processor lags past half its limit, the workers apply
    writes on a thread as far below the indexing's priority (`lodestar.api.writers`): indexing
    goes first and the writers take what CPU it leaves, so the lag stops growing, instead of
    running on until the lag limit refuses every write at once and the CPU the serial indexing
    cannot use stays idle while they wait. On the distributed stack the workers run below the
    indexing throughout (`_priorities`)."""
    listener = _listen(host, port)
    metrics.use_directory(data_dir / "metrics")  # /metrics in any worker adds up every process's counts
    channels: list[socket.socket] = []
    background = roles & ~Roles.WEBHOOKS
    niceness, worker_niceness, yielding_niceness = _priorities(Roles.MCL_PROCESSOR in background,
                                                               (config or Config()).embedded)
    # Plain flags, not threading.Events: a signal handler may run inside another one (SIGCHLD
    # while SIGTERM's handler runs), and an Event's lock taken twice by one thread never opens.
    flags = {"stopping": False, "asked": False}

    def stop(signum: int, _frame: object) -> None:
        if signum != signal.SIGCHLD:
            flags["asked"] = True
        flags["stopping"] = True
        listener.close()  # wakes accept()

    if not (config or Config()).embedded and _fork_and_wait(partial(_create_backend_schemas, data_dir, config),
                                                            listener) != 0:
        return 1  # the child said why
    signal.signal(signal.SIGCHLD, stop)  # a child that exits, failing to start or later, stops them all
    children: dict[int, str] = {}
    if background:
        children[_fork(partial(_background_main, data_dir, config, background, niceness), listener)] = "background"
    for worker in range(workers):
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        worker_roles = roles & Roles.WEBHOOKS if worker == 0 else Roles.NONE
        children[_fork(partial(_worker_main, child_end, data_dir, token, config, f"w{worker}", worker_roles,
                                worker_niceness, yielding_niceness, access_log), listener, parent_end)] = f"w{worker}"
        child_end.close()
        channels.append(parent_end)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with published(data_dir, host, listener.getsockname()[1]):
        turn = 0
        while not flags["stopping"]:
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
        return _stop_children(children, flags["asked"])


def _priorities(indexing_in_background: bool, embedded: bool) -> tuple[int, int, int]:
    """(background process's, workers', workers' yielding writer thread's) niceness. Embedded,
    writes go first until indexing lags past half its limit, then indexing does. On the
    distributed stack indexing always goes first (the workers niced below it): its writes to
    Cassandra and OpenSearch wait on round trips, and with writes first the same burst became
    searchable 30-40% later (docs/benchmarks.md). Yielding needs per-thread niceness: Linux."""
    if not indexing_in_background:
        return 0, 0, 0
    if not embedded:
        return 0, BACKGROUND_NICENESS, 0
    return BACKGROUND_NICENESS, 0, 2 * BACKGROUND_NICENESS if sys.platform == "linux" else 0


def _stop_children(children: dict[int, str], asked: bool) -> int:
    """Stop the children and wait for them; serve's exit status. Unless serve was asked to
    stop, a child exited by itself first (none should): it is named on stderr, and serve
    exits with 1."""
    exited = {} if asked else {pid: os.waitstatus_to_exitcode(status) for pid in children
                               for done, status in [os.waitpid(pid, os.WNOHANG)] if done}
    for pid in children.keys() - exited.keys():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    stopped = {pid: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children.keys() - exited.keys()}
    for pid, code in exited.items():
        print(f"lodestar: error: the {children[pid]} process exited (status {code}); stopping the other processes",
              file=sys.stderr)
    if exited:
        return 1
    return next((code for code in stopped.values() if code != 0), 0)


def _fork(main: Callable[[], int], *parent_only: socket.socket) -> int:
    """Run main in a child process (which closes the parent's sockets first); its pid."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the parent's watch over its children
        for sock in parent_only:
            sock.close()
        os._exit(main())
    return pid


def _fork_and_wait(main: Callable[[], int], *parent_only: socket.socket) -> int:
    """Run main in a child process to its end; its exit status."""
    return os.waitstatus_to_exitcode(os.waitpid(_fork(main, *parent_only), 0)[1])


def _create_backend_schemas(data_dir: Path, config: Config | None) -> int:
    """Open the stores once and close them, so their keyspace, tables and indices exist before
    the processes that serve start: Cassandra does not make the same table safely when several
    clients create it at once (a worker once found "table leases does not exist" right after
    another created it)."""
    try:
        node = Node(data_dir, Roles.NONE, config, "setup")
    except ServeError as err:
        print(f"lodestar: error: {err}", file=sys.stderr)
        return 1
    node.read_models.close()
    node.gms.close()
    return 0


def _worker_main(channel: socket.socket, data_dir: Path, token: str, config: Config | None, process: str,
                 roles: Roles, niceness: int, yielding_niceness: int, access_log: Mapping[str, Any]) -> int:
    lower_priority(niceness)  # before any thread starts: every thread of the process inherits it
    try:
        node = Node(data_dir, roles, config, process)
    except ServeError as err:
        print(f"lodestar: error: {err}", file=sys.stderr)
        return 1
    app = node.app(token, yielding_niceness)
    node.run(lambda: asyncio.run(_serve_handed_connections(app, channel, access_log)))
    return 0


def _background_main(data_dir: Path, config: Config | None, roles: Roles, niceness: int) -> int:
    """The background roles, until SIGTERM or SIGINT, `niceness` below the workers' priority."""
    lower_priority(niceness)  # before any thread or worker process starts: they all inherit it
    try:
        node = Node(data_dir, roles, config, "background")
    except ServeError as err:
        print(f"lodestar: error: {err}", file=sys.stderr)
        return 1
    node.run(_await_stop_signal)
    return 0


def _await_stop_signal() -> None:
    """Return once SIGTERM or SIGINT arrives. The interpreter writes each signal's number to a
    wakeup socket from its C handler, so no Python handler takes a lock (a second signal during
    the first's handler cannot deadlock it) and no signal is missed between a check and a wait."""
    stops = {signal.SIGTERM, signal.SIGINT}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno())
    for signum in stops:
        signal.signal(signum, lambda *_: None)
    try:
        while reader.recv(1)[0] not in stops:
            pass
    finally:
        signal.set_wakeup_fd(previous_fd)
        reader.close()
        writer.close()


async def _serve_handed_connections(app: web.Application, channel: socket.socket,
                                    access_log: Mapping[str, Any]) -> None:
    """Serve the connections the parent hands over until SIGTERM."""
    loop = asyncio.get_running_loop()
    runner = web.AppRunner(app, handle_signals=False, **access_log)
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
