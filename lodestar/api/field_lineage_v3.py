"""CDAP's field-level lineage API (v3) over the run-lineage tables. Field paths of nested
records are full paths (`employee/name`; URL-encode the `/` as %2F in a path segment).

GET /v3/namespaces/{ns}/datasets/{ds}/lineage/fields?start=&end=&prefix=&includeCurrent=
GET /v3/namespaces/{ns}/datasets/{ds}/lineage/fields/{field}?start=&end=&direction=
GET /v3/namespaces/{ns}/datasets/{ds}/lineage/fields/{field}/operations?start=&end=&direction=
GET /v3/namespaces/{ns}/endpoints/{endpoint}/fields/lineage?start=&end=&level=
GET /v3/namespaces/{ns}/endpoints/{endpoint}/fields/{field}/lineage?start=&end=&direction=   (detailed graph)
GET /v3/namespaces/{ns}/endpoints/{endpoint}/fields/{field}/lineage/simple?start=&end=&direction=
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gms import access
from gms.access import can_read
from lodestar.api import cdap_names
from lodestar.api.access import readable, require
from lodestar.api.context import GMS_KEY, api_of, error
from lodestar.api.limits import MAX_HOPS
from lodestar.api.openapi import ARRAY, query_param, read_operation
from lodestar.api.timerange import WINDOW_PARAMETERS, ParameterError, parse_levels, parse_window
from mcl_processor.runs.field_graph import Path
from mcl_processor.runs.field_lineage import DIRECTIONS, INCOMING, FieldLineage
from mcl_processor.runs.model import Window
from schemas.field_operations import READ, TRANSFORM, WRITE, FieldOperation

LINEAGE_KEY = web.AppKey("field_lineage", FieldLineage)
_GRAPH_DIRECTIONS = {"backward": "incoming", "forward": "outgoing", "incoming": "incoming", "outgoing": "outgoing"}


class BadRequest(ValueError):
    """A parameter that makes the request meaningless; the message names it."""


def _window(request: web.Request) -> tuple[int, int, Window]:
    try:
        return parse_window(request.query.get("start"), request.query.get("end"))
    except ParameterError as err:
        raise BadRequest(str(err)) from None


def _direction(request: web.Request, allowed: dict[str, Any]) -> str:
    direction = request.query.get("direction")
    if direction is None:
        raise BadRequest(f"direction: is required ({', '.join(allowed)})")
    if direction not in allowed:
        raise BadRequest(f"direction: invalid value {direction!r}; it must be one of {', '.join(allowed)}")
    return direction


def _dataset(request: web.Request, key: str) -> str:
    """The dataset the path names; 403 unless the caller may read it."""
    urn = cdap_names.dataset_urn(request.match_info["ns"], request.match_info[key])
    require(request, access.READ, urn)
    return urn


def _lineage(request: web.Request) -> FieldLineage:
    return request.app[LINEAGE_KEY]


def handler(fn):
    """Bad parameters become a 400 naming them."""
    async def wrapped(request: web.Request) -> web.Response:
        try:
            return web.json_response(fn(request))
        except BadRequest as err:
            return error(400, "invalid_request", str(err))
    wrapped.__name__ = fn.__name__
    return wrapped


@handler
def fields(request: web.Request) -> Any:
    _, _, window = _window(request)
    dataset = _dataset(request, "ds")
    prefix = request.query.get("prefix", "")
    found = {name: True for name in _lineage(request).fields(dataset, window)}
    include_current = request.query.get("includeCurrent", "false").lower()
    if include_current not in ("true", "false"):
        raise BadRequest(f"includeCurrent: {request.query['includeCurrent'][:100]!r} is neither true nor false")
    if include_current == "true":
        schema = api_of(request).gms.store.get(dataset, "schemaMetadata")
        for item in ((schema.value or {}).get("fields", []) if schema is not None else []):
            found.setdefault(item["fieldPath"], False)
    return [{"name": name, "lineage": lineage} for name, lineage in sorted(found.items()) if name.startswith(prefix)]


@handler
def summary(request: web.Request) -> Any:
    start_s, end_s, window = _window(request)
    direction = _direction(request, DIRECTIONS)
    dataset, name = _dataset(request, "ds"), request.match_info["field"]
    result = _lineage(request).summary(dataset, name, direction, window)
    visible = readable(request)
    body: dict[str, Any] = {"datasetName": cdap_names.endpoint(dataset)["name"], "fieldName": name,
                            "startTimeInSeconds": start_s, "endTimeInSeconds": end_s}
    for side, ends in result.items():
        body[side] = [{**_dataset_ref(other), "fields": sorted(names)} for other, names in sorted(ends.items())
                      if can_read(visible, other)]
    return body


@handler
def operations(request: web.Request) -> Any:
    start_s, end_s, window = _window(request)
    direction = _direction(request, DIRECTIONS)
    dataset, name = _dataset(request, "ds"), request.match_info["field"]
    api = api_of(request)
    body: dict[str, Any] = {"datasetName": cdap_names.endpoint(dataset)["name"], "fieldName": name,
                            "startTimeInSeconds": start_s, "endTimeInSeconds": end_s}
    for side, groups in _lineage(request).operations(dataset, name, direction, window).items():
        body[side] = [{
            "programs": [{"program": cdap_names.program_entry(api.gms, program)[1]["id"], "urn": program,
                          "lastExecutedTimeInSeconds": last // 1000}
                         for program, last in sorted(group.programs.items(), key=lambda kv: -kv[1])],
            "operations": [_operation(op) for op in group.operations],
        } for group in groups]
    return body


@handler
def multi_level(request: web.Request) -> Any:
    _, _, window = _window(request)
    try:
        level = parse_levels("level", request.query.get("level"), 1)
    except ParameterError as err:
        raise BadRequest(str(err)) from None
    visible = readable(request)
    mappings = [m for m in _lineage(request).multi_level(_dataset(request, "endpoint"), window, level)
                if can_read(visible, m.source) and can_read(visible, m.destination)]
    return [{"source": cdap_names.endpoint(m.source), "destination": cdap_names.endpoint(m.destination),
             "fieldmap": [{"from": f, "to": t} for f, t in sorted(m.fieldmap)]} for m in mappings]


@handler
def detailed(request: web.Request) -> Any:
    _, _, window = _window(request)
    side = _GRAPH_DIRECTIONS[_direction(request, _GRAPH_DIRECTIONS)]
    dataset, name = _dataset(request, "endpoint"), request.match_info["field"]
    path = _lineage(request).graph(dataset, name, side, window)
    return _detailed_graph(path)


@handler
def simple(request: web.Request) -> Any:
    _, _, window = _window(request)
    side = _GRAPH_DIRECTIONS[_direction(request, _GRAPH_DIRECTIONS)]
    dataset, name = _dataset(request, "endpoint"), request.match_info["field"]
    edges: dict[tuple[str, str, str, str], list[str]] = {}
    lineage = _lineage(request)
    for groups in lineage.operations(dataset, name, side, window).values():
        for group in groups:
            transforms = [op.name for op in group.operations if op.type == TRANSFORM]
            for other, other_field in _ends(lineage, dataset, name, side, window, group.operations):
                key = (other, other_field, dataset, name) if side == INCOMING else (dataset, name, other, other_field)
                known = edges.setdefault(key, [])
                known.extend(t for t in transforms if t not in known)
    return {"edges": [{"from": {**cdap_names.endpoint(a), "field": af}, "to": {**cdap_names.endpoint(b), "field": bf},
                       "operations": ops} for (a, af, b, bf), ops in sorted(edges.items())]}


def _ends(lineage: FieldLineage, dataset: str, name: str, side: str, window: Window,
          operations: tuple[FieldOperation, ...]) -> set[tuple[str, str]]:
    path = lineage.graph(dataset, name, side, window)
    names = {op.name for op in operations}
    return {(other, f) for other, f in path.ends
            if any(op.name in names and (op.source == other or op.destination == other) for op in path.operations)}


def _dataset_ref(urn: str) -> dict[str, str]:
    end = cdap_names.endpoint(urn)
    return {"namespace": end["namespace"], "dataset": end["name"], "urn": urn}


def _operation(op: FieldOperation) -> dict[str, Any]:
    """CDAP's FieldOperationInfo: inputs and outputs are an endpoint or a list of fields."""
    body: dict[str, Any] = {"name": op.name, "description": op.description, "type": op.type}
    if op.type == READ:
        body["inputs"] = {"endPoint": cdap_names.endpoint(op.source or "")}
    else:
        body["inputs"] = {"fields": [{"origin": i.origin, "name": i.field} for i in op.inputs]}
    if op.type == WRITE:
        body["outputs"] = {"endPoint": cdap_names.endpoint(op.destination or "")}
    else:
        body["outputs"] = {"fields": [{"name": f} for f in op.outputs]}
    return body


def _detailed_graph(path: Path) -> dict[str, Any]:
    ops = {op.name: op for op in path.operations}
    written = {node for node, to, _ in path.connections if isinstance(to, tuple) and to[0] not in ops}
    nodes = []
    for origin, name in sorted(path.nodes):
        node: dict[str, Any] = {"id": f"{origin}.{name}", "label": name}
        op = ops.get(origin)
        if op is not None and op.type == READ:
            node["sourceEndPoint"] = cdap_names.endpoint(op.source or "")
        if (origin, name) in written:
            destination = next(to[0] for n, to, _ in path.connections if n == (origin, name) and to[0] not in ops)
            node["destinationEndPoint"] = cdap_names.endpoint(destination)
        nodes.append(node)
    connections = sorted({(f"{a[0]}.{a[1]}", f"{b[0]}.{b[1]}", op) for a, b, op in path.connections if b[0] in ops})
    return {"nodes": nodes,
            "operations": [{"name": op.name, "description": op.description} for op in path.operations],
            "connections": [{"from": a, "to": b, "operation": op} for a, b, op in connections]}


_FIELD_DIRECTION = query_param("direction", required=True, enum=["incoming", "outgoing", "both"])
_GRAPH_DIRECTION = query_param("direction", required=True, enum=["backward", "forward", "incoming", "outgoing"])
OPENAPI_PATHS: dict[str, Any] = {
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields": read_operation(
        "Fields with field lineage in the window",
        [*WINDOW_PARAMETERS, query_param("prefix"), query_param("includeCurrent", kind="boolean")], ARRAY),
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields/{field}": read_operation(
        "Field lineage summary", [*WINDOW_PARAMETERS, _FIELD_DIRECTION]),
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields/{field}/operations": read_operation(
        "Operations on a field's paths, grouped", [*WINDOW_PARAMETERS, _FIELD_DIRECTION]),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/lineage": read_operation(
        "Multi-level dataset-to-dataset field maps",
        [*WINDOW_PARAMETERS, query_param("level", kind="integer", minimum=1, maximum=MAX_HOPS)], ARRAY),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/{field}/lineage": read_operation(
        "Detailed field lineage graph", [*WINDOW_PARAMETERS, _GRAPH_DIRECTION]),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/{field}/lineage/simple": read_operation(
        "Simple field lineage view", [*WINDOW_PARAMETERS, _GRAPH_DIRECTION]),
}


def add_routes(app: web.Application) -> None:
    app[LINEAGE_KEY] = FieldLineage(app[GMS_KEY].read_models.runs)  # its operation-graph cache is shared
    base = "/v3/namespaces/{ns}"
    app.router.add_get(base + "/datasets/{ds}/lineage/fields", fields)
    app.router.add_get(base + "/datasets/{ds}/lineage/fields/{field}", summary)
    app.router.add_get(base + "/datasets/{ds}/lineage/fields/{field}/operations", operations)
    app.router.add_get(base + "/endpoints/{endpoint}/fields/lineage", multi_level)
    app.router.add_get(base + "/endpoints/{endpoint}/fields/{field}/lineage", detailed)
    app.router.add_get(base + "/endpoints/{endpoint}/fields/{field}/lineage/simple", simple)
