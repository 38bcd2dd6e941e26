"""Guards that apply to every route: backend outages, backpressure, readiness.

- A backend that does not answer (Cassandra, Kafka, OpenSearch; the embedded database locked
  too long) is 503 `backend_unavailable` with `Retry-After`, never a 500: the caller retries.
  Its adapter raised BackendUnavailable (ingest.backends.errors); no driver is known here.
- Backpressure: a write (any method but GET/HEAD/OPTIONS, save the routes marked queries with
  `context.query_route`: GraphQL, DataHub's search and read actions) is refused with 429 `overloaded` and
  `Retry-After` while the MCL processor lags more than `max_mcl_lag` records behind the MCL
  topics; any request with a body (queries too) while the bodies in flight would exceed
  `max_inflight_bytes`. The lag is sampled off the event loop at most every `sample_every`
  seconds; what a process holds for requests is bounded by the in-flight budget, however fast
  callers send.
- A write is refused with 503 `backend_unavailable` (nothing of it done) while the event log
  does not answer a ping (sent at most every `sample_every` seconds, off the event loop, and
  awaited by the writes that arrive meanwhile):
  its MCLs could not be published. A write that races the start of an outage may be applied
  and then answer 503 after the log's timeout; its MCLs wait in the outbox until the log is back.
- `GET /health/ready`: 200 when the aspect store, the event log and the read models answer
  (each probed with a deadline), else 503 naming the backend that does not; with the MCL lag.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ingest.backends.errors import BackendError, BackendUnavailable
from ingest.eventlog import EventLog
from lodestar.api.context import GMS_KEY, LIMIT_KEY, Handler, api_of, error, is_query
from lodestar.api.openapi import OBJECT, response
from mcl_processor.processor import mcl_offsets

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PROBE_TIMEOUT = 3.0  # seconds a readiness probe of one backend may take


@dataclass
class Backpressure:
    """The limits of the backpressure guard (environment: LODESTAR_MAX_MCL_LAG,
    LODESTAR_MAX_INFLIGHT_BYTES)."""

    max_mcl_lag: int = 200_000
    max_inflight_bytes: int = 256 * 1024 * 1024
    sample_every: float = 0.5

    @classmethod
    def from_env(cls) -> Backpressure:
        return cls(int(os.environ.get("LODESTAR_MAX_MCL_LAG", cls.max_mcl_lag)),
                   int(os.environ.get("LODESTAR_MAX_INFLIGHT_BYTES", cls.max_inflight_bytes)))


AWAIT_AFTER = 2.0  # seconds: an older lag sample is not trusted to refuse a write
RATE_HALF_LIFE = 60.0  # seconds: how fast the best indexing rate seen is forgotten
RETRY_AFTER_LIMIT = 10  # seconds: the longest Retry-After for lag (see LagSampler.retry_after)


class LagSampler:
    """The MCL processor's lag (records of the MCL topics not yet committed by its group) and
    how fast it indexes, sampled at most every `every` seconds off the event loop."""

    def __init__(self, log: EventLog, every: float, clock: Callable[[], float] = time.monotonic):
        self._log = log
        self._every = every
        self._clock = clock
        self._sampled_at = -math.inf
        self._sampling: asyncio.Task[None] | None = None
        self.lag = 0
        self.index_rate = 0.0  # records the processor commits per second at its best lately (see _sample)
        self._indexed: tuple[float, int] | None = None  # (when, records committed) at the last commit seen

    async def current(self) -> int:
        """The lag as last sampled; a new sample is started (not awaited) when it is stale. A
        call that finds no sample of the last AWAIT_AFTER seconds (the first one, or one after
        writers paused as Retry-After asked) awaits its sample, up to AWAIT_AFTER seconds: the
        lag may be long gone."""
        now = self._clock()
        age = now - self._sampled_at
        if age >= self._every and (self._sampling is None or self._sampling.done()):
            self._sampling = asyncio.ensure_future(self._sample(now))
            if age >= AWAIT_AFTER:
                await asyncio.wait({self._sampling}, timeout=AWAIT_AFTER)
        return self.lag

    async def fresh(self, timeout: float) -> int | None:
        """A sample begun after this call (None when it takes over timeout seconds); one sample
        at a time, so callers polling while the log hangs do not pile up threads."""
        async def sampled() -> None:
            if self._sampling is not None and not self._sampling.done():
                await asyncio.shield(self._sampling)
            self._sampling = asyncio.ensure_future(self._sample(self._clock()))
            await asyncio.shield(self._sampling)
        try:
            await asyncio.wait_for(sampled(), timeout)
        except TimeoutError:
            return None
        return self.lag

    async def _sample(self, now: float) -> None:
        try:
            # (the ends are bounds: the lag may count a transaction marker per Kafka partition,
            # negligible against the limits)
            offsets = await asyncio.to_thread(mcl_offsets, self._log)
        except Exception:  # the log is down: the 503 guard and readiness say so; keep the last figure
            return
        indexed = sum(committed for _, committed in offsets.values())
        if self._indexed is None or indexed < self._indexed[1]:
            self._indexed = (now, indexed)
        elif indexed > self._indexed[1]:  # the processor commits a batch at a time: rate over whole batches
            elapsed = max(now - self._indexed[0], self._every, 1e-3)
            rate = (indexed - self._indexed[1]) / elapsed
            # Its best rate lately, halving each RATE_HALF_LIFE: a processor sharing the CPUs with
            # the writers it lags behind indexes faster once they pause, which is when it counts.
            self.index_rate = max(rate, self.index_rate * 0.5 ** (elapsed / RATE_HALF_LIFE))
            self._indexed = (now, indexed)
        self.lag = sum(max(0, end - committed) for end, committed in offsets.values())
        self._sampled_at = now

    def retry_after(self, limit: int) -> int:
        """Seconds the processor needs, at its best recent indexing rate, to bring the lag back to
        three quarters of the limit if no write comes meanwhile (1 to RETRY_AFTER_LIMIT; 5 before
        any rate is known). Writes resume while the processor still has work queued, so it never
        runs dry waiting for them, and each pause lets a quarter of the limit in. The limit
        bounds the wait when the only rates seen were measured while writes shared the CPUs
        with the processor: once they pause, it indexes up to twice as fast (a 27 s pause left
        it idle for most of its length); a writer back too early is only refused again."""
        excess = self.lag - limit * 3 // 4
        if self.index_rate <= 0:
            return 5
        return max(1, min(RETRY_AFTER_LIMIT, math.ceil(excess / self.index_rate)))


class LogProbe:
    """Whether the event log answers: pinged at most every `every` seconds off the event loop,
    one ping at a time, on a thread of its own (so writes blocked on the log cannot delay the
    ping that would refuse them); `problem` is None while it answers."""

    def __init__(self, log: EventLog, every: float, clock: Callable[[], float] = time.monotonic):
        self._log = log
        self._every = every
        self._clock = clock
        self._pinged_at = -math.inf
        self._pinging: asyncio.Task[None] | None = None
        self.problem: str | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="log-ping")

    async def current(self) -> str | None:
        """The problem as of the latest ping: one is started when the last is `every` seconds
        old, and a ping under way is awaited (a few milliseconds while the log answers)."""
        now = self._clock()
        if now - self._pinged_at >= self._every and (self._pinging is None or self._pinging.done()):
            self._pinged_at = now
            self._pinging = asyncio.ensure_future(self._ping())
        if self._pinging is not None and not self._pinging.done():
            await asyncio.shield(self._pinging)
        return self.problem

    def close(self) -> None:
        """Let the ping thread end (after a ping under way)."""
        self._thread.shutdown(wait=False)

    async def _ping(self) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._log.ping, PROBE_TIMEOUT)
        except BackendError as err:
            self.problem = str(err)
        else:
            self.problem = None


class Guards:
    """What the guard middlewares share in one application."""

    def __init__(self, log: EventLog, limits: Backpressure):
        self.limits = limits
        self.lag = LagSampler(log, limits.sample_every)
        self.log = LogProbe(log, limits.sample_every)
        self.inflight_bytes = 0
        self.refused = 0  # writes refused with 429 by this process

    def indexing_first(self) -> bool:
        """Whether the MCL processor, as last sampled, lags past half its limit: writes then
        yield the CPU to it (`lodestar.api.writers`)."""
        return self.lag.lag > self.limits.max_mcl_lag // 2


GUARDS_KEY = web.AppKey("guards", Guards)


@web.middleware
async def unavailable(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A backend that does not answer, anywhere below, is 503 with Retry-After (what else a backend
    raises, BackendFailure, is an internal error)."""
    try:
        return await handler(request)
    except BackendUnavailable as err:
        return error(503, "backend_unavailable", f"a backend did not answer: {type(err).__name__}: {err}",
                     headers={"Retry-After": "2"})


@web.middleware
async def throttle(request: web.Request, handler: Handler) -> web.StreamResponse:
    """413 at once for a body announced over the size limit (before any of it is read; one sent
    without a length is cut off as soon as it passes it: `client_max_size`); 429 with Retry-After
    for writes while the MCL processor lags, and for any body while too many bytes are in flight."""
    if request.content_length is not None and request.content_length > request.app[LIMIT_KEY]:
        return error(413, "too_large", f"request body of {request.content_length} bytes, over the limit of"
                     f" {request.app[LIMIT_KEY]}")
    if request.method in READ_METHODS:
        return await handler(request)
    guards = request.app[GUARDS_KEY]
    limits = guards.limits
    if not is_query(request):
        if problem := await guards.log.current():
            return error(503, "backend_unavailable", f"the event log does not answer: {problem}; nothing was done",
                         headers={"Retry-After": "2"})
        lag = await guards.lag.current()
        if lag > limits.max_mcl_lag:
            guards.refused += 1
            return error(429, "overloaded", f"the MCL processor is {lag} records behind (limit"
                         f" {limits.max_mcl_lag}); retry later",
                         headers={"Retry-After": str(guards.lag.retry_after(limits.max_mcl_lag))}, lag=lag)
    size = request.content_length if request.content_length is not None else request.app[LIMIT_KEY]
    if guards.inflight_bytes and guards.inflight_bytes + size > limits.max_inflight_bytes:
        guards.refused += 1
        return error(429, "overloaded", f"{guards.inflight_bytes} bytes of requests in flight (limit"
                     f" {limits.max_inflight_bytes}); retry later", headers={"Retry-After": "1"})
    guards.inflight_bytes += size
    try:
        return await handler(request)
    finally:
        guards.inflight_bytes -= size


async def _probe(name: str, call: Callable[[], Any]) -> tuple[str, str | None, Any]:
    """(name, the problem or None, what call returned)."""
    try:
        return name, None, await asyncio.wait_for(asyncio.to_thread(call), PROBE_TIMEOUT)
    except TimeoutError:
        return name, f"no answer within {PROBE_TIMEOUT:g}s", None
    except Exception as err:
        return name, f"{type(err).__name__}: {err}", None


async def _known(name: str, problem: str | None, value: Any) -> tuple[str, str | None, Any]:
    return name, problem, value


async def ready(request: web.Request) -> web.Response:
    """Readiness: every backend answers."""
    api = api_of(request)
    # The log is pinged (one ping at a time) and its lag sampled (one sample at a time): readiness
    # polled while Kafka hangs must not pile up threads waiting on its clients' timeouts.
    guards = request.app[GUARDS_KEY]
    log_problem = await guards.log.current()
    lag = None if log_problem else await guards.lag.fresh(PROBE_TIMEOUT)
    probes = await asyncio.gather(
        _probe("aspectStore", lambda: api.gms.store.get("urn:li:corpuser:__readiness__", "corpUserKey")),
        _known("eventLog", log_problem, lag),
        _probe("readModels", lambda: api.read_models.search.query("*", None, 0, 1, False, "relevance", None)))
    backends = {name: {"ok": problem is None, **({"error": problem} if problem else {})}
                for name, problem, _ in probes}
    ok = all(problem is None for _, problem, _ in probes)
    body = {"status": "ready" if ok else "unavailable", "backends": backends, "mclLag": probes[1][2]}
    return web.json_response(body, status=200 if ok else 503, headers=None if ok else {"Retry-After": "2"})


def install(app: web.Application, log: EventLog, limits: Backpressure | None = None) -> None:
    """The guards' state and the readiness route (the middlewares are listed by create_app)."""
    app[GUARDS_KEY] = Guards(log, limits or Backpressure.from_env())
    app.router.add_get("/health/ready", ready)

    async def close_probe(app: web.Application) -> None:
        app[GUARDS_KEY].log.close()

    app.on_cleanup.append(close_probe)


OPENAPI_PATHS: dict[str, Any] = {
    "/health/ready": {"get": {"summary": "Readiness: every backend answers", "security": [],
                              "responses": {"200": response("Ready", OBJECT),
                                            "503": response("A backend does not answer", OBJECT)}}},
}


def add_routes(app: web.Application) -> None:
    """`install` on the event log of the app's GMS, with the backpressure limits of the environment."""
    install(app, app[GMS_KEY].gms.log)
