"""The OpenAPI document of the REST API, served at /openapi.json.

Each route module declares the path items of its own routes (`OPENAPI_PATHS`, beside its
`add_routes`); `document` assembles them, in the frame below, from the modules `create_app`
lists, and completes every operation with what any route may answer. The helpers here are the
parts the modules' path items share."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from lodestar.api.context import RouteModule

JSON = "application/json"
ERROR = {"$ref": "#/components/schemas/Error"}
RESULTS = {"$ref": "#/components/schemas/Results"}
ERROR_OR_RESULTS = {"anyOf": [ERROR, RESULTS]}
OBJECT = {"type": "object"}
ARRAY = {"type": "array"}
URN = {"name": "urn", "in": "path", "required": True, "schema": {"type": "string"},
       "description": "Entity URN, URL-encoded"}
ASPECT = {"name": "aspect", "in": "path", "required": True, "schema": {"type": "string"}}


def query_param(name: str, doc: str = "", kind: str = "string", required: bool = False,
                **schema: Any) -> dict[str, Any]:
    """A query parameter of type `kind`; `schema` adds to its schema (minimum, maximum, enum)."""
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind, **schema}, "description": doc}


def response(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON response; an Error unless `schema` says otherwise."""
    return {"description": description, "content": {JSON: {"schema": schema or ERROR}}}


def read_operation(summary: str, parameters: list[dict[str, Any]], answer: dict[str, Any] = OBJECT
                   ) -> dict[str, Any]:
    """A path item of one GET that answers 200, 400 on an invalid parameter, 403 when unreadable."""
    return {"get": {"summary": summary, "parameters": parameters,
                    "responses": {"200": response("The answer", answer), "400": response("Invalid parameter"),
                                  "403": response("The caller may not read it")}}}


_FRAME: dict[str, Any] = {
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
                "status": {"type": "string", "enum": ["applied", "noop", "dropped", "failed", "queued", "skipped"]},
                "version": {"type": "integer"}, "error": {"type": "string"}, "message": {"type": "string"},
                "expected": {}, "actual": {}}},
            "Aspect": {"type": "object", "properties": {
                "version": {"type": "integer"}, "value": {}, "deleted": {"type": "boolean"},
                "systemMetadata": {"type": "object"}}},
        },
    },
    "security": [{"bearer": []}],
}

OPENAPI_PATHS: dict[str, Any] = {}  # the document does not describe itself
DOCUMENT_KEY = web.AppKey("openapi", dict)  # the completed document, set by create_app

_READ_METHODS = ("get", "head", "options")
_PATH_PARAMETER = re.compile(r"{([^}]+)}")


def document(modules: Iterable[RouteModule]) -> dict[str, Any]:
    """The document as served, with the paths of `modules`; an operation (template and method)
    declared by two modules is an error."""
    paths: dict[str, dict[str, Any]] = {}
    for module in modules:
        for template, item in module.OPENAPI_PATHS.items():
            operations = paths.setdefault(template, {})
            if twice := operations.keys() & item.keys():
                raise ValueError(f"OpenAPI: {', '.join(sorted(twice))} {template} declared twice")
            operations.update(item)
    return complete({**_FRAME, "paths": paths})


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
            extra = {"503": response("A backend does not answer; retry after Retry-After")}
            if operation.get("security") != []:
                extra["401"] = response("Missing or invalid bearer token")
            if "requestBody" in operation:
                extra |= {"400": response("Invalid request"), "413": response("Request over the size limit")}
            if method not in _READ_METHODS:
                extra["429"] = response("Overloaded (the MCL processor lags); retry after Retry-After")
            for status, answer in extra.items():
                responses.setdefault(status, answer)
    return done


async def get_document(request: web.Request) -> web.Response:
    return web.json_response(request.app[DOCUMENT_KEY])


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi.json", get_document)
