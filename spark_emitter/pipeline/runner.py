"""Runs a pipeline on a SparkSession and records it in Lodestar.

One pipeline run is one `dataProcessInstance` of the pipeline's program
(`urn:li:dataJob:(urn:li:dataFlow:(cdap,<pipeline>,<namespace>),DataPipelineWorkflow)`): STARTED,
then COMPLETE with SUCCESS, or FAILURE and the error. Its properties are the runtime arguments
(each under its own name) and `pipeline-checksum` (SHA-256 of the pipeline file). The stages
record their field operations with field names only; the runner, knowing the DAG, gives each
input field the operation that produced it (operation names are `<stage>.<operation>`), works
out which stages lead to each dataset its sinks wrote and records on the run, per destination,
the operations accumulated for it (CDAP's rules, checked by GMS), with the datasets read and
written. A pipeline that fails validation records nothing. With the listener attached to the
session, the pipeline's operations replace the listener's for the datasets it writes. Rows per
stage come from the metrics Spark keeps of the sinks' writes (`counts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ingest.emitters import RestEmitter
from ingest.rest import RestClient
from schemas.field_operations import READ, TRANSFORM, WRITE, FieldOperation, InputField, accumulated
from spark_emitter.mcps import upsert
from spark_emitter.pipeline.counts import infer, labelled, last_execution, merged, scan_rows, write_metrics
from spark_emitter.pipeline.model import Pipeline, resolve
from spark_emitter.pipeline.plugins import JOINER, SINK, SOURCE, FieldRead, FieldTransform, FieldWrite, StageContext
from spark_emitter.pipeline.validate import instantiate, validated
from spark_emitter.program import ProgramRun
from spark_emitter.urns import Naming
from spark_emitter.workers import use_lodestar_python

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
                 catalog_platform: str = "hive", on_stage: Listener | None = None) -> RunResult:
    """Validate (PipelineError: nothing recorded), run and record the pipeline. A failure of a stage
    ends the run FAILED (recorded) and is in the result; it is not raised."""
    from spark_emitter.listener import listener_of

    arguments = dict(arguments or {})
    validated(pipeline, arguments)
    use_lodestar_python(spark)
    started = time.monotonic()
    properties = {**arguments, "pipeline-checksum": pipeline.checksum}
    run = ProgramRun(RestEmitter(server, token, 30.0), PROGRAM, namespace, pipeline.name, "workflow", properties,
                     RestClient(server, token, 30.0), listener_of(spark))
    naming = Naming(spark.sparkContext.appName, env, catalog_platform)
    stages = {s.name: StageResult(s.name, s.plugin.name, s.plugin.type) for s in pipeline.stages}
    result = RunResult(run.urn, run.program_urn, "FAILED", [stages[n] for n in pipeline.order()])
    names: dict[str, str] = {}  # dataset URN -> display name (referenceName)
    background = ThreadPoolExecutor(1, thread_name_prefix="lodestar-pipeline")
    starting = background.submit(run.start)  # recorded while Spark works; awaited before a sink writes
    error: BaseException | None = None
    try:
        executed = _Execution(pipeline, spark, arguments, naming, run, stages, on_stage, starting.result)
        executed.run()
        result.operations, run.lineage.by_destination = executed.operations()
        result.reads, result.writes = sorted(executed.reads), sorted(executed.writes)
        names = {**executed.reads, **executed.writes}
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
        starting.exception()  # the run's start is recorded before its end
        background.shutdown()
        run.finish(error, [upsert(urn, "datasetProperties", {"name": name, "qualifiedName": urn.split(",")[1],
                                                            "customProperties": {"referenceName": name}})
                           for urn, name in sorted(names.items())])
        result.status = "SUCCEEDED" if error is None else "FAILED"
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
                 run: ProgramRun, stages: dict[str, StageResult], on_stage: Listener | None,
                 started: Callable[[], Any]):
        self.pipeline, self.spark, self.arguments, self.naming = pipeline, spark, arguments, naming
        self.run_ = run
        self.stages, self.on_stage = stages, on_stage
        self.frames: dict[str, Any] = {}
        self.fields: dict[str, FieldMap] = {}
        self.ops: list[FieldOperation] = []
        self.stage_of: dict[str, str] = {}  # operation name -> its stage
        self.labels: dict[str, str] = {}  # sink -> the job description its write ran under
        self.started = started  # waits for the run's start to be recorded (raises if it was not)
        self.first_execution = last_execution(spark)  # the runs' own SQL executions come after it
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
                self.started()
                self.labels[name] = f"lodestar pipeline {self.pipeline.name} run {self.run_.run_id} stage {name}"
                with labelled(self.spark, self.labels[name]):
                    plugin.write(df)
                out = None
            elif joiner:
                out = plugin.transform(frames)
            else:
                out = plugin.transform(df)
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
            self.stage_of[qualified] = stage
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

    def operations(self) -> tuple[list[FieldOperation], dict[str, tuple[str, ...]]]:
        """The operations accumulated for each destination written (CDAP's record(destination,
        operations)): the operations its fields come from, and the drops by stages that lead to
        one of its sinks; their union is the run's operations. A destination no READ leads to
        has none."""
        leading: dict[str, set[str]] = {}  # destination -> the stages that lead to a sink writing it
        for op in self.ops:
            if op.type == WRITE and op.destination:
                leading.setdefault(op.destination, set()).update(self.pipeline.upstream_of(self.stage_of[op.name]))
        destinations = accumulated(self.ops, lambda d, op: self.stage_of[op.name] in leading[d])
        used = {name for names in destinations.values() for name in names}
        return [op for op in self.ops if op.name in used], destinations

    def count_rows(self) -> None:
        """Rows in and out of each stage, from the metrics of the sinks' writes (`counts`), the
        rows a plugin counted itself (PythonEvaluator's input, which Spark's plan does not
        show), and what they imply along the DAG; None where nothing says."""
        metrics = write_metrics(self.spark, list(self.labels.values()), self.first_execution)
        scans = merged(metrics)
        rows_in: dict[str, int | None] = {name: None for name in self.stages}
        rows_out: dict[str, int | None] = {name: None for name in self.stages}
        for sink, label in self.labels.items():
            rows_in[sink] = metrics[label].written
        for name, plugin in self.plugins.items():
            if self.pipeline.stage(name).plugin.type == SOURCE and hasattr(plugin, "scanned"):
                rows_out[name] = scan_rows(scans, plugin.scanned)
            counted = getattr(plugin, "rows_in", None)
            if counted is not None:
                rows_in[name] = int(counted.value)
        infer(self.pipeline.order(), self.pipeline.inputs_of, self.pipeline.outputs_of,
              lambda name: getattr(self.plugins.get(name), "keeps_rows", False), rows_in, rows_out)
        for name, stage in self.stages.items():
            stage.rows_in = None if self.pipeline.stage(name).plugin.type == SOURCE else rows_in[name]
            stage.rows_out = None if self.pipeline.stage(name).plugin.type == SINK else rows_out[name]
