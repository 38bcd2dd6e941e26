"""The OpenAPI document of the REST API, served at /openapi.json."""

from __future__ import annotations

import copy
import re
from typing import Any

from aiohttp import web

from lodestar.api.limits import MAX_COUNT, MAX_HOPS, MAX_MILLIS, MAX_POINTS, MAX_START, MAX_VERSION
from lodestar.api.webhooks import OPENAPI_PATHS as WEBHOOK_PATHS

_JSON = "application/json"
_URN = {"name": "urn", "in": "path", "required": True, "schema": {"type": "string"},
        "description": "Entity URN, URL-encoded"}
_ASPECT = {"name": "aspect", "in": "path", "required": True, "schema": {"type": "string"}}
_ERROR = {"$ref": "#/components/schemas/Error"}
_RESULTS = {"$ref": "#/components/schemas/Results"}
_ERROR_OR_RESULTS = {"anyOf": [_ERROR, _RESULTS]}
_OBJECT = {"type": "object"}


def _q(name: str, doc: str = "", kind: str = "string", required: bool = False, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind, **schema}, "description": doc}


def _response(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": schema or _ERROR}}}



_CONDITIONAL = [
    {"name": name, "in": "header", "required": False, "schema": {"type": "string"}, "description": doc}
    for name, doc in (
        ("If-Version-Match", "Expected current version of each aspect; -1 = must not exist"),
        ("If-Unmodified-Since", "ISO-8601; fail if the aspect changed after this time"),
        ("If-Modified-Since", "ISO-8601; fail unless the aspect changed after this time"),
        ("If-None-Match", "'*' with CREATE/CREATE_ENTITY: drop silently when it exists"),
    )
]

_WINDOW = [_q("start", "Seconds since the epoch, or now, now-1h, now-1d+4h", required=True),
           _q("end", "Seconds since the epoch, or now[+-offset]", required=True)]
_ARRAY = {"type": "array"}
_FIELD_DIRECTION = _q("direction", required=True, enum=["incoming", "outgoing", "both"])
_GRAPH_DIRECTION = _q("direction", required=True, enum=["backward", "forward", "incoming", "outgoing"])


def _read(summary: str, parameters: list[dict[str, Any]], answer: dict[str, Any] = _OBJECT) -> dict[str, Any]:
    return {"get": {"summary": summary, "parameters": parameters,
                    "responses": {"200": _response("The answer", answer), "400": _response("Invalid parameter"),
                                  "403": _response("The caller may not read it")}}}


_DATASET_LINEAGE = _read("CDAP dataset or stream lineage over a time window", [
    *_WINDOW, _q("levels", kind="integer", minimum=1, maximum=MAX_HOPS),
    _q("collapse", "access, run or component (repeatable)", enum=["access", "run", "component"]),
    _q("rollup", enum=["workflow"])])
LINEAGE_OVER_TIME: dict[str, Any] = {
    "/v3/namespaces/{ns}/datasets/{name}/lineage": _DATASET_LINEAGE,
    "/v3/namespaces/{ns}/streams/{name}/lineage": _DATASET_LINEAGE,
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields": _read(
        "Fields with field lineage in the window", [*_WINDOW, _q("prefix"), _q("includeCurrent", kind="boolean")],
        _ARRAY),
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields/{field}": _read(
        "Field lineage summary", [*_WINDOW, _FIELD_DIRECTION]),
    "/v3/namespaces/{ns}/datasets/{name}/lineage/fields/{field}/operations": _read(
        "Operations on a field's paths, grouped", [*_WINDOW, _FIELD_DIRECTION]),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/lineage": _read(
        "Multi-level dataset-to-dataset field maps", [*_WINDOW, _q("level", kind="integer", minimum=1,
                                                                   maximum=MAX_HOPS)], _ARRAY),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/{field}/lineage": _read(
        "Detailed field lineage graph", [*_WINDOW, _GRAPH_DIRECTION]),
    "/v3/namespaces/{ns}/endpoints/{name}/fields/{field}/lineage/simple": _read(
        "Simple field lineage view", [*_WINDOW, _GRAPH_DIRECTION]),
    "/v1/runs/{urn}": {"get": {"summary": "A run as the run-lineage tables derive it", "parameters": [_URN],
                               "responses": {"200": _response("The run", _OBJECT), "400": _response("Not a run URN"),
                                             "403": _response("The caller may not read it"),
                                             "404": _response("No such run")}}},
    "/api/v1/lineage": {"post": {
        "summary": "OpenLineage RunEvent intake",
        "requestBody": {"required": True, "content": {_JSON: {"schema": _OBJECT}}},
        "responses": {"201": _response("The event's proposals, applied", _OBJECT),
                      "400": _response("An unreadable event"), "403": _response("A proposal was refused"),
                      "412": _response("A proposal's condition failed")}}},
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Lodestar GMS", "version": "0.1.0",
             "description": "Metadata proposals in; versioned aspects and change logs out."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {"type": "object", "required": ["error", "message"], "properties": {
                "error": {"type": "string"}, "message": {"type": "string"}, "status": {"type": "integer"},
                "expected": {}, "actual": {}}},
            "Results": {"type": "object", "required": ["results"], "properties": {
                "results": {"type": "array", "items": {"$ref": "#/components/schemas/Result"}},
                "indexed": {"type": "boolean"}}},
            "Proposal": {"type": "object", "required": ["entityUrn", "changeType", "aspectName"], "properties": {
                "entityType": {"type": "string"},
                "entityUrn": {"type": "string"},
                "changeType": {"type": "string",
                               "enum": ["UPSERT", "CREATE", "CREATE_ENTITY", "UPDATE", "DELETE", "PATCH"]},
                "aspectName": {"type": "string"},
                "aspect": {"type": "object", "properties": {
                    "value": {"description": "The aspect as JSON, or as a JSON string"},
                    "contentType": {"type": "string",
                                    "enum": ["application/json", "application/json-patch+json"]}}},
                "systemMetadata": {"type": "object"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "Result": {"type": "object", "required": ["status"], "properties": {
                "status": {"type": "string", "enum": ["applied", "noop", "dropped", "failed", "queued"]},
                "version": {"type": "integer"}, "error": {"type": "string"}, "message": {"type": "string"},
                "expected": {}, "actual": {}}},
            "Aspect": {"type": "object", "properties": {
                "version": {"type": "integer"}, "value": {}, "deleted": {"type": "boolean"},
                "systemMetadata": {"type": "object"}}},
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/v1/proposals": {"post": {
            "summary": "Apply proposals in order (or queue them with async: true)",
            "parameters": _CONDITIONAL,
            "requestBody": {"required": True, "content": {_JSON: {"schema": {
                "type": "object", "required": ["proposals"], "properties": {
                    "proposals": {"type": "array", "description": "MCPs (schema Proposal); each is checked on its"
                                  " own and a bad one fails in its result, not the request", "items": {}},
                    "async": {"type": "boolean", "default": False},
                    "waitForIndex": {"type": "boolean", "default": False}}}}}},
            "responses": {
                "200": _response("Every proposal succeeded", _RESULTS),
                "202": _response("Queued on the MCP topic", _RESULTS),
                "207": _response("Some of several proposals failed; see each result", _RESULTS),
                "400": _response("Invalid request, or its single proposal (or every async one) is invalid",
                                 _ERROR_OR_RESULTS),
                "412": _response("A single proposal failed a precondition", _RESULTS),
                "413": _response("Over the size limit (the request, or its single proposal)", _ERROR_OR_RESULTS)}}},
        "/v1/entities/{urn}": {
            "get": {"summary": "Latest version of every aspect", "parameters": [_URN],
                    "responses": {"200": _response("The entity", _OBJECT), "404": _response("No such entity")}},
            "delete": {"summary": "Soft delete (status.removed), or purge with hard=true",
                       "parameters": [_URN, _q("hard", kind="boolean")],
                       "responses": {"200": _response("Deleted", _OBJECT), "400": _response("Invalid request"),
                                     "404": _response("No such entity"), "412": _response("Refused")}}},
        "/v1/entities/{urn}/aspects/{aspect}": {"get": {
            "summary": "One aspect, latest or a given version",
            "parameters": [_URN, _ASPECT, _q("version", kind="integer", minimum=1, maximum=MAX_VERSION)],
            "responses": {"200": _response("The aspect", {"$ref": "#/components/schemas/Aspect"}),
                          "400": _response("Invalid version"), "404": _response("No such aspect or version")}}},
        "/v1/entities/{urn}/aspects/{aspect}/versions": {"get": {
            "summary": "Every version of an aspect", "parameters": [_URN, _ASPECT],
            "responses": {"200": _response("The versions", _OBJECT), "404": _response("No such aspect")}}},
        "/aspects": {"post": {
            "summary": "DataHub Rest.li: ?action=ingestProposal | ingestProposalBatch",
            "parameters": [_q("action", required=True, enum=["ingestProposal", "ingestProposalBatch"])],
            "requestBody": {"required": True, "content": {_JSON: {"schema": _OBJECT}}},
            "responses": {"200": _response("Applied", _OBJECT), "202": _response("Queued", _RESULTS),
                          "400": _response("Invalid request or proposal", _ERROR_OR_RESULTS),
                          "412": _response("Precondition failed"), "413": _response("Over a size limit")}}},
        "/entities": {"post": {
            "summary": "DataHub Rest.li: ?action=delete {\"urn\": ...}",
            "parameters": [_q("action", required=True, enum=["delete"])],
            "requestBody": {"required": True, "content": {_JSON: {"schema": _OBJECT}}},
            "responses": {"200": _response("Deleted", _OBJECT), "400": _response("Invalid request"),
                          "404": _response("No such entity"), "412": _response("Refused")}}},
        "/v1/search": {"get": {
            "summary": "Search entities (free text, prefix*, key:value, tags:x, schema:field)",
            "parameters": [_q("query"), _q("types", "Entity types, comma-separated"),
                           _q("scope", "USER or SYSTEM (any case)"), _q("sort", "relevance, name, -name, urn, -urn"),
                           _q("start", kind="integer", minimum=0, maximum=MAX_START),
                           _q("count", kind="integer", minimum=1, maximum=MAX_COUNT),
                           _q("includeRemoved", kind="boolean")],
            "responses": {"200": _response("One page of results with facets", _OBJECT),
                          "400": _response("Invalid query or parameter")}}},
        "/v1/autocomplete": {"get": {
            "summary": "Names, field names and tags starting with a prefix",
            "parameters": [_q("query"), _q("limit", kind="integer", minimum=1, maximum=MAX_COUNT)],
            "responses": {"200": _response("Suggestions", _OBJECT), "400": _response("Invalid parameter")}}},
        "/v1/lineage": {"get": {
            "summary": "Lineage of datasets, jobs and runs, breadth first",
            "parameters": [_q("urn", required=True), _q("direction", enum=["upstream", "downstream", "both"]),
                           _q("maxHops", kind="integer", minimum=1, maximum=MAX_HOPS)],
            "responses": {"200": _response("Nodes and edges", _OBJECT), "400": _response("Invalid parameter")}}},
        "/v1/lineage/fields": {"get": {
            "summary": "Field-level lineage from a schemaField URN",
            "parameters": [_q("urn", required=True), _q("direction", enum=["upstream", "downstream", "both"]),
                           _q("maxHops", kind="integer", minimum=1, maximum=MAX_HOPS)],
            "responses": {"200": _response("Nodes and edges", _OBJECT), "400": _response("Invalid parameter")}}},
        "/v1/timeseries/{urn}/{aspect}": {"get": {
            "summary": "Points of a timeseries aspect in time order",
            "parameters": [_URN, _ASPECT, _q("start", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                           _q("end", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                           _q("limit", kind="integer", minimum=1, maximum=MAX_POINTS)],
            "responses": {"200": _response("The points", _OBJECT), "400": _response("Invalid parameter")}}},
        **LINEAGE_OVER_TIME,
        **WEBHOOK_PATHS,
        "/config": {"get": {"summary": "Server configuration (DataHub clients check noCode)", "security": [],
                            "responses": {"200": _response("Configuration", _OBJECT)}}},
        "/health": {"get": {"summary": "Liveness", "security": [],
                            "responses": {"200": _response("Alive", _OBJECT)}}},
        "/health/ready": {"get": {"summary": "Readiness: every backend answers", "security": [],
                                  "responses": {"200": _response("Ready", _OBJECT),
                                                "503": _response("A backend does not answer", _OBJECT)}}},
        "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {"200": {
            "description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    },
}

_READ_METHODS = ("get", "head", "options")
_PATH_PARAMETER = re.compile(r"{([^}]+)}")


def complete(document: dict[str, Any]) -> dict[str, Any]:
    """The document as served: every operation also lists what any route may answer (401 when it
    needs a token, 413 with a body, 429 for writes, 503 when a backend is down) and declares the
    path parameters its template names, so a client or fuzzer can rely on it."""
    done = copy.deepcopy(document)
    for template, item in done["paths"].items():
        names = _PATH_PARAMETER.findall(template)
        for method, operation in item.items():
            declared = {p["name"] for p in operation.setdefault("parameters", []) if p.get("in") == "path"}
            operation["parameters"] += [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                                        for name in names if name not in declared]
            responses = operation.setdefault("responses", {})
            extra = {"503": _response("A backend does not answer; retry after Retry-After")}
            if operation.get("security") != []:
                extra["401"] = _response("Missing or invalid bearer token")
            if "requestBody" in operation:
                extra |= {"400": _response("Invalid request"), "413": _response("Request over the size limit")}
            if method not in _READ_METHODS:
                extra["429"] = _response("Overloaded (the MCL processor lags); retry after Retry-After")
            for status, response in extra.items():
                responses.setdefault(status, response)
    return done


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(complete(DOCUMENT))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi.json", openapi)
