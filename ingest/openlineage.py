"""OpenLineage RunEvents as MCPs (the JSON form of `ingest.proposal`).

- a dataset `{namespace, name}` is `urn:li:dataset:(urn:li:dataPlatform:<scheme>,<name>,PROD)`,
  the scheme being the namespace's (`postgres://db:5432` -> postgres) or the whole namespace;
- a job is the dataJob `(urn:li:dataFlow:(openlineage,<job namespace>,PROD),<job name>)`, a
  real entity: its `dataJobInfo` (name, type from the jobType facet, description from the
  documentation facet, the source code location, the SQL and the job type's integration and
  processing type as custom properties) and its flow's `dataFlowInfo` (the namespace) with every
  event; its `dataJobInputOutput` from the latest event that names inputs or outputs;
- a run is `urn:li:dataProcessInstance:<runId>`: its properties (created at the first event,
  written with If-None-Match: * so later events keep them), its job and parent run, inputs and
  outputs, and a run event: START -> STARTED; COMPLETE, FAIL, ABORT -> COMPLETE with SUCCESS,
  FAILURE, FAILURE (the native result says which); RUNNING and OTHER add inputs and outputs;
- the schema facet of a dataset is its schemaMetadata (nested fields as `parent/child`): an
  output's replaces the one known, an input's only fills in a dataset without one (a job's view
  of a table it reads does not replace what the table's own source, e.g. DataHub's postgres
  source with column comments and keys, says of it); its
  documentation facet its description (a PATCH of datasetProperties: what other writers put there
  stays); its tags facet tags of it;
- the tags facets of the run and the job (dbt's model tags, Airflow's DAG tags) are tags of the
  job (a PATCH of globalTags, adding): `urn:li:tag:<key>`, or `<key>:<value>` unless the value
  is "true"; a tag of one field (`field`) and the client's own (source OPENLINEAGE_CLIENT: its
  version) are left out;
- the columnLineage facets of the outputs are the run's fieldOperations: one READ per input
  dataset, one TRANSFORM per output field (from all of its input fields), one WRITE per output.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from schemas.urns import encode_part

EVENT_TYPES = {"START": ("STARTED", None), "RUNNING": (None, None), "OTHER": (None, None),
               "COMPLETE": ("COMPLETE", "SUCCESS"), "FAIL": ("COMPLETE", "FAILURE"), "ABORT": ("COMPLETE", "FAILURE")}
ORCHESTRATOR = "openlineage"
CLIENT_TAGS = "OPENLINEAGE_CLIENT"  # the source of the tags the client adds to every event (its version)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
_NUMBERS = ("int", "long", "bigint", "smallint", "tinyint", "double", "float", "decimal", "numeric", "real", "integer")


class OpenLineageError(ValueError):
    """An event that cannot be read; the message names the field."""


def _object(value: Any, where: str) -> dict[str, Any]:
    """`value` if it is an object; {} when absent."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OpenLineageError(f"{where}: must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OpenLineageError(f"{where}: must be a list")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise OpenLineageError(f"{where}: must be a non-empty string")
    return value


def dataset_urn(namespace: str, name: str) -> str:
    match = _SCHEME.match(namespace)
    platform = (match.group(1) if match else namespace).lower()
    platform = re.sub(r"[^a-z0-9_\-]", "_", platform) or "unknown"
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{encode_part(name)},PROD)"


def flow_urn(namespace: str) -> str:
    return f"urn:li:dataFlow:({ORCHESTRATOR},{encode_part(namespace)},PROD)"


def job_urn(namespace: str, name: str) -> str:
    return f"urn:li:dataJob:({flow_urn(namespace)},{encode_part(name)})"


def _patch(urn: str, aspect: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"entityType": urn.removeprefix("urn:li:").partition(":")[0], "entityUrn": urn, "changeType": "PATCH",
            "aspectName": aspect, "aspect": {"value": ops, "contentType": "application/json-patch+json"}}


def _pointer(key: str) -> str:
    """`key` as one JSON Pointer segment."""
    return key.replace("~", "~0").replace("/", "~1")


def tag_urns(facet: Any, where: str) -> list[str]:
    """The tag URNs of a tags facet `{"tags": [{"key", "value", "source", "field"?}]}`, without
    the tags of single fields and the client's own."""
    urns = []
    for i, tag in enumerate(_list(_object(facet, where).get("tags"), f"{where}.tags")):
        tag = _object(tag, f"{where}.tags[{i}]")
        if tag.get("field") or tag.get("source") == CLIENT_TAGS:
            continue
        key = _text(tag.get("key"), f"{where}.tags[{i}].key")
        value = tag.get("value")
        name = key if value in (None, "", "true", True) else f"{key}:{value}"
        urns.append(f"urn:li:tag:{encode_part(name)}")
    return sorted(set(urns))


def _tagged(urn: str, tags: list[str]) -> list[dict[str, Any]]:
    """A PATCH adding `tags` to the entity's globalTags (none when there are none)."""
    if not tags:
        return []
    return [_patch(urn, "globalTags", [{"op": "add", "path": f"/tags/{_pointer(tag)}", "value": {"tag": tag}}
                                       for tag in tags])]


def _dataset_facets(urn: str, facets: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The MCPs of a dataset's schema, documentation and tags facets (`where`: inputs[i] or outputs[i])."""
    out = []
    if facets.get("schema") is not None:
        schema = _schema(urn, _object(facets["schema"], f"{where}.facets.schema"), f"{where}.facets.schema")
        create_only = {"changeType": "CREATE", "headers": {"If-None-Match": "*"}} if where.startswith("inputs") else {}
        out.append(_mcp(urn, "schemaMetadata", schema, **create_only))
    description = _object(facets.get("documentation"), f"{where}.facets.documentation").get("description")
    if isinstance(description, str) and description:
        out.append(_patch(urn, "datasetProperties", [{"op": "add", "path": "/description", "value": description}]))
    if facets.get("tags") is not None:
        out += _tagged(urn, tag_urns(facets["tags"], f"{where}.facets.tags"))
    return out


def _millis(text: Any) -> int:
    try:
        return int(datetime.fromisoformat(_text(text, "eventTime").replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        raise OpenLineageError(f"eventTime: {text!r} is not an ISO 8601 time") from None


def _mcp(urn: str, aspect: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"entityType": urn.removeprefix("urn:li:").partition(":")[0], "entityUrn": urn, "changeType": "UPSERT",
            "aspectName": aspect, "aspect": {"json": value}, **extra}


def _datasets(event: dict[str, Any], key: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(URN, where, facets) of each dataset of `inputs` or `outputs`."""
    out = []
    for i, item in enumerate(_list(event.get(key), key)):
        where = f"{key}[{i}]"
        item = _object(item, where)
        urn = dataset_urn(_text(item.get("namespace"), f"{where}.namespace"), _text(item.get("name"), f"{where}.name"))
        out.append((urn, where, _object(item.get("facets"), f"{where}.facets")))
    return out


def _schema_fields(fields: Any, where: str, prefix: str = "") -> list[dict[str, Any]]:
    out = []
    for i, field in enumerate(_list(fields, where)):
        field = _object(field, f"{where}[{i}]")
        path = f"{prefix}{_text(field.get('name'), f'{where}[{i}].name')}"
        native = str(field.get("type") or "string")
        kind = ("NumberType" if native.lower().startswith(_NUMBERS) else "BooleanType" if native.lower() == "boolean"
                else "RecordType" if field.get("fields") else "StringType")
        item = {"fieldPath": path, "nativeDataType": native, "type": {"type": {f"com.linkedin.schema.{kind}": {}}}}
        if isinstance(field.get("description"), str):
            item["description"] = field["description"]
        out.append(item)
        out.extend(_schema_fields(field.get("fields"), f"{where}[{i}].fields", f"{path}/"))
    return out


def _schema(urn: str, facet: dict[str, Any], where: str) -> dict[str, Any]:
    platform = urn.split(",")[0].removeprefix("urn:li:dataset:(")
    return {"schemaName": urn, "platform": platform, "version": 0, "hash": "",
            "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
            "fields": _schema_fields(facet.get("fields"), f"{where}.fields")}


def _input_fields(spec: dict[str, Any], where: str) -> list[tuple[str, str, list[str]]]:
    """(dataset URN, field, transformation kinds) of a columnLineage output field's inputs."""
    out = []
    for i, item in enumerate(_list(spec.get("inputFields"), f"{where}.inputFields")):
        at = f"{where}.inputFields[{i}]"
        item = _object(item, at)
        kinds = []
        for j, t in enumerate(_list(item.get("transformations"), f"{at}.transformations")):
            t = _object(t, f"{at}.transformations[{j}]")
            kinds.append(str(t.get("type") or "") + (f"/{t['subtype']}" if t.get("subtype") else ""))
        out.append((dataset_urn(_text(item.get("namespace"), f"{at}.namespace"), _text(item.get("name"),
                                                                                         f"{at}.name")),
                    _text(item.get("field"), f"{at}.field"), kinds))
    return out


def field_operations(outputs: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The fieldOperations of the outputs' columnLineage facets (empty when there are none)."""
    reads: dict[str, set[str]] = {}
    transforms, writes = [], []
    for output, where, facets in outputs:
        at = f"{where}.facets.columnLineage.fields"
        lineage = _object(_object(facets.get("columnLineage"), f"{where}.facets.columnLineage").get("fields"), at)
        inputs = []
        for out_field, spec in sorted(lineage.items()):
            spec = _object(spec, f"{at}.{out_field}")
            found = _input_fields(spec, f"{at}.{out_field}")
            sources = [(source, field) for source, field, _ in found]
            if not sources:
                continue
            kinds = sorted({k for _, _, ks in found for k in ks} - {""})
            name = f"transform {output} {out_field}"
            description = spec.get("transformationDescription") or ", ".join(kinds) or spec.get(
                "transformationType") or ""
            description = description if isinstance(description, str) else str(description)
            transforms.append({"name": name, "type": "TRANSFORM", "description": description,
                               "inputs": [{"origin": f"read {source}", "field": field} for source, field in sources],
                               "outputs": [out_field]})
            for source, field in sources:
                reads.setdefault(source, set()).add(field)
            inputs.append({"origin": name, "field": out_field})
        if inputs:
            writes.append({"name": f"write {output}", "type": "WRITE", "destination": output, "inputs": inputs})
    if not writes:
        return []
    return ([{"name": f"read {source}", "type": "READ", "source": source, "outputs": sorted(fields)}
             for source, fields in sorted(reads.items())] + transforms + writes)


def _job(urn: str, namespace: str, name: str, facets: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's own aspects and its flow's, from the job and its facets."""
    kind = _object(facets.get("jobType"), "job.facets.jobType")
    properties = {"namespace": namespace}
    for key, value in (("integration", kind.get("integration")), ("processingType", kind.get("processingType")),
                       ("sourceCodeLocation", _object(facets.get("sourceCodeLocation"),
                                                      "job.facets.sourceCodeLocation").get("url")),
                       ("sql", _object(facets.get("sql"), "job.facets.sql").get("query"))):
        if isinstance(value, str) and value:
            properties[key] = value
    info: dict[str, Any] = {"name": name, "type": {"string": str(kind.get("jobType") or "COMMAND")},
                            "flowUrn": flow_urn(namespace), "customProperties": properties}
    description = _object(facets.get("documentation"), "job.facets.documentation").get("description")
    if isinstance(description, str) and description:
        info["description"] = description
    return [_mcp(info["flowUrn"], "dataFlowInfo", {"name": namespace, "customProperties": {}}),
            _mcp(urn, "dataJobInfo", info)]


def proposals(event: Any) -> list[dict[str, Any]]:
    """The MCPs of one RunEvent; raises OpenLineageError naming what is wrong."""
    if not isinstance(event, dict):
        raise OpenLineageError("body: must be an OpenLineage RunEvent object")
    event_type = event.get("eventType") or "OTHER"
    if not isinstance(event_type, str) or event_type not in EVENT_TYPES:
        raise OpenLineageError(f"eventType: {event_type!r} is not one of {', '.join(EVENT_TYPES)}")
    time_ms = _millis(event.get("eventTime"))
    run, job = event.get("run"), event.get("job")
    if not isinstance(run, dict) or not isinstance(job, dict):
        raise OpenLineageError("run and job: both are required objects")
    facets = _object(run.get("facets"), "run.facets")
    run_urn = f"urn:li:dataProcessInstance:{encode_part(_text(run.get('runId'), 'run.runId'))}"
    namespace, name = _text(job.get("namespace"), "job.namespace"), _text(job.get("name"), "job.name")
    job_facets = _object(job.get("facets"), "job.facets")
    job = job_urn(namespace, name)
    inputs, outputs = _datasets(event, "inputs"), _datasets(event, "outputs")
    parent = _object(_object(facets.get("parent"), "run.facets.parent").get("run"), "run.facets.parent.run").get(
        "runId")
    relationships: dict[str, Any] = {"parentTemplate": job, "upstreamInstances": []}
    if parent:
        relationships["parentInstance"] = f"urn:li:dataProcessInstance:{encode_part(str(parent))}"
    out = [
        _mcp(run_urn, "dataProcessInstanceProperties", {
            "name": str(run["runId"]), "created": {"time": time_ms, "actor": "urn:li:corpuser:openlineage"},
            "customProperties": {"producer": str(event.get("producer", ""))}},
            changeType="CREATE", headers={"If-None-Match": "*"}),
        _mcp(run_urn, "dataProcessInstanceRelationships", relationships),
    ]
    out += _job(job, namespace, name, job_facets)
    if inputs or outputs:
        out.append(_mcp(job, "dataJobInputOutput", {"inputDatasets": [u for u, _, _ in inputs],
                                                    "outputDatasets": [u for u, _, _ in outputs]}))
    if inputs:
        out.append(_mcp(run_urn, "dataProcessInstanceInput", {"inputs": [u for u, _, _ in inputs]}))
    if outputs:
        out.append(_mcp(run_urn, "dataProcessInstanceOutput", {"outputs": [u for u, _, _ in outputs]}))
    out += _tagged(job, sorted(set(tag_urns(facets.get("tags"), "run.facets.tags")
                                   + tag_urns(job_facets.get("tags"), "job.facets.tags"))))
    for urn, where, dataset_facets in inputs + outputs:
        out += _dataset_facets(urn, dataset_facets, where)
    operations = field_operations(outputs)
    if operations:
        out.append(_mcp(run_urn, "fieldOperations", {"operations": operations}))
    status, result = EVENT_TYPES[event_type]
    if status is not None:
        point: dict[str, Any] = {"timestampMillis": time_ms, "status": status}
        if result is not None:
            point["result"] = {"type": result, "nativeResultType": event_type}
        out.append(_mcp(run_urn, "dataProcessInstanceRunEvent", point))
    return out
