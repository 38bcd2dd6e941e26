"""The program API: a PySpark program says itself what its fields became (CDAP's field
operations) and adds metadata during its run.

    from spark_emitter import lodestar_run, EndPoint, ReadOperation, TransformOperation, WriteOperation, InputField

    with lodestar_run(spark, program="CustomerSpend", namespace="default") as run:
        ...  # the program's Spark code
        run.lineage.record([ReadOperation("read", "read daily", EndPoint.of("default", "/data/daily.csv"), ["UID"]),
                            TransformOperation("hash", "hash the UID", [InputField("read", "UID")], ["key"]),
                            WriteOperation("write", "write spend", EndPoint.of("urn:li:dataset:(...)"),
                                           [InputField("hash", "key")])])
        run.metadata.add_tags("urn:li:schemaField:(<dataset>,key)", "derived")

The run is one `dataProcessInstance` of the program (`urn:li:dataJob:(urn:li:dataFlow:(cdap,
<app>,<namespace>),<program>)`): STARTED when the block starts, COMPLETE with SUCCESS when it
ends, FAILURE (and the error) when it raises. The recorded operations (checked with CDAP's rules
when recorded) become the run's `fieldOperations`, recorded per destination as CDAP's
`record(destination, operations)` does (for each destination the operations that lead to it),
and their sources and destinations its inputs and outputs. When the Lodestar listener is
attached to the same session, the program's operations replace the listener's for every
destination the program recorded (nothing is recorded twice). Metadata is written when added,
so what a failed run added is retained.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ingest.emitters import Emitter
from ingest.proposal import Proposal
from ingest.rest import RestClient
from schemas.field_operations import (
    READ,
    TRANSFORM,
    WRITE,
    FieldOperation,
    FieldOperationsError,
    accumulated,
    per_destination,
    validate,
)
from schemas.field_operations import InputField as _SchemaInput
from spark_emitter.mcps import upsert
from spark_emitter.urns import Naming, dataset_urn
from spark_emitter.workers import use_lodestar_python

CDAP_PLATFORM = "cdap"


@dataclass(frozen=True)
class EndPoint:
    """A dataset as CDAP names it (namespace, name) with its Lodestar URN."""

    namespace: str
    name: str
    urn: str

    @classmethod
    def of(cls, namespace_or_urn: str, name: str | None = None, env: str = "PROD") -> EndPoint:
        """`EndPoint.of(urn)`: any dataset URN. `EndPoint.of(namespace, name)`: a path (`/data/x`,
        `s3a://b/k`) is the files' dataset as the listener names it; any other name the CDAP
        dataset `<namespace>.<name>`."""
        if name is None:
            if not namespace_or_urn.startswith("urn:li:dataset:"):
                raise ValueError(f"EndPoint.of({namespace_or_urn!r}): one argument must be a dataset URN")
            return cls("", namespace_or_urn, namespace_or_urn)
        if name.startswith("/") or "://" in name:
            platform, path = Naming("").path(name)
            return cls(namespace_or_urn, name, dataset_urn(platform, path, env))
        return cls(namespace_or_urn, name, dataset_urn(CDAP_PLATFORM, f"{namespace_or_urn}.{name}", env))


@dataclass(frozen=True)
class InputField:
    """A field as input of an operation: `field` as output by the operation named `origin`."""

    origin: str
    field: str


@dataclass(frozen=True)
class ReadOperation:
    name: str
    description: str
    source: EndPoint
    outputs: Sequence[str] = ()

    def to_operation(self) -> FieldOperation:
        return FieldOperation(self.name, READ, self.description, source=self.source.urn, outputs=tuple(self.outputs))


@dataclass(frozen=True)
class TransformOperation:
    name: str
    description: str
    inputs: Sequence[InputField] = ()
    outputs: Sequence[str] = ()

    def to_operation(self) -> FieldOperation:
        return FieldOperation(self.name, TRANSFORM, self.description,
                              inputs=tuple(_SchemaInput(i.origin, i.field) for i in self.inputs),
                              outputs=tuple(self.outputs))


@dataclass(frozen=True)
class WriteOperation:
    name: str
    description: str
    destination: EndPoint
    inputs: Sequence[InputField] = ()

    def to_operation(self) -> FieldOperation:
        return FieldOperation(self.name, WRITE, self.description, destination=self.destination.urn,
                              inputs=tuple(_SchemaInput(i.origin, i.field) for i in self.inputs))


Operation = ReadOperation | TransformOperation | WriteOperation


class LineageRecorder:
    """Takes the run's field operations (CDAP's `LineageRecorder`); `record` may be called several
    times, operation names must be unique over all calls."""

    def __init__(self) -> None:
        self.operations: list[FieldOperation] = []
        # operation names per destination; None: each destination's are worked out (`accumulated`)
        self.by_destination: dict[str, tuple[str, ...]] | None = None

    def record(self, operations: Iterable[Operation | FieldOperation]) -> None:
        ops = [op if isinstance(op, FieldOperation) else op.to_operation() for op in operations]
        taken = {op.name for op in self.operations}
        for op in ops:
            if op.name in taken:
                raise FieldOperationsError(f"Operation name '{op.name}' is repeated.")
            taken.add(op.name)
        self.operations.extend(ops)

    @property
    def destinations(self) -> list[str]:
        return sorted({op.destination for op in self.operations if op.type == WRITE and op.destination})

    @property
    def sources(self) -> list[str]:
        return sorted({op.source for op in self.operations if op.type == READ and op.source})

    def checked(self) -> tuple[tuple[FieldOperation, ...], dict[str, tuple[str, ...]]]:
        """The operations checked with CDAP's rules, and the names of those accumulated for each
        destination, checked the same way (FieldOperationsError otherwise)."""
        operations = validate(self.operations)
        destinations = accumulated(self.operations) if self.by_destination is None else self.by_destination
        per_destination(operations, destinations)
        return operations, destinations


class MetadataContext:
    """Tags and properties written during the run, at once (CDAP's metadata context). An entity is
    a URN or a CDAP path below /v3/namespaces/ (`default/datasets/Store/field/id`)."""

    def __init__(self, client: RestClient | None):
        self._client = client

    def _path(self, entity: str) -> str:
        if self._client is None:
            raise RuntimeError("metadata needs a Lodestar server (spark.lodestar.server or server=...)")
        if entity.startswith("urn:li:"):
            return f"/v3/urns/{quote(entity, safe='')}/metadata"
        return "/v3/namespaces/" + "/".join(quote(part, safe="") for part in entity.strip("/").split("/")) \
            + "/metadata"

    def add_tags(self, entity: str, *tags: str) -> None:
        self._client.call("POST", self._path(entity) + "/tags", list(tags))

    def add_properties(self, entity: str, properties: dict[str, str]) -> None:
        self._client.call("POST", self._path(entity) + "/properties", dict(properties))

    def remove_tags(self, entity: str, *tags: str) -> None:
        path = self._path(entity) + "/tags"
        if not tags:
            self._client.call("DELETE", path)
        for tag in tags:
            self._client.call("DELETE", f"{path}/{quote(tag, safe='')}")

    def remove_properties(self, entity: str, *keys: str) -> None:
        path = self._path(entity) + "/properties"
        if not keys:
            self._client.call("DELETE", path)
        for key in keys:
            self._client.call("DELETE", f"{path}/{quote(key, safe='')}")

    def tags(self, entity: str) -> list[str]:
        return self._client.call("GET", self._path(entity) + "/tags?scope=USER")


def program_urn(namespace: str, app: str, program: str) -> str:
    return f"urn:li:dataJob:(urn:li:dataFlow:(cdap,{app},{namespace}),{program})"


@dataclass
class ProgramRun:
    """One run of a program; see the module docstring. Made by `lodestar_run`."""

    emitter: Emitter
    program: str
    namespace: str = "default"
    app: str | None = None
    program_type: str = "spark"
    properties: dict[str, str] = field(default_factory=dict)
    client: RestClient | None = None
    listener: Any = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    actor: str = "urn:li:corpuser:spark"

    def __post_init__(self) -> None:
        self.lineage = LineageRecorder()
        self.metadata = MetadataContext(self.client)
        self.start_ms = 0
        self.end_ms = 0
        self.error: str | None = None
        self.accessed: tuple[list[str], list[str]] = ([], [])  # reads, writes besides the operations'

    @property
    def urn(self) -> str:
        return f"urn:li:dataProcessInstance:{self.run_id}"

    @property
    def program_urn(self) -> str:
        return program_urn(self.namespace, self.app or self.program, self.program)

    def start(self) -> ProgramRun:
        self.start_ms = int(time.time() * 1000)
        flow = self.program_urn.removeprefix("urn:li:dataJob:(").rsplit(",", 1)[0]
        self.emitter.emit([
            upsert(flow, "dataFlowInfo", {"name": self.app or self.program, "customProperties": {}}),
            upsert(self.program_urn, "dataJobInfo", {"name": self.program, "type": {"string": self.program_type},
                                                     "flowUrn": flow}),
            upsert(self.urn, "dataProcessInstanceProperties", {
                "name": self.run_id, "type": "BATCH_AD_HOC", "created": {"time": self.start_ms, "actor": self.actor},
                "customProperties": dict(self.properties)}),
            upsert(self.urn, "dataProcessInstanceRelationships",
                   {"parentTemplate": self.program_urn, "upstreamInstances": []}),
            upsert(self.urn, "dataProcessInstanceRunEvent", {"timestampMillis": self.start_ms, "status": "STARTED"}),
        ])
        if self.listener is not None:
            self.listener.claim(self)
        return self

    def finish(self, error: BaseException | None = None, also: Sequence[Proposal] = ()) -> None:
        """Record the operations and `also` (on success) and the run's end, in one request."""
        out: list[Proposal] = [] if error is not None else list(also)
        invalid: FieldOperationsError | None = None
        operations: tuple[FieldOperation, ...] = ()
        destinations: dict[str, tuple[str, ...]] = {}
        try:
            if error is None and self.lineage.operations:
                operations, destinations = self.lineage.checked()
        except FieldOperationsError as err:  # the run fails, and the program learns why
            error = invalid = err
        if self.listener is not None:  # the listener's operations for the program's destinations go
            for action_run in self.listener.release(self, replaced_by_program=bool(operations)):
                out.append(Proposal("dataProcessInstance", action_run, "DELETE", "fieldOperations"))
        self.end_ms = int(time.time() * 1000)
        reads = sorted(set(self.lineage.sources) | set(self.accessed[0]))
        writes = sorted(set(self.lineage.destinations) | set(self.accessed[1]))
        if reads:
            out.append(upsert(self.urn, "dataProcessInstanceInput", {"inputs": reads}))
        if writes and error is None:
            out.append(upsert(self.urn, "dataProcessInstanceOutput", {"outputs": writes}))
        if operations:
            out.append(upsert(self.urn, "fieldOperations", {
                "operations": [op.to_json() for op in operations],
                "destinations": [{"destination": d, "operations": list(names)}
                                 for d, names in sorted(destinations.items())]}))
        result: dict[str, Any] = {"type": "SUCCESS", "nativeResultType": self.program_type}
        if error is not None:
            self.error = f"{type(error).__name__}: {error}"
            result = {"type": "FAILURE", "nativeResultType": type(error).__name__}
            out.append(upsert(self.urn, "dataProcessInstanceProperties", {
                "name": self.run_id, "type": "BATCH_AD_HOC", "created": {"time": self.start_ms, "actor": self.actor},
                "customProperties": {**self.properties, "error": self.error[:2000]}}))
        out.append(upsert(self.urn, "dataProcessInstanceRunEvent", {
            "timestampMillis": self.end_ms, "status": "COMPLETE", "durationMillis": self.end_ms - self.start_ms,
            "result": result}))
        self.emitter.emit(out)
        if invalid is not None:
            raise invalid

    def __enter__(self) -> ProgramRun:
        return self.start()

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        try:
            self.finish(error)
        finally:
            self.emitter.close()
            if self.client is not None:
                self.client.close()


def lodestar_run(spark: Any = None, program: str | None = None, namespace: str = "default", *, app: str | None = None,
                 server: str | None = None, token: str | None = None, properties: dict[str, str] | None = None,
                 program_type: str = "spark") -> ProgramRun:
    """A run of `program` (default: the Spark app's name) recorded in the Lodestar at `server`
    (default: `spark.lodestar.server`/`token` of the session, or the attached listener's)."""
    from ingest.emitters import RestEmitter
    from spark_emitter.listener import listener_of

    listener = listener_of(spark) if spark is not None else None
    if spark is not None:
        use_lodestar_python(spark)
    conf = spark.conf if spark is not None else None
    if server is None and listener is not None:
        server, token = listener.settings.server, token or listener.settings.token
    if server is None and conf is not None:
        server = conf.get("spark.lodestar.server", None)
        token = token or conf.get("spark.lodestar.token", None)
    if server is None:
        raise RuntimeError("lodestar_run: no Lodestar server (server=..., or spark.lodestar.server)")
    if program is None:
        program = spark.sparkContext.appName if spark is not None else "program"
    return ProgramRun(RestEmitter(server, token, 30.0), program, namespace, app, program_type, dict(properties or {}),
                      RestClient(server, token, 30.0), listener)
