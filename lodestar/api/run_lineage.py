"""CDAP's dataset and stream lineage over time (v3), and stream writes from outside a program.

GET  /v3/namespaces/{ns}/datasets/{ds}/lineage?start=&end=&levels=&collapse=&rollup=
GET  /v3/namespaces/{ns}/streams/{stream}/lineage?...
POST /v3/namespaces/{ns}/streams/{stream}[/batch|/async]?source=<source>
GET  /v1/lineage/runs?urn=&start=&end=&levels=   the same walk in URNs, from a dataset or a program (dataJob)
GET  /v1/runs?program=&count=   a program's runs (found by parentTemplate), as the tables derive them
GET  /v1/runs/{urn}      a run as the run-lineage tables derive it (program, times, status, accesses)
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from gms.access import READ, WRITE, can_read
from lodestar.api import cdap_names, proposals
from lodestar.api.access import readable, require
from lodestar.api.context import api_of, error, principal_of
from lodestar.api.limits import MAX_COUNT, MAX_HOPS, int_param
from lodestar.api.openapi import OBJECT, URN, query_param, read_operation, response
from lodestar.api.reads import readable_within
from lodestar.api.timerange import WINDOW_PARAMETERS, ParameterError, parse_levels, parse_window
from mcl_processor.runs.dataset_lineage import COLLAPSE, Relation, dataset_lineage

DEFAULT_LEVELS = 10
DEFAULT_RUNS = 100
PROGRAM = "urn:li:dataJob:"
DAY_MS = 86_400_000
_SOURCE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def _bad(message: str) -> web.Response:
    return error(400, "invalid_request", message)


async def lineage(request: web.Request) -> web.Response:
    query = request.query
    try:
        start_s, end_s, window = parse_window(query.get("start"), query.get("end"))
        levels = parse_levels("levels", query.get("levels"), DEFAULT_LEVELS)
    except ParameterError as err:
        return _bad(str(err))
    collapse = query.getall("collapse", [])
    unknown = [c for c in collapse if c.lower() not in COLLAPSE]
    if unknown:
        return _bad(f"collapse: invalid value {unknown[0]!r}; it must be one of {', '.join(COLLAPSE)}")
    rollup = query.get("rollup")
    if rollup not in (None, "workflow"):
        return _bad(f"rollup: invalid value {rollup!r}; the only rollup is workflow")
    api = api_of(request)
    root = cdap_names.dataset_urn(request.match_info["ns"], request.match_info["name"])
    require(request, READ, root)
    relations = _visible(request, dataset_lineage(api.read_models.runs, root, window, levels,
                                                  {c.lower() for c in collapse}, rollup == "workflow"))
    programs, data, out = {}, {}, []
    for relation in relations:
        data_key, data_entry = cdap_names.data_entry(api.gms, relation.data)
        data[data_key] = data_entry
        program_key = ""
        if relation.program:
            program_key, entry = cdap_names.program_entry(api.gms, relation.program)
            programs[program_key] = entry
        out.append({"data": data_key, "program": program_key, "accesses": sorted(relation.accesses),
                    "runs": sorted(cdap_names.run_id(r) for r in relation.runs),
                    "components": sorted(relation.components)})
    return web.json_response({"start": start_s, "end": end_s, "relations": out,
                              "programs": programs, "data": data})


def _visible(request: web.Request, relations: list[Relation]) -> list[Relation]:
    """The relations without data or programs the caller may not read."""
    visible = readable(request)
    return [r for r in relations if can_read(visible, r.data) and (not r.program or can_read(visible, r.program))]


async def urn_lineage(request: web.Request) -> web.Response:
    """The run-lineage walk from a dataset or a program, in URNs: each relation is a program's
    reads or writes of a dataset in the window (access by access), with the runs that made them."""
    query = request.query
    urn = query.get("urn", "")
    if not urn.startswith(("urn:li:dataset:", PROGRAM)):
        return _bad(f"urn: {urn!r} is not a dataset or dataJob URN" if urn else "urn: is required")
    try:
        start_s, end_s, window = parse_window(query.get("start"), query.get("end"))
        levels = parse_levels("levels", query.get("levels"), DEFAULT_LEVELS)
    except ParameterError as err:
        return _bad(str(err))
    require(request, READ, urn)
    relations = _visible(request, dataset_lineage(api_of(request).read_models.runs, urn, window, levels,
                                                  ("run", "component"), from_program=urn.startswith(PROGRAM)))
    return web.json_response({"urn": urn, "start": start_s, "end": end_s, "relations": [
        {"data": r.data, "program": r.program or None, "accesses": sorted(r.accesses), "runs": sorted(r.runs)}
        for r in relations]})


async def program_runs(request: web.Request) -> web.Response:
    """Up to `count` runs of a program, newest first: the runs whose parentTemplate is the
    program (from the search index, so runs that touched no dataset are there too), as the
    run-lineage tables derive them, and how many the program has."""
    program = request.query.get("program", "")
    if not program.startswith(PROGRAM) or '"' in program:
        return _bad(f"program: {program!r} is not a dataJob URN" if program else "program: is required")
    count = int_param(request, "count", DEFAULT_RUNS, 1, MAX_COUNT) or DEFAULT_RUNS
    require(request, READ, program)
    api = api_of(request)
    found = api.read_models.search.query(f'parentTemplate:"{program}"', ["dataProcessInstance"], 0, count,
                                         within=readable_within(request))
    runs = api.read_models.runs.runs([hit.urn for hit in found.hits]).values()
    newest = sorted(runs, key=lambda r: (r.start_ms or 0, r.urn), reverse=True)
    return web.json_response({"program": program, "total": found.total, "runs": [r.to_json() for r in newest]})


async def stream_write(request: web.Request) -> web.Response:
    """A write to a stream from outside a program: with `?source=`, the external source is
    recorded as a writer of the stream, at most once per day per stream and source (the day's
    run of the source is created with If-None-Match: *, so later writes that day add nothing)."""
    source = request.query.get("source")
    stream = cdap_names.dataset_urn(request.match_info["ns"], request.match_info["name"])
    if source is None:
        return web.json_response({"recorded": False, "stream": stream})
    if not _SOURCE.fullmatch(source):
        return _bad(f"source: {source!r} must be 1-128 letters, digits, '_', '.' or '-'")
    require(request, WRITE, stream)
    await request.read()  # the events themselves are the stream's, not Lodestar's
    namespace = request.match_info["ns"]
    now_ms = int(time.time() * 1000)
    day_ms = now_ms - now_ms % DAY_MS
    day = datetime.fromtimestamp(day_ms / 1000, UTC).strftime("%Y-%m-%d")
    run = f"urn:li:dataProcessInstance:external-{source}-{namespace}.{request.match_info['name']}-{day}"
    job = cdap_names.external_writer(namespace, source)
    api = api_of(request)
    actor = principal_of(request)
    (first,) = await api.apply([proposals.make(run, "dataProcessInstanceProperties", {
        "name": f"{source} -> {request.match_info['name']} on {day}", "customProperties": {"externalSource": source},
        "created": {"time": day_ms, "actor": actor}}, "CREATE", {"If-None-Match": "*"})], actor, {})
    if first.failure is not None:
        return error(first.http_status, first.failure.code, first.failure.message)
    recorded = first.status == "applied"
    if recorded:
        results = await api.apply([
            proposals.make(run, "dataProcessInstanceRelationships", {"parentTemplate": job, "upstreamInstances": []}),
            proposals.make(run, "dataProcessInstanceAccesses", {"accesses": [{"dataset": stream, "type": "WRITE"}]}),
            proposals.make(run, "dataProcessInstanceRunEvent", {"timestampMillis": day_ms + DAY_MS - 1,
                                                                "status": "COMPLETE"}),
        ], actor, {})
        failed = next((r for r in results if r.failure is not None), None)
        if failed is not None:
            return error(failed.http_status, failed.failure.code, failed.failure.message)
    return web.json_response({"recorded": recorded, "stream": stream, "run": run})


async def run(request: web.Request) -> web.Response:
    urn = request.match_info["urn"]
    if not urn.startswith("urn:li:dataProcessInstance:"):
        return _bad(f"urn: {urn!r} is not a dataProcessInstance URN")
    require(request, READ, urn)
    found = api_of(request).read_models.runs.runs([urn]).get(urn)
    if found is None:
        return error(404, "not_found", f"no run {urn} in the run-lineage tables")
    return web.json_response(found.to_json())


_DATASET_LINEAGE = read_operation("CDAP dataset or stream lineage over a time window", [
    *WINDOW_PARAMETERS, query_param("levels", kind="integer", minimum=1, maximum=MAX_HOPS),
    query_param("collapse", "access, run or component (repeatable)", enum=["access", "run", "component"]),
    query_param("rollup", enum=["workflow"])])
OPENAPI_PATHS: dict[str, Any] = {
    "/v3/namespaces/{ns}/datasets/{name}/lineage": _DATASET_LINEAGE,
    "/v3/namespaces/{ns}/streams/{name}/lineage": _DATASET_LINEAGE,
    "/v1/lineage/runs": {"get": {
        "summary": "Run lineage over a time window from a dataset or a program, in URNs",
        "parameters": [query_param("urn", "A dataset or dataJob URN", required=True), *WINDOW_PARAMETERS,
                       query_param("levels", kind="integer", minimum=1, maximum=MAX_HOPS)],
        "responses": {"200": response("Relations: data, program, accesses, runs", OBJECT),
                      "400": response("Invalid parameter"), "403": response("The caller may not read it")}}},
    "/v1/runs": {"get": {
        "summary": "A program's runs, newest first, as the run-lineage tables derive them",
        "parameters": [query_param("program", "A dataJob URN", required=True),
                       query_param("count", kind="integer", minimum=1, maximum=MAX_COUNT)],
        "responses": {"200": response("The runs and how many the program has", OBJECT),
                      "400": response("Invalid parameter"), "403": response("The caller may not read it")}}},
    "/v1/runs/{urn}": {"get": {"summary": "A run as the run-lineage tables derive it", "parameters": [URN],
                               "responses": {"200": response("The run", OBJECT), "400": response("Not a run URN"),
                                             "403": response("The caller may not read it"),
                                             "404": response("No such run")}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/lineage/runs", urn_lineage)
    app.router.add_get("/v1/runs", program_runs)
    app.router.add_get("/v1/runs/{urn}", run)
    for kind in ("datasets", "streams"):
        app.router.add_get(f"/v3/namespaces/{{ns}}/{kind}/{{name}}/lineage", lineage)
    for suffix in ("", "/batch", "/async"):
        app.router.add_post(f"/v3/namespaces/{{ns}}/streams/{{name}}{suffix}", stream_write)
