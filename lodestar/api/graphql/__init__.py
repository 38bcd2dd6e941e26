"""`POST /api/graphql`: the part of DataHub's GraphQL API that acryl-datahub's SDK and CLI use
(schema.graphql), answered from Lodestar's search index, lineage graph and aspect store.

graphql-core parses, validates and executes the documents; resolvers.py answers the fields.
A request that is no GraphQL request (not JSON, no `query` string, `variables` not an object)
is 400 with a JSON error. A document that does not parse or validate (a field, type or
argument the schema lacks) or asks for what Lodestar cannot answer (a filter field, a sort, a
flag) gets a 200 whose `errors` name it, as GraphQL servers answer; a document is parsed up to
MAX_TOKENS tokens, and refused before it runs when it nests selections too deep, asks for too
many fields or may cost too much (cost.py: fragments inlined, aliases counted, lists weighted by
the results they ask for; its limits are settings). Reads see only what the caller may read, as
/v1/search and /v1/lineage do; mutations (createTag, edits.py, managed.py,
products.py, incidents.py) write through GMS as the caller. Execution runs in
a worker thread, so the event loop stays free while the read models answer."""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from importlib import resources
from typing import Any

from aiohttp import web
from graphql import (
    GraphQLError,
    GraphQLSchema,
    build_schema,
    execute_sync,
    parse,
    validate,
)

from lodestar.api.access import readable
from lodestar.api.context import api_of, error, principal_of, query_route, read_json
from lodestar.api.graphql.coercion import lenient_scalars
from lodestar.api.graphql.cost import QueryLimits, TooCostly, check
from lodestar.api.graphql.entities import Context, graphql_type_of
from lodestar.api.graphql.resolvers import resolve
from lodestar.api.openapi import OBJECT, response

log = logging.getLogger(__name__)
MAX_TOKENS = 20_000  # tokens of one document (the CLI's search document has some 2,000)
MAX_DEPTH = QueryLimits.max_depth  # nested selections of one operation, its fragments inlined
DEFAULT_LIMITS = QueryLimits()
LIMITS_KEY = web.AppKey("graphql_limits", QueryLimits)
# the files after the first extend its Query and Mutation
SCHEMA_FILES = ("schema.graphql", "access.graphql", "edits.graphql", "managed.graphql", "products.graphql",
                "incidents.graphql", "recommendations.graphql", "versioning.graphql",
                "ingestion.graphql", "secret_values.graphql", "assertions.graphql", "queries.graphql",
                "policies.graphql")


@cache
def schema() -> GraphQLSchema:
    lenient_scalars()
    package = resources.files(__package__)
    built = build_schema("\n".join(package.joinpath(name).read_text() for name in SCHEMA_FILES))
    for name in ("Entity", "OwnerType", "IncidentSourceEntity"):
        built.get_type(name).resolve_type = lambda value, info, abstract: graphql_type_of(value)  # type: ignore
    return built


def _formatted(err: GraphQLError) -> dict[str, Any]:
    out = err.formatted
    out.setdefault("extensions", {}).setdefault("code", 400)
    return out


def execute(request_body: dict[str, Any], context: Context, limits: QueryLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The answer to one GraphQL request: {"data": ...} and/or {"errors": [...]}. An error no
    resolver meant (a bug, a backend that does not answer) is raised, for the app to answer it
    as every route does (500, or 503 with Retry-After)."""
    try:
        document = parse(request_body["query"], max_tokens=MAX_TOKENS)
    except GraphQLError as err:
        return {"errors": [_formatted(err)]}
    except RecursionError:
        return {"errors": [{"message": "the document is nested too deeply", "extensions": {"code": 400}}]}
    try:
        check(document, request_body.get("variables"), limits)
    except TooCostly as refused:
        return {"errors": [{"message": str(refused), "extensions": {"code": 400}}]}
    problems = validate(schema(), document)
    if problems:
        return {"errors": [_formatted(e) for e in problems]}
    result = execute_sync(schema(), document, context_value=context, field_resolver=resolve,
                          variable_values=request_body.get("variables"),
                          operation_name=request_body.get("operationName"))
    for err in result.errors or []:
        original = err.original_error
        if original is not None and not isinstance(original, GraphQLError):
            raise original
    answer: dict[str, Any] = {"data": result.data}
    if result.errors:
        answer["errors"] = [_formatted(e) for e in result.errors]
    return answer


def _bad_request(message: str) -> web.Response:
    return error(400, "invalid_request", message)


async def graphql(request: web.Request) -> web.Response:
    body = await read_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return _bad_request('body must be {"query": "<GraphQL document>", "variables": {...}, '
                            '"operationName": "..."}')
    if body.get("variables") is not None and not isinstance(body["variables"], dict):
        return _bad_request("variables: must be an object")
    if body.get("operationName") is not None and not isinstance(body["operationName"], str):
        return _bad_request("operationName: must be a string")
    api = api_of(request)
    context = Context(api, principal_of(request), readable(request), asyncio.get_running_loop())
    return web.json_response(await asyncio.to_thread(execute, body, context, request.app[LIMITS_KEY]))


OPENAPI_PATHS: dict[str, Any] = {
    "/api/graphql": {"post": {
        "summary": "DataHub's GraphQL API as its SDK and CLI use it: searchAcrossEntities, scrollAcrossEntities,"
                   " search, searchAcrossLineage, scrollAcrossLineage, entities by URN, createTag and the edits,"
                   " views, metadata tests and data products of docs/datahub-clients.md",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["query"], "properties": {
                "query": {"type": "string"}, "variables": {"type": "object"},
                "operationName": {"type": "string"}}}}}},
        "responses": {"200": response("data and/or errors (a GraphQL error names the field or filter it is about)",
                                      OBJECT),
                      "400": response("Not a GraphQL request")}}},
}
# the same endpoint at the path DataHub's frontend serves it at
OPENAPI_PATHS["/api/v2/graphql"] = OPENAPI_PATHS["/api/graphql"]


def add_routes(app: web.Application) -> None:
    # A query for the write guards (lag, event-log ping): reads must go on while indexing lags.
    # Its mutations write through GMS, whose own errors answer for them.
    app[LIMITS_KEY] = QueryLimits.from_env()
    app.router.add_post("/api/graphql", query_route(graphql))
    app.router.add_post("/api/v2/graphql", query_route(graphql))  # the path DataHub's frontend serves it at

