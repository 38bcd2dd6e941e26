"""Confluent's schema-registry REST API at `/schema-registry/api/`, as DataHub's GMS serves its
"internal" registry there: the `schema_registry_url` of a `datahub-kafka` sink (and of
Confluent's `SchemaRegistryClient`, `AvroSerializer`, `AvroDeserializer`) can point at Lodestar.

Schemas and subjects are metadata in the aspect store (`gms.schema_registry`), so every GMS
instance answers the same ids. Reads (GETs and the lookup `POST /subjects/{subject}`) need no
token, as DataHub's registry; registering and setting compatibility need WRITE on the
instance. Bodies are `application/vnd.schemaregistry.v1+json` (or plain JSON) both ways;
errors are Confluent's `{"error_code", "message"}`. Compatibility levels are stored and
answered but not enforced: no registration is refused for compatibility. Only AVRO schemas
are served; schema references, deletions, modes and contexts are not.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from aiohttp import web

from gms.access import INSTANCE, WRITE
from gms.errors import ProposalFailed
from gms.schema_registry import RegistryError, SchemaRegistry, store_reader
from lodestar.api.access import require
from lodestar.api.context import GMS_KEY, api_of, principal_of, query_route
from lodestar.api.limits import json_items
from lodestar.api.openapi import JSON, OBJECT

BASE = "/schema-registry/api"
MEDIA = "application/vnd.schemaregistry.v1+json"
REGISTRY_KEY = web.AppKey("schema_registry", SchemaRegistry)


def is_public(request: web.Request) -> bool:
    """Whether a request is a registry read, which needs no token (GETs and the lookup POST)."""
    if not request.path.startswith(BASE + "/"):
        return False
    return request.method in ("GET", "HEAD") or (request.method == "POST" and not request.path.endswith("/versions"))


def _answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=MEDIA)


def _error(status: int, code: int, message: str) -> web.Response:
    return _answer({"error_code": code, "message": message}, status)


def _registry(request: web.Request) -> SchemaRegistry:
    return request.app[REGISTRY_KEY]


async def _run(request: web.Request, fn: Any, *args: Any) -> Any:
    return await api_of(request).run(fn, *args)


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    limit = api_of(request).max_json_items
    if (items := json_items(raw, limit)) > limit:  # (registry reads need no token: bounded before parsing)
        raise RegistryError(413, 413, f"request body holds {items} JSON items, over the limit of {limit}")
    try:
        body = orjson.loads(raw) if raw else {}  # (orjson refuses nesting past 1,024 levels)
    except orjson.JSONDecodeError as err:
        raise RegistryError(400, 400, f"Unexpected character in the request body: {err}") from None
    if not isinstance(body, dict):
        raise RegistryError(422, 42201, "Invalid schema: the body must be a JSON object")
    return body


def _schema_of(body: dict[str, Any]) -> tuple[str, str]:
    schema, schema_type = body.get("schema"), body.get("schemaType") or "AVRO"
    if not isinstance(schema, str) or not isinstance(schema_type, str):
        raise RegistryError(422, 42201, "Invalid schema: the body needs {\"schema\": \"<schema as a string>\"}")
    if body.get("references"):
        raise RegistryError(422, 42201, "Invalid schema: schema references are not served")
    return schema, schema_type


def _write_access(request: web.Request) -> None:
    """The registry's own routes need WRITE on the instance (its entities are access-controlled:
    through any other route they need ADMIN)."""
    try:
        require(request, WRITE, INSTANCE)
    except web.HTTPForbidden as refused:
        raise RegistryError(403, 40301, json.loads(refused.text or "{}").get("message", "forbidden")) from None


def _handled(handler: Any) -> Any:
    async def wrapped(request: web.Request) -> web.Response:
        try:
            return await handler(request)
        except RegistryError as err:
            return _error(err.status, err.code, str(err))
        except ProposalFailed as failure:
            return _error(failure.http_status, failure.http_status * 100 + 1 if failure.http_status < 500 else 50001,
                          f"{failure.code}: {failure.message}")
    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


def _version_body(subject: str, version: int, schema: Any) -> dict[str, Any]:
    body = {"subject": subject, "version": version, "id": schema.id, "schema": schema.schema}
    return body if schema.schema_type == "AVRO" else {**body, "schemaType": schema.schema_type}


@_handled
async def register(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    _write_access(request)
    schema, schema_type = _schema_of(await _body(request))
    schema_id = await _run(request, _registry(request).register, principal_of(request), subject, schema, schema_type)
    return _answer({"id": schema_id})


@_handled
async def lookup(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    schema, schema_type = _schema_of(await _body(request))
    version, found = await _run(request, _registry(request).lookup, subject, schema, schema_type)
    return _answer(_version_body(subject, version, found))


@_handled
async def schema_by_id(request: web.Request) -> web.Response:
    try:
        schema_id = int(request.match_info["id"])
    except ValueError:
        return _error(404, 40403, "Schema not found")
    found = await _run(request, _registry(request).schema, schema_id)
    if found is None:
        return _error(404, 40403, "Schema not found")
    body: dict[str, Any] = {"schema": found.schema}
    return _answer(body if found.schema_type == "AVRO" else {**body, "schemaType": found.schema_type})


@_handled
async def subjects(request: web.Request) -> web.Response:
    names = await _run(request, _registry(request).subjects)
    prefix = request.query.get("subjectPrefix", "")
    return _answer(sorted(name for name in names if name.startswith(prefix)))


@_handled
async def versions(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    found = await _run(request, _registry(request).versions, subject)
    if not found:
        return _error(404, 40401, f"Subject '{subject}' not found.")
    return _answer([entry["version"] for entry in found])


@_handled
async def version(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    number, found = await _run(request, _registry(request).version, subject, request.match_info["version"])
    return _answer(_version_body(subject, number, found))


@_handled
async def version_schema(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    _, found = await _run(request, _registry(request).version, subject, request.match_info["version"])
    return web.Response(text=found.schema, content_type=MEDIA)


@_handled
async def get_config(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    level = await _run(request, _registry(request).compatibility, subject)
    if level is None and request.query.get("defaultToGlobal", "").lower() == "true":
        level = await _run(request, _registry(request).compatibility, None)
    if level is None:
        return _error(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")
    return _answer({"compatibilityLevel": level})


@_handled
async def put_config(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    _write_access(request)
    body = await _body(request)
    level = await _run(request, _registry(request).set_compatibility, principal_of(request), subject,
                       body.get("compatibility", body.get("compatibilityLevel")))
    return _answer({"compatibility": level})


REGISTRY_ERROR: dict[str, Any] = {"type": "object", "required": ["error_code", "message"], "properties": {
    "error_code": {"type": "integer"}, "message": {"type": "string"}}}


def _response(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """An answer in Confluent's media type (or JSON); a Confluent error unless `schema` says otherwise."""
    shape = REGISTRY_ERROR if schema is None else schema
    return {"description": description, "content": {MEDIA: {"schema": shape}, JSON: {"schema": shape}}}


def _op(summary: str, body: bool = False, write: bool = False) -> dict[str, Any]:
    responses = {"200": _response("Done", {}), "400": _response("A body that is not JSON"),
                 "404": _response("No such subject, version or schema"),
                 "422": _response("An invalid schema, subject, version or compatibility level")}
    if write:
        responses["403"] = _response("No WRITE privilege on the instance")
        responses["409"] = _response("Too many concurrent registrations: try again")
    op: dict[str, Any] = {"summary": summary, "tags": ["schema registry"], "responses": responses}
    if not write:
        op["security"] = []  # reads need no token, as DataHub's registry
    if body:
        op["requestBody"] = {"required": True, "content": {MEDIA: {"schema": OBJECT}, JSON: {"schema": OBJECT}}}
    return op


OPENAPI_PATHS: dict[str, Any] = {
    f"{BASE}/subjects": {"get": _op("Subjects with a version (?subjectPrefix=)")},
    f"{BASE}/subjects/{{subject}}": {"post": _op("Look a schema up in a subject: its version and id", body=True)},
    f"{BASE}/subjects/{{subject}}/versions": {
        "get": _op("A subject's version numbers"),
        "post": _op("Register a schema {schema, schemaType?} under a subject: {id} (the same schema: the same id)",
                    body=True, write=True)},
    f"{BASE}/subjects/{{subject}}/versions/{{version}}": {"get": _op("A version (a number or latest)")},
    f"{BASE}/subjects/{{subject}}/versions/{{version}}/schema": {"get": _op("A version's schema alone")},
    f"{BASE}/schemas/ids/{{id}}": {"get": _op("A schema by its id")},
    f"{BASE}/config": {"get": _op("The global compatibility level (stored, not enforced)"),
                       "put": _op("Set the global compatibility level {compatibility}", body=True, write=True)},
    f"{BASE}/config/{{subject}}": {
        "get": _op("A subject's compatibility level (?defaultToGlobal=true)"),
        "put": _op("Set a subject's compatibility level {compatibility}", body=True, write=True)},
}


def add_routes(app: web.Application) -> None:
    gms = app[GMS_KEY].gms
    app[REGISTRY_KEY] = SchemaRegistry(lambda proposals, actor: gms.apply(
        proposals, actor, None, True, WRITE), store_reader(gms.store))
    router = app.router
    router.add_get(f"{BASE}/subjects", subjects)
    router.add_post(f"{BASE}/subjects/{{subject}}", query_route(lookup))
    router.add_get(f"{BASE}/subjects/{{subject}}/versions", versions)
    router.add_post(f"{BASE}/subjects/{{subject}}/versions", register)
    router.add_get(f"{BASE}/subjects/{{subject}}/versions/{{version}}", version)
    router.add_get(f"{BASE}/subjects/{{subject}}/versions/{{version}}/schema", version_schema)
    router.add_get(f"{BASE}/schemas/ids/{{id}}", schema_by_id)
    router.add_get(f"{BASE}/config", get_config)
    router.add_put(f"{BASE}/config", put_config)
    router.add_get(f"{BASE}/config/{{subject}}", get_config)
    router.add_put(f"{BASE}/config/{{subject}}", put_config)
