"""The listener: a Spark QueryExecutionListener implemented in Python over py4j's callback
server. Its callback (on Spark's shared listener thread) only starts reading the write's plan
(spark_emitter.capture) and queues it; a worker thread takes the plan, analyses it and emits the
proposals."""

from __future__ import annotations

import atexit
import contextlib
import logging
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, fields
from typing import Any

from ingest.emitters import Emitter, KafkaEmitter, RestEmitter
from ingest.proposal import Proposal
from spark_emitter.capture import NESTED_WRITE, Captured, PlanReader
from spark_emitter.capture_compiled import CompiledPlanReader
from spark_emitter.capture_py4j import Py4jPlanReader
from spark_emitter.delivery import Counts, Delivery
from spark_emitter.mcps import Action, App, action_proposals, application_ended, application_started
from spark_emitter.urns import Naming
from spark_emitter.workers import use_lodestar_python
from spark_emitter.writes import analyze

log = logging.getLogger(__name__)
PREFIX = "spark.lodestar."
_ATTACHED: dict[int, LodestarListener] = {}  # id(SparkSession) -> its open listener


def listener_of(spark: Any) -> LodestarListener | None:
    """The open listener attached to `spark`, if any."""
    return _ATTACHED.get(id(spark))


class ListenerError(RuntimeError):
    """The listener cannot be attached (e.g. a Spark Connect session, or no destination)."""


@dataclass(frozen=True)
class Settings:
    """`spark.lodestar.<name>` conf keys, or keyword arguments of `attach` (which win)."""

    server: str | None = None  # GMS URL: emit over REST
    token: str | None = None
    kafka_bootstrap: str | None = None  # or append to the MCP topic (spark.lodestar.kafka.bootstrap)
    kafka_prefix: str = ""
    env: str = "PROD"
    job: str | None = None  # the job's name; default: the app name
    catalog_platform: str = "hive"
    queue_size: int = 1000
    timeout: float = 10.0  # seconds a REST request may take
    actor: str = "urn:li:corpuser:spark"

    @classmethod
    def from_conf(cls, conf: Any, overrides: dict[str, Any]) -> Settings:
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = PREFIX + _camel(f.name).replace("kafkaBootstrap", "kafka.bootstrap").replace(
                "kafkaPrefix", "kafka.prefix")
            raw = overrides[f.name] if f.name in overrides else conf.get(key, None)
            if raw is not None:
                kind = {"int": int, "float": float}.get(str(f.type), str)
                try:
                    values[f.name] = kind(raw)
                except ValueError:
                    article = "an" if kind is int else "a"
                    raise ListenerError(f"{key}: {raw!r} is not {article} {kind.__name__}") from None
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ListenerError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        settings = cls(**values)
        if not settings.server and not settings.kafka_bootstrap:
            raise ListenerError("set spark.lodestar.server (REST) or spark.lodestar.kafka.bootstrap (Kafka)")
        return settings

    def connect(self) -> Emitter:
        if self.server:
            return RestEmitter(self.server, self.token, self.timeout)
        return KafkaEmitter.connect(self.kafka_bootstrap, self.kafka_prefix, self.actor)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class LodestarListener:
    """Attached to one SparkSession; see `attach`."""

    def __init__(self, spark: Any, settings: Settings):
        self._spark = spark
        sc = spark.sparkContext
        self.settings = settings
        self.app = App(sc.applicationId, sc.appName, settings.job or sc.appName, settings.env, sc.sparkUser(),
                       sc.startTime, (("master", sc.master), ("sparkVersion", spark.version)))
        self.naming = Naming(sc.appName, settings.env, settings.catalog_platform)
        self.plan_reader = plan_reader(spark)
        self._job_inputs: set[str] = set()
        self._job_outputs: set[str] = set()
        self._token = f"LodestarListener-{uuid.uuid4()}"
        self._closed = False
        self._claims_lock = threading.Lock()
        self._claims: dict[int, tuple[Any, list[tuple[str, str]]]] = {}  # program runs: id -> (run, actions)
        self._failures = 0  # failures recorded by record_failure
        self.failed_actions = 0  # write actions that failed (counted on Spark's listener thread)
        self.callback_ms: deque[float] = deque(maxlen=10_000)  # time on Spark's listener thread per write
        self._delivery = Delivery(settings.connect, self._build, settings.queue_size)
        self._delivery.offer(application_started(self.app))
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(sc._gateway)
        _check_callback_server(sc._gateway)
        spark._jsparkSession.listenerManager().register(self)
        _ATTACHED[id(spark)] = self
        self._previous_hook = sys.excepthook
        sys.excepthook = self._uncaught
        atexit.register(self.close, 10.0)

    # QueryExecutionListener (called by the JVM; must never raise)

    def onSuccess(self, func: str, qe: Any, duration_ns: int) -> None:  # noqa: N802 (Java's name)
        self._on_event(func, qe, duration_ns // 1_000_000, None)

    def onFailure(self, func: str, qe: Any, exception: Any) -> None:  # noqa: N802
        self._on_event(func, qe, None, exception)

    def equals(self, other: Any) -> bool:
        return other is self

    def hashCode(self) -> int:  # noqa: N802
        return hash(self._token) & 0x7FFFFFFF

    def toString(self) -> str:  # noqa: N802
        return self._token

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]

    def _on_event(self, func: str, qe: Any, duration_ms: int | None, exception: Any) -> None:
        started = time.perf_counter()
        try:
            if func == NESTED_WRITE or self._closed:
                return
            plan = self.plan_reader.start(qe)
            if plan is None:
                return
            end_ms = int(time.time() * 1000)
            if exception is not None:
                self.failed_actions += 1
            if duration_ms is None:  # a failure: the action started when its analysis did
                duration_ms = max(0, end_ms - qe.tracker().phases().apply("analysis").startTimeMs())
            captured = Captured(func, plan, end_ms, duration_ms)
            if exception is not None:
                captured.error = _error(exception)
            if not self._delivery.offer(captured):
                plan.discard()
            self.callback_ms.append((time.perf_counter() - started) * 1000)
        except Exception:
            log.exception("Lodestar listener: could not read a finished action; it is not recorded")

    # the worker's side

    def _build(self, item: Any) -> list[Proposal]:
        if not isinstance(item, Captured):
            return item  # proposals made on the caller's thread (application start and end)
        captured, plan = item, item.plan.result()
        lineage = analyze(plan, self.naming)
        if lineage is not None:
            self._job_inputs.update(s.urn for s in lineage.sources)
            if captured.error is None:  # a failed write wrote nothing: not an output of the job
                self._job_outputs.add(lineage.target.urn)
        action = Action(plan.execution_id, captured.func, plan.command, captured.end_ms - captured.duration_ms,
                        captured.end_ms, captured.error)
        proposals = action_proposals(self.app, action, lineage, (sorted(self._job_inputs), sorted(self._job_outputs)))
        return self._without_claimed(proposals, lineage.target.urn if lineage is not None else None)

    def record_failure(self, error: BaseException) -> None:
        """Record a FAILED run for an action that failed before Spark ran it (a missing input path,
        an unknown table or column: Spark reports no event for those), with the error's class; the
        application's run then ends FAILURE. Called for the program's uncaught exception."""
        if self._closed:
            return
        self.failed_actions += 1
        self._failures += 1
        now = int(time.time() * 1000)
        condition = None
        with contextlib.suppress(Exception):
            condition = error.getCondition()  # a PySpark error with Spark's error condition
        kind = type(error)
        details = {"errorClass": condition or kind.__name__, "exception": f"{kind.__module__}.{kind.__qualname__}",
                   "message": str(error)[:1000]}
        # STARTED a millisecond before COMPLETE: a run's events are points keyed by their time
        action = Action(f"failed-{self._failures}", "python", "uncaught exception", now - 1, now, details)
        self._delivery.offer(action_proposals(self.app, action, None,
                                              (sorted(self._job_inputs), sorted(self._job_outputs))))

    def _uncaught(self, kind: Any, error: BaseException, tb: Any) -> None:
        try:
            if not issubclass(kind, KeyboardInterrupt):
                self.record_failure(error)
                self.close(10.0)
        except Exception:
            log.exception("Lodestar listener: could not record the failure")
        finally:
            self._previous_hook(kind, error, tb)

    # program runs (spark_emitter.program) on this session: their operations replace the listener's

    def claim(self, run: Any) -> None:
        """A program run started: the writes from now on may be described by the program."""
        with self._claims_lock:
            self._claims[id(run)] = (run, [])

    def release(self, run: Any, replaced_by_program: bool) -> list[str]:
        """The program run ends: every write of its time is delivered first; the action runs whose
        field operations the program's replace (same destination) are returned, so the program
        deletes their `fieldOperations`."""
        self.flush()
        with self._claims_lock:
            _, actions = self._claims.pop(id(run), (None, []))
        if not replaced_by_program:
            return []
        destinations = set(run.lineage.destinations)
        return sorted({action for action, target in actions if target in destinations})

    def _without_claimed(self, proposals: list[Proposal], target: str | None) -> list[Proposal]:
        if target is None:
            return proposals
        with self._claims_lock:
            claims = list(self._claims.values())
        if not claims:
            return proposals
        operations = [p for p in proposals if p.aspect_name == "fieldOperations"]
        if not operations:
            return proposals
        run_urn = operations[0].entity_urn
        for run, actions in claims:
            if target in run.lineage.destinations:  # the program said already: the listener's go
                return [p for p in proposals if p.aspect_name != "fieldOperations"]
            actions.append((run_urn, target))
        return proposals

    # the user's side

    @property
    def counts(self) -> Counts:
        """Events delivered, dropped (queue full) and failed (Lodestar unreachable or refusing)."""
        return self._delivery.counts

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Wait until every action finished so far is delivered (or failed); False on timeout."""
        start = time.monotonic()
        bus = self._spark.sparkContext._jsc.sc().listenerBus()
        bus.waitUntilEmpty(int((timeout or 60.0) * 1000))  # Spark's queue: our callback has run for each
        remaining = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
        return self._delivery.flush(remaining)

    def close(self, timeout: float | None = 60.0) -> bool:
        """Flush, record the application's end (FAILURE if a write action failed), detach from the
        session and stop the worker."""
        if self._closed:
            return True
        flushed = True
        try:
            flushed = self.flush(timeout)
            manager = self._spark._jsparkSession.listenerManager()
            for registered in manager.listListeners():
                if registered.toString() == self._token:
                    manager.unregister(registered)
        except Exception as err:  # the session may be stopped already
            log.debug("Lodestar listener: detaching: %s", err)
        self._closed = True
        if sys.excepthook == self._uncaught:
            sys.excepthook = self._previous_hook
        if _ATTACHED.get(id(self._spark)) is self:
            del _ATTACHED[id(self._spark)]
        atexit.unregister(self.close)
        self._delivery.offer(application_ended(self.app, int(time.time() * 1000), self.failed_actions))
        delivered = self._delivery.close(timeout)
        self.plan_reader.close()  # (plans the worker has not taken by now are not recorded)
        return delivered and flushed


def plan_reader(spark: Any) -> PlanReader:
    """The reader of `spark`'s plans: one round trip per action when the driver JVM can compile
    PlanCapture.java, else one per fact."""
    sc = spark.sparkContext
    try:
        return CompiledPlanReader(sc._jvm, sc._gateway, spark._jsparkSession.getClass().getClassLoader())
    except Exception as err:  # (no javac, a cache that cannot be written, ...): the job must not fail for it
        log.warning("Lodestar listener: no compiled plan reader (%s); reading plans with a Py4J call per fact"
                    " (slower on Spark's listener thread)", err)
        return Py4jPlanReader(sc._jvm)


def _check_callback_server(gateway: Any) -> None:
    """py4j's callback server waits for connections with select(), which only takes file
    descriptors below 1024: a socket numbered higher ends its thread, and the first event would
    then block Spark's listener thread for good. Refuse to attach instead."""
    fileno = gateway._callback_server.server_socket.fileno()
    if fileno >= 1024:
        raise ListenerError(f"py4j's callback server got file descriptor {fileno}; it can only serve descriptors "
                            "below 1024 (select): attach the listener before the process opens that many files")


def _error(exception: Any) -> dict[str, str]:
    """The failure's error class (Spark's condition, else the exception's class) and class name."""
    class_name = exception.getClass().getName()
    condition = None
    with contextlib.suppress(Exception):  # not a SparkThrowable
        condition = exception.getCondition()
    return {"errorClass": condition or class_name, "exception": class_name}


def attach(spark: Any, **settings: Any) -> LodestarListener:
    """Record every write action of `spark` (a classic SparkSession) in Lodestar.

    Settings come from `spark.lodestar.*` conf keys; keyword arguments override them: `server`,
    `token`, `kafka_bootstrap`, `kafka_prefix`, `env`, `job`, `catalog_platform`, `queue_size`,
    `timeout`.
    """
    if not hasattr(spark, "_jsparkSession"):
        raise ListenerError("Spark Connect sessions are not supported: the listener needs a classic SparkSession "
                            "(one built without spark.remote / SPARK_REMOTE)")
    use_lodestar_python(spark)
    return LodestarListener(spark, Settings.from_conf(spark.conf, settings))
