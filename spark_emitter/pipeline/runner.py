"""Runs a pipeline on a SparkSession and records it in Lodestar.

One pipeline run is one `dataProcessInstance` of the pipeline's program
(`urn:li:dataJob:(urn:li:dataFlow:(cdap,<pipeline>,<namespace>),DataPipelineWorkflow)`): STARTED,
then COMPLETE with SUCCESS, or FAILURE and the error. Its properties are the runtime arguments
(each under its own name) and `pipeline-checksum` (SHA-256 of the pipeline file). The stages
record their field operations with field names only; the runner, knowing the DAG, gives each
input field the operation that produced it (operation names are `<stage>.<operation>`) and
records on the run the operations that lead to the destinations its sinks wrote (CDAP's rules,
checked by GMS), with the datasets read and written. A pipeline that fails validation records
nothing. With the listener attached to the session, the pipeline's operations replace the
listener's for the datasets it writes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingest.emitters import RestEmitter
from ingest.rest import RestClient
from schemas.field_operations import READ, TRANSFORM, WRITE, FieldOperation, InputField
from spark_emitter.mcps import upsert
from spark_emitter.pipeline.model import Pipeline, resolve
from spark_emitter.pipeline.plugins import JOINER, SINK, SOURCE, FieldRead, FieldTransform, FieldWrite, StageContext
from spark_emitter.pipeline.validate import instantiate, validated
from spark_emitter.program import ProgramRun
from spark_emitter.urns import Naming

PROGRAM = "DataPipelineWorkflow"
FieldMap = dict[str, list[InputField]]


@dataclass
class StageResult:
    name: str
    plugin: str
    type: str
    rows_in: int | None = None
    rows_out: int | None = None
    seconds: float = 0.0
    status: str = "pending"  # pending | running | done | failed
    operations: int = 0


@dataclass
class RunResult:
    run_urn: str
    program_urn: str
    status: str  # SUCCEEDED | FAILED
    stages: list[StageResult]
    operations: list[FieldOperation] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


Listener = Callable[[StageResult], None]


def run_pipeline(pipeline: Pipeline, spark: Any, arguments: Mapping[str, str] | None = None, *, server: str,
                 token: str | None = None, namespace: str = "default", env: str = "PROD",
                 catalog_platform: str = "hive", on_stage: Listener | None = None,
                 count_rows: bool = True) -> RunResult:
    """Validate (PipelineError: nothing recorded), run and record the pipeline. A failure of a stage
    ends the run FAILED (recorded) and is in the result; it is not raised."""
    from spark_emitter.listener import listener_of

    arguments = dict(arguments or {})
    validated(pipeline, arguments)
    started = time.monotonic()
    properties = {**arguments, "pipeline-checksum": pipeline.checksum}
    run = ProgramRun(RestEmitter(server, token, 30.0), PROGRAM, namespace, pipeline.name, "workflow", properties,
                     RestClient(server, token, 30.0), listener_of(spark))
    naming = Naming(spark.sparkContext.appName, env, catalog_platform)
    stages = {s.name: StageResult(s.name, s.plugin.name, s.plugin.type) for s in pipeline.stages}
    result = RunResult(run.urn, run.program_urn, "FAILED", [stages[n] for n in pipeline.order()])
    names: dict[str, str] = {}  # dataset URN -> display name (referenceName)
    run.start()
    error: BaseException | None = None
    try:
        executed = _Execution(pipeline, spark, arguments, naming, run, stages, on_stage, count_rows)
        executed.run()
        result.operations = executed.operations()
        result.reads, result.writes = sorted(executed.reads), sorted(executed.writes)
        names = {**executed.reads, **executed.writes}
        if count_rows:
            executed.count_rows()
        if result.operations:
            run.lineage.record(result.operations)
        run.accessed = (result.reads, result.writes)
    except Exception as err:  # the run fails, recorded with its error
        error = err
        for stage in stages.values():
            if stage.status == "running":
                stage.status = "failed"
                if on_stage:
                    on_stage(stage)
    try:
        run.finish(error)
        result.status = "SUCCEEDED" if error is None else "FAILED"
        if names and error is None:
            run.emitter.emit([upsert(urn, "datasetProperties", {"name": name, "qualifiedName": urn.split(",")[1],
                                                                "customProperties": {"referenceName": name}})
                              for urn, name in sorted(names.items())])
    except Exception as err:
        error = error or err
        result.status = "FAILED"
    finally:
        run.emitter.close()
        run.client.close()
    result.error = run.error or (f"{type(error).__name__}: {error}" if error else None)
    result.seconds = time.monotonic() - started
    return result


class _Execution:
    def __init__(self, pipeline: Pipeline, spark: Any, arguments: Mapping[str, str], naming: Naming,
                 run: ProgramRun, stages: dict[str, StageResult], on_stage: Listener | None, observe: bool = True):
        self.pipeline, self.spark, self.arguments, self.naming = pipeline, spark, arguments, naming
        self.run_ = run
        self.stages, self.on_stage = stages, on_stage
        self.frames: dict[str, Any] = {}
        self.fields: dict[str, FieldMap] = {}
        self.ops: list[FieldOperation] = []
        self.observations: dict[str, Any] = {}
        self.observe = observe
        self.plugins: dict[str, Any] = {}
        self.reads: dict[str, str] = {}
        self.writes: dict[str, str] = {}

    def _report(self, stage: StageResult) -> None:
        if self.on_stage is not None:
            self.on_stage(stage)

    def run(self) -> None:
        for name in self.pipeline.order():
            stage = self.pipeline.stage(name)
            result = self.stages[name]
            result.status = "running"
            self._report(result)
            began = time.monotonic()
            properties = {k: resolve(v, self.arguments) for k, v in stage.plugin.properties.items()}
            plugin = instantiate(stage, properties)
            self.plugins[name] = plugin
            inputs = self.pipeline.inputs_of(name)
            joiner = getattr(plugin, "multi_input", False) or stage.plugin.type == JOINER
            df: Any = None
            fmap: FieldMap = {}
            if joiner:
                frames = {a: self.frames[a] for a in inputs}
                for a in inputs:
                    for f, refs in self.fields[a].items():
                        fmap[f"{a}.{f}"] = list(refs)
                input_fields = [f"{a}.{c}" for a in inputs for c in frames[a].columns]
            elif inputs:
                df = self.frames[inputs[0]]
                for a in inputs[1:]:
                    df = df.unionByName(self.frames[a], allowMissingColumns=True)
                for a in inputs:
                    for f, refs in self.fields[a].items():
                        known = fmap.setdefault(f, [])
                        known.extend(r for r in refs if r not in known)
                input_fields = list(df.columns)
            else:
                input_fields = []
            context = StageContext(name, self.spark, input_fields, {a: list(self.frames[a].columns) for a in inputs},
                                   self.arguments, self.run_.metadata, self.naming, stage.field_mutations)
            plugin.prepare_run(context)
            self.reads.update(context.reads)
            self.writes.update(context.writes)
            result.operations = len(context.operations)
            fmap = self._resolve(name, context.operations, fmap)
            if stage.plugin.type == SOURCE:
                out = plugin.read(self.spark)
            elif stage.plugin.type == SINK:
                plugin.write(df)
                out = None
            elif joiner:
                out = plugin.transform(frames)
            else:
                out = plugin.transform(df)
            if out is not None and self.observe:
                from pyspark.sql import Observation
                from pyspark.sql import functions as F

                observation = Observation(f"lodestar-{uuid.uuid4().hex[:12]}-{name}")
                out = out.observe(observation, F.count(F.lit(1)).alias("rows"))
                self.observations[name] = observation
            if out is not None:
                self.frames[name] = out
                self.fields[name] = {c: fmap[c] for c in out.columns if c in fmap}
            result.seconds = time.monotonic() - began
            result.status = "done"
            self._report(result)

    def _resolve(self, stage: str, operations: list[Any], fmap: FieldMap) -> FieldMap:
        """The stage's operations with each input given its origin; the fields' origins after them."""
        fmap = {k: list(v) for k, v in fmap.items()}
        for op in operations:
            qualified = f"{stage}.{op.name}"
            if isinstance(op, FieldRead):
                self.ops.append(FieldOperation(qualified, READ, op.description, source=op.source,
                                               outputs=tuple(op.outputs)))
                for f in op.outputs:
                    fmap[f] = [InputField(qualified, f)]
                continue
            inputs = tuple(ref for f in op.inputs for ref in fmap.get(f, []))
            if isinstance(op, FieldWrite):
                self.ops.append(FieldOperation(qualified, WRITE, op.description, destination=op.destination,
                                               inputs=inputs))
                continue
            assert isinstance(op, FieldTransform)
            self.ops.append(FieldOperation(qualified, TRANSFORM, op.description, inputs=inputs,
                                           outputs=tuple(op.outputs)))
            if not op.outputs:
                for f in op.inputs:
                    fmap.pop(f, None)
            for f in op.outputs:
                fmap[f] = [InputField(qualified, f)]
        return fmap

    def operations(self) -> list[FieldOperation]:
        """The operations leading to the destinations written (none when there is no READ and WRITE)."""
        by_name = {op.name: op for op in self.ops}
        wanted: set[str] = set()
        stack = [op.name for op in self.ops if op.type == WRITE]
        while stack:
            current = stack.pop()
            if current not in wanted:
                wanted.add(current)
                stack.extend(i.origin for i in by_name[current].inputs if i.origin in by_name)
        for op in self.ops:  # drops of fields that lead there are part of it (a TRANSFORM without outputs)
            if op.type == TRANSFORM and not op.outputs and op.inputs and all(i.origin in wanted for i in op.inputs):
                wanted.add(op.name)
        used = [op for op in self.ops if op.name in wanted]
        if not any(op.type == READ for op in used) or not any(op.type == WRITE for op in used):
            return []
        return used

    def count_rows(self) -> None:
        """Rows out of each stage, observed while the sinks ran (an observation is only complete when
        Spark ran the observed plan as a query: not through an RDD, as PythonEvaluator does; its
        input rows are counted by the plugin); rows in: the sum of the inputs' rows out."""
        self.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(30_000)  # observations complete there
        for name, observation in self.observations.items():
            if observation._jo.future().isCompleted():
                self.stages[name].rows_out = int(observation.get.get("rows", 0))
        for name, plugin in self.plugins.items():
            counted = getattr(plugin, "rows_in", None)
            inputs = self.pipeline.inputs_of(name)
            if counted is not None:
                self.stages[name].rows_in = int(counted.value)
                if len(inputs) == 1 and self.stages[inputs[0]].rows_out is None \
                        and len(self.pipeline.outputs_of(inputs[0])) == 1:
                    self.stages[inputs[0]].rows_out = int(counted.value)
        for name in reversed(self.pipeline.order()):  # a stage that keeps rows: its input's rows out are its own
            inputs, stage = self.pipeline.inputs_of(name), self.stages[name]
            if getattr(self.plugins.get(name), "keeps_rows", False) and len(inputs) == 1 \
                    and stage.rows_out is not None and self.stages[inputs[0]].rows_out is None \
                    and len(self.pipeline.outputs_of(inputs[0])) == 1:
                self.stages[inputs[0]].rows_out = stage.rows_out
        for name, stage in self.stages.items():
            counts = [self.stages[a].rows_out for a in self.pipeline.inputs_of(name)]
            if stage.rows_in is None and counts and all(c is not None for c in counts):
                stage.rows_in = sum(counts)

    def _reaches_sink(self, name: str) -> bool:
        stack, seen = [name], set()
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if self.pipeline.stage(current).plugin.type == SINK:
                return True
            stack.extend(self.pipeline.outputs_of(current))
        return False
