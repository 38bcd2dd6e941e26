"""The OpenAPI document of the REST API, served at /openapi.json."""

from __future__ import annotations

from typing import Any

from aiohttp import web

_JSON = "application/json"
_URN = {"name": "urn", "in": "path", "required": True, "schema": {"type": "string"},
        "description": "Entity URN, URL-encoded"}
_ASPECT = {"name": "aspect", "in": "path", "required": True, "schema": {"type": "string"}}
_ERROR = {"$ref": "#/components/schemas/Error"}


def _q(name: str, doc: str = "", kind: str = "string", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind}, "description": doc}


def _response(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": schema or _ERROR}}}


_ERRORS = {
    "400": _response("Invalid request"),
    "401": _response("Missing or invalid bearer token"),
    "413": _response("Request over the size limit"),
}

_CONDITIONAL = [
    {"name": name, "in": "header", "required": False, "schema": {"type": "string"}, "description": doc}
    for name, doc in (
        ("If-Version-Match", "Expected current version of each aspect; -1 = must not exist"),
        ("If-Unmodified-Since", "ISO-8601; fail if the aspect changed after this time"),
        ("If-Modified-Since", "ISO-8601; fail unless the aspect changed after this time"),
        ("If-None-Match", "'*' with CREATE/CREATE_ENTITY: drop silently when it exists"),
    )
]

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Lodestar GMS", "version": "0.1.0",
             "description": "Metadata proposals in; versioned aspects and change logs out."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {"type": "object", "required": ["error", "message"], "properties": {
                "error": {"type": "string"}, "message": {"type": "string"}, "status": {"type": "integer"},
                "expected": {"type": "string"}, "actual": {"type": "string"}}},
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
                "expected": {"type": "string"}, "actual": {"type": "string"}}},
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
                    "proposals": {"type": "array", "items": {"$ref": "#/components/schemas/Proposal"}},
                    "async": {"type": "boolean", "default": False},
                    "waitForIndex": {"type": "boolean", "default": False}}}}}},
            "responses": {
                "200": _response("Every proposal succeeded", {"type": "object", "properties": {
                    "results": {"type": "array", "items": {"$ref": "#/components/schemas/Result"}}}}),
                "202": _response("Queued on the MCP topic"),
                "207": _response("Some of several proposals failed; see each result"),
                "412": _response("A single proposal failed a precondition"),
                **_ERRORS}}},
        "/v1/entities/{urn}": {
            "get": {"summary": "Latest version of every aspect", "parameters": [_URN],
                    "responses": {"200": _response("The entity", {"type": "object"}),
                                  "404": _response("No such entity"), **_ERRORS}},
            "delete": {"summary": "Soft delete (status.removed), or purge with hard=true",
                       "parameters": [_URN, {"name": "hard", "in": "query", "schema": {"type": "boolean"}}],
                       "responses": {"200": _response("Deleted", {"type": "object"}),
                                     "404": _response("No such entity"), **_ERRORS}}},
        "/v1/entities/{urn}/aspects/{aspect}": {"get": {
            "summary": "One aspect, latest or a given version",
            "parameters": [_URN, _ASPECT, {"name": "version", "in": "query", "schema": {"type": "integer",
                                                                                          "minimum": 1}}],
            "responses": {"200": _response("The aspect", {"$ref": "#/components/schemas/Aspect"}),
                          "404": _response("No such aspect or version"), **_ERRORS}}},
        "/v1/entities/{urn}/aspects/{aspect}/versions": {"get": {
            "summary": "Every version of an aspect", "parameters": [_URN, _ASPECT],
            "responses": {"200": _response("The versions", {"type": "object"}),
                          "404": _response("No such aspect"), **_ERRORS}}},
        "/aspects": {"post": {
            "summary": "DataHub Rest.li: ?action=ingestProposal | ingestProposalBatch",
            "parameters": [{"name": "action", "in": "query", "required": True,
                            "schema": {"type": "string", "enum": ["ingestProposal", "ingestProposalBatch"]}}],
            "requestBody": {"required": True, "content": {_JSON: {"schema": {"type": "object"}}}},
            "responses": {"200": _response("Applied", {"type": "object"}), "412": _response("Precondition failed"),
                          **_ERRORS}}},
        "/entities": {"post": {
            "summary": "DataHub Rest.li: ?action=delete {\"urn\": ...}",
            "parameters": [{"name": "action", "in": "query", "required": True,
                            "schema": {"type": "string", "enum": ["delete"]}}],
            "requestBody": {"required": True, "content": {_JSON: {"schema": {"type": "object"}}}},
            "responses": {"200": _response("Deleted", {"type": "object"}), "404": _response("No such entity"),
                          **_ERRORS}}},
        "/v1/search": {"get": {
            "summary": "Search entities (free text, prefix*, key:value, tags:x, schema:field)",
            "parameters": [_q("query"), _q("types", "Entity types, comma-separated"), _q("scope", "USER or SYSTEM"),
                           _q("sort", "relevance, name, -name, urn, -urn"), _q("start", kind="integer"),
                           _q("count", kind="integer"), _q("includeRemoved", kind="boolean")],
            "responses": {"200": _response("One page of results with facets", {"type": "object"}), **_ERRORS}}},
        "/v1/autocomplete": {"get": {
            "summary": "Names, field names and tags starting with a prefix",
            "parameters": [_q("query"), _q("limit", kind="integer")],
            "responses": {"200": _response("Suggestions", {"type": "object"}), **_ERRORS}}},
        "/v1/lineage": {"get": {
            "summary": "Lineage of datasets, jobs and runs, breadth first",
            "parameters": [_q("urn", required=True), _q("direction", "upstream, downstream or both"),
                           _q("maxHops", kind="integer")],
            "responses": {"200": _response("Nodes and edges", {"type": "object"}), **_ERRORS}}},
        "/v1/lineage/fields": {"get": {
            "summary": "Field-level lineage from a schemaField URN",
            "parameters": [_q("urn", required=True), _q("direction"), _q("maxHops", kind="integer")],
            "responses": {"200": _response("Nodes and edges", {"type": "object"}), **_ERRORS}}},
        "/v1/timeseries/{urn}/{aspect}": {"get": {
            "summary": "Points of a timeseries aspect in time order",
            "parameters": [_URN, _ASPECT, _q("start", kind="integer"), _q("end", kind="integer"),
                           _q("limit", kind="integer")],
            "responses": {"200": _response("The points", {"type": "object"}), **_ERRORS}}},
        "/config": {"get": {"summary": "Server configuration (DataHub clients check noCode)", "security": [],
                            "responses": {"200": _response("Configuration", {"type": "object"})}}},
        "/health": {"get": {"summary": "Liveness", "security": [],
                            "responses": {"200": _response("Alive", {"type": "object"})}}},
    },
}


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(DOCUMENT)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi.json", openapi)
