"""Read-model routes: search, autocomplete, lineage, field lineage, timeseries."""

from __future__ import annotations

from collections import Counter
from typing import Any

from aiohttp import web

from gms.access import READ, can_read
from lodestar.api.access import readable, require
from lodestar.api.context import api_of, error
from lodestar.api.limits import MAX_COUNT, MAX_HOPS, MAX_MILLIS, MAX_POINTS, MAX_START, bool_param, int_param
from lodestar.api.openapi import ASPECT, OBJECT, URN, query_param, response
from mcl_processor.lineage import LineageResult
from mcl_processor.query_syntax import tokens
from mcl_processor.search import SearchIndex, Suggestion
from mcl_processor.search.cdap import RESOURCE, Expr, any_of
from mcl_processor.search.matching import has_tokens


def _bad_request(err: ValueError) -> web.Response:
    return error(400, "invalid_request", str(err))


def readable_within(request: web.Request) -> Expr | None:
    """The index condition of what the caller may read (None: everything), so hits, totals,
    facets and suggestions count nothing else."""
    resources = readable(request)
    return None if resources is None else any_of(RESOURCE, sorted(resources))


async def search(request: web.Request) -> web.Response:
    query = request.query.get("query", "*")
    types = [t for t in request.query.get("types", "").split(",") if t] or None
    include_removed = bool_param(request, "includeRemoved")
    scope = request.query.get("scope")
    try:
        result = api_of(request).read_models.search.query(
            query, types, int_param(request, "start", 0, maximum=MAX_START),
            int_param(request, "count", 10, 1, MAX_COUNT) or 10,
            include_removed, request.query.get("sort", "relevance"), scope.upper() if scope else None,
            readable_within(request))
    except ValueError as err:
        return _bad_request(err)
    return web.json_response(result.to_json())


async def autocomplete(request: web.Request) -> web.Response:
    prefix, limit = request.query.get("query", ""), int_param(request, "limit", 10, 1, MAX_COUNT) or 10
    within, index = readable_within(request), api_of(request).read_models.search
    # a caller who may not read everything gets the names of what it may read, from a prefix search among them
    suggestions = index.autocomplete(prefix, limit) if within is None else _names_starting(index, prefix, limit, within)
    return web.json_response({"suggestions": [s.to_json() for s in suggestions]})


def _names_starting(index: SearchIndex, prefix: str, limit: int, within: Expr) -> list[Suggestion]:
    words = tokens(prefix)
    if not words:
        return []
    hits = index.query(" ".join(words) + "*", None, 0, 4 * limit, within=within).hits
    counts = Counter(hit.name for hit in hits if hit.name and has_tokens(hit.name.lower(), words))
    ranked = sorted(counts.items(), key=lambda kv: (not kv[0].lower().startswith(prefix.strip().lower()), -kv[1],
                                                    kv[0]))
    return [Suggestion(name, "name", count) for name, count in ranked[:limit]]


async def _lineage(request: web.Request, fields: bool) -> web.Response:
    urn = request.query.get("urn")
    if not urn:
        return error(400, "invalid_request", "urn: is required")
    graph = api_of(request).read_models.lineage
    walk = graph.field_query if fields else graph.query
    require(request, READ, urn)
    try:
        result = walk(urn, request.query.get("direction", "both"), int_param(request, "maxHops", 1, 1, MAX_HOPS) or 1)
    except ValueError as err:
        return _bad_request(err)
    return web.json_response(visible_lineage(result, readable(request)).to_json())


async def lineage(request: web.Request) -> web.Response:
    return await _lineage(request, fields=False)


async def field_lineage(request: web.Request) -> web.Response:
    return await _lineage(request, fields=True)


async def timeseries(request: web.Request) -> web.Response:
    urn, aspect = request.match_info["urn"], request.match_info["aspect"]
    require(request, READ, urn)
    points = api_of(request).read_models.timeseries.query(
        urn, aspect, int_param(request, "start", None, -MAX_MILLIS, MAX_MILLIS),
        int_param(request, "end", None, -MAX_MILLIS, MAX_MILLIS),
        int_param(request, "limit", 1000, 1, MAX_POINTS) or 1000)
    return web.json_response({"urn": urn, "aspect": aspect, "points": points})


_LINEAGE_PARAMETERS = [query_param("urn", required=True),
                       query_param("direction", enum=["upstream", "downstream", "both"]),
                       query_param("maxHops", kind="integer", minimum=1, maximum=MAX_HOPS)]
OPENAPI_PATHS: dict[str, Any] = {
    "/v1/search": {"get": {
        "summary": "Search entities (free text, prefix*, key:value, tags:x, schema:field)",
        "parameters": [query_param("query"), query_param("types", "Entity types, comma-separated"),
                       query_param("scope", "USER or SYSTEM (any case)"),
                       query_param("sort", "relevance, name, -name, urn, -urn"),
                       query_param("start", kind="integer", minimum=0, maximum=MAX_START),
                       query_param("count", kind="integer", minimum=1, maximum=MAX_COUNT),
                       query_param("includeRemoved", kind="boolean")],
        "responses": {"200": response("One page of results with facets", OBJECT),
                      "400": response("Invalid query or parameter")}}},
    "/v1/autocomplete": {"get": {
        "summary": "Names, field names and tags starting with a prefix",
        "parameters": [query_param("query"), query_param("limit", kind="integer", minimum=1, maximum=MAX_COUNT)],
        "responses": {"200": response("Suggestions", OBJECT), "400": response("Invalid parameter")}}},
    "/v1/lineage": {"get": {
        "summary": "Lineage of datasets, jobs and runs, breadth first",
        "parameters": _LINEAGE_PARAMETERS,
        "responses": {"200": response("Nodes and edges", OBJECT), "400": response("Invalid parameter")}}},
    "/v1/lineage/fields": {"get": {
        "summary": "Field-level lineage from a schemaField URN",
        "parameters": _LINEAGE_PARAMETERS,
        "responses": {"200": response("Nodes and edges", OBJECT), "400": response("Invalid parameter")}}},
    "/v1/timeseries/{urn}/{aspect}": {"get": {
        "summary": "Points of a timeseries aspect in time order",
        "parameters": [URN, ASPECT, query_param("start", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                       query_param("end", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                       query_param("limit", kind="integer", minimum=1, maximum=MAX_POINTS)],
        "responses": {"200": response("The points", OBJECT), "400": response("Invalid parameter")}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/search", search)
    app.router.add_get("/v1/autocomplete", autocomplete)
    app.router.add_get("/v1/lineage", lineage)
    app.router.add_get("/v1/lineage/fields", field_lineage)
    app.router.add_get("/v1/timeseries/{urn}/{aspect}", timeseries)


def visible_lineage(result: LineageResult, readable: frozenset[str] | None) -> LineageResult:
    """A lineage result without the nodes the reader may not read, and without their edges."""
    if readable is None:
        return result
    nodes = {urn: node for urn, node in result.nodes.items() if can_read(readable, urn)}
    edges = [e for e in result.edges if e.source in nodes and e.destination in nodes]
    return LineageResult(result.root, nodes, edges)
