"""The proposals a Spark application and its write actions become.

- the application: `urn:li:dataFlow:(spark,<app name>,<env>)`, dataFlowInfo;
- the job: `urn:li:dataJob:(<flow>,<spark.lodestar.job or app name>)`, dataJobInfo and
  dataJobInputOutput (every dataset the application read or wrote so far);
- the application's run: `urn:li:dataProcessInstance:<app id>`, properties, relationships
  (parentTemplate: the flow) and run events (STARTED at attach, COMPLETE at close: SUCCESS, or
  FAILURE when any of its write actions failed);
- each write action's run: `urn:li:dataProcessInstance:<app id>-<execution id>`, properties,
  relationships (parentTemplate: the job; parentInstance: the application's run), input, output,
  run events (STARTED, then COMPLETE with SUCCESS, or FAILURE and the error class) and
  fieldOperations;
- each dataset read or written (URNs: `spark_emitter.urns`): datasetProperties and schemaMetadata;
  the target of a successful write also upstreamLineage with fineGrainedLineages (one entry per
  column and chain of operations; filter, join and group-by columns in entries without
  downstreams, so they are no source of any value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingest.proposal import Proposal
from spark_emitter.field_operations import field_operations
from spark_emitter.lineage import WriteLineage
from spark_emitter.urns import Dataset, field_urn

_TYPES = {"string": "StringType", "boolean": "BooleanType", "binary": "BytesType", "date": "DateType",
          "timestamp": "TimeType", "timestamp_ntz": "TimeType", "void": "NullType"}
_NUMBERS = ("byte", "short", "integer", "long", "float", "double", "decimal")


@dataclass(frozen=True)
class App:
    """The Spark application as Lodestar names it."""

    app_id: str
    name: str
    job: str
    env: str
    user: str
    start_ms: int
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def flow_urn(self) -> str:
        return f"urn:li:dataFlow:(spark,{self.name},{self.env})"

    @property
    def job_urn(self) -> str:
        return f"urn:li:dataJob:({self.flow_urn},{self.job})"

    @property
    def run_urn(self) -> str:
        return f"urn:li:dataProcessInstance:{self.app_id}"

    def action_urn(self, execution_id: int | str) -> str:
        return f"urn:li:dataProcessInstance:{self.app_id}-{execution_id}"

    @property
    def actor(self) -> str:
        return f"urn:li:corpuser:{self.user}"


@dataclass(frozen=True)
class Action:
    """One finished write action."""

    execution_id: int | str  # Spark's execution id, or failed-<n> for a failure before Spark ran anything
    func: str
    command: str
    start_ms: int
    end_ms: int
    error: dict[str, str] | None = None


def upsert(urn: str, aspect: str, value: dict[str, Any]) -> Proposal:
    return Proposal(urn.removeprefix("urn:li:").split(":", 1)[0], urn, "UPSERT", aspect, value)


def application_started(app: App) -> list[Proposal]:
    return [
        upsert(app.flow_urn, "dataFlowInfo", {"name": app.name, "customProperties": dict(app.properties),
                                              "env": app.env if app.env in ("PROD", "DEV", "TEST", "QA") else None}),
        upsert(app.job_urn, "dataJobInfo", {"name": app.job, "type": {"string": "spark"}, "flowUrn": app.flow_urn}),
        upsert(app.run_urn, "dataProcessInstanceProperties", {
            "name": app.app_id, "type": "BATCH_AD_HOC", "created": {"time": app.start_ms, "actor": app.actor},
            "customProperties": {"appName": app.name, **dict(app.properties)}}),
        upsert(app.run_urn, "dataProcessInstanceRelationships",
               {"parentTemplate": app.flow_urn, "upstreamInstances": []}),
        upsert(app.run_urn, "dataProcessInstanceRunEvent", {"timestampMillis": app.start_ms, "status": "STARTED"}),
    ]


def application_ended(app: App, end_ms: int, failed_actions: int = 0) -> list[Proposal]:
    """The application's run completes with FAILURE when any of its write actions failed."""
    return [upsert(app.run_urn, "dataProcessInstanceRunEvent", {
        "timestampMillis": end_ms, "status": "COMPLETE", "durationMillis": end_ms - app.start_ms,
        "result": {"type": "FAILURE" if failed_actions else "SUCCESS", "nativeResultType": "spark"}})]


def action_proposals(app: App, action: Action, lineage: WriteLineage | None,
                     job_io: tuple[list[str], list[str]]) -> list[Proposal]:
    """The run of one write action, its datasets, lineage and field operations, and the job's
    inputs and outputs so far (`job_io`)."""
    run = app.action_urn(action.execution_id)
    sources = lineage.sources if lineage else []
    target = lineage.target if lineage else None
    properties = {"funcName": action.func, "command": action.command, "executionId": str(action.execution_id),
                  "appId": app.app_id}
    if target is not None:
        properties["target"] = target.urn
    if action.error:
        properties.update(action.error)
    out = [
        upsert(run, "dataProcessInstanceProperties", {
            "name": f"{app.job}-{action.execution_id}", "type": "BATCH_AD_HOC",
            "created": {"time": action.start_ms, "actor": app.actor}, "customProperties": properties}),
        upsert(run, "dataProcessInstanceRelationships", {
            "parentTemplate": app.job_urn, "parentInstance": app.run_urn, "upstreamInstances": []}),
        upsert(run, "dataProcessInstanceInput", {"inputs": [s.urn for s in sources]}),
        upsert(run, "dataProcessInstanceOutput", {"outputs": [target.urn] if target else []}),
        upsert(run, "dataProcessInstanceRunEvent", {"timestampMillis": action.start_ms, "status": "STARTED"}),
        upsert(run, "dataProcessInstanceRunEvent", {
            "timestampMillis": action.end_ms, "status": "COMPLETE", "durationMillis": action.end_ms - action.start_ms,
            "result": ({"type": "FAILURE", "nativeResultType": action.error["errorClass"]} if action.error
                       else {"type": "SUCCESS", "nativeResultType": action.func})}),
        upsert(app.job_urn, "dataJobInputOutput", {"inputDatasets": job_io[0], "outputDatasets": job_io[1]}),
    ]
    for dataset in sources:
        out.extend(_dataset(dataset))
    if lineage is None or action.error:
        return out  # a failed write changed no data: no schema or lineage for its target
    out.extend(_dataset(lineage.target))
    out.append(upsert(lineage.target.urn, "upstreamLineage", _upstream_lineage(lineage, app)))
    operations = field_operations(lineage)
    if operations is not None:
        out.append(upsert(run, "fieldOperations", operations))
    return out


def _dataset(dataset: Dataset) -> list[Proposal]:
    """Properties and schema: equal for every run that sees the dataset unchanged (no new version)."""
    props = dict(dataset.properties)
    return [
        upsert(dataset.urn, "datasetProperties", {
            "name": dataset.name.rsplit("/", 1)[-1], "qualifiedName": dataset.name,
            "customProperties": {k: v for k, v in props.items() if v}}),
        upsert(dataset.urn, "schemaMetadata", {
            "schemaName": dataset.name, "platform": f"urn:li:dataPlatform:{dataset.platform}", "version": 0,
            "hash": "", "platformSchema": {"com.linkedin.schema.OtherSchema": {
                "rawSchema": ",".join(f"{name} {kind}" for name, kind in dataset.schema)}},
            "fields": [{"fieldPath": name, "nativeDataType": kind, "type": {"type": {_type_class(kind): {}}}}
                       for name, kind in dataset.schema]}),
    ]


def _type_class(kind: str) -> str:
    if kind.startswith(_NUMBERS):
        return "com.linkedin.schema.NumberType"
    if kind.startswith('{"type":"array"'):
        return "com.linkedin.schema.ArrayType"
    if kind.startswith('{"type":"map"'):
        return "com.linkedin.schema.MapType"
    if kind.startswith('{"type":"struct"'):
        return "com.linkedin.schema.RecordType"
    text = kind.startswith(("char", "varchar"))
    return "com.linkedin.schema." + _TYPES.get(kind, "StringType" if text else "NullType")


def _upstream_lineage(lineage: WriteLineage, app: App) -> dict[str, Any]:
    """The target's lineage as this write made it (no times or run ids: a rerun adds no version;
    the runs that wrote it are the runs whose output it is)."""
    target = lineage.target.urn
    grouped: dict[tuple[str, str], list[str]] = {}
    for edge in lineage.edges():
        grouped.setdefault((edge.column, edge.transform), []).append(field_urn(edge.source.urn, edge.source_field))
    fine = [{"upstreamType": "FIELD_SET", "upstreams": sorted(set(upstreams)), "downstreamType": "FIELD",
             "downstreams": [field_urn(target, column)], "transformOperation": transform}
            for (column, transform), upstreams in grouped.items()]
    controls: dict[str, list[str]] = {}
    for use in lineage.control_uses():
        controls.setdefault(use.label, []).append(field_urn(use.source.urn, use.source_field))
    fine.extend({"upstreamType": "FIELD_SET", "upstreams": sorted(set(upstreams)), "downstreamType": "FIELD_SET",
                 "downstreams": None, "transformOperation": label} for label, upstreams in controls.items())
    return {"upstreams": [{"dataset": s.urn, "type": "TRANSFORMED", "properties": {"job": app.job_urn}}
                          for s in lineage.sources],
            "fineGrainedLineages": fine}
