"""CDAP's v3 metadata routes: `/v3/namespaces/{ns}/<entity path>/metadata[/properties[/{key}]|/tags[/{tag}]]`.

The entity path is CDAP's (`apps/{app}[/versions/{v}][/{program type}/{program}]`,
`datasets/{ds}`, `streams/{s}`, nothing for the namespace) followed by any `key/value`
segments of a custom entity (`datasets/myds/field/empname`); `?type=` names a custom entity's
type when it is not the last key. `?scope=USER|SYSTEM` (any case) picks one scope; reads show
both unless told, writes and removals go to USER unless told. GET answers CDAP's records
`[{"metadataEntity", "scope", "properties", "tags"}]` (or the properties map, or the tag list);
POST and DELETE answer the entity's records after the change; GET `.../metadata/changes` the
change records of its tags and properties (lodestar/metadata/changes.py). `/v3/urns/{urn}/metadata...` (a
Lodestar addition) addresses the same by URN, also entities outside CDAP's names.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gms.access import READ, REMOVE, WRITE
from lodestar.api.access import require
from lodestar.api.context import GMS_KEY, api_of, error, principal_of, read_json
from lodestar.metadata.service import (
    MetadataRecord,
    MetadataService,
    NotFound,
    WriteFailed,
    parse_scope,
    privileges_for,
)
from lodestar.metadata.validation import InvalidMetadata
from schemas.metadata_entity import EntityError, MetadataEntity, from_path, to_urn

SERVICE_KEY = web.AppKey("metadata_service", MetadataService)
INDEX_WAIT = 10.0  # seconds a request on an application without a version waits for the index
_PRIVILEGES = {"GET": READ, "POST": WRITE, "DELETE": REMOVE}  # CDAP's table: any one of them
_METADATA = r"metadata(?:/(?:properties|tags)(?:/[^/]+)?|/changes)?"
_TAIL = r"(?:[^/]+/[^/]+/)*?" + _METADATA  # the first `metadata` after pairs of entity segments


def service_of(request: web.Request) -> MetadataService:
    return request.app[SERVICE_KEY]


def _target(request: web.Request) -> tuple[MetadataEntity, str, str | None]:
    """(entity, what: "" | "properties" | "tags", item: a key or tag or None) of the path."""
    segments = request.match_info["tail"].split("/")
    at = next((i for i in range(0, len(segments), 2) if segments[i] == "metadata"), None)
    if at is None:  # an encoded '/' inside a name makes the segments pair up differently
        raise web.HTTPBadRequest(text="path: the entity's segments must come in name/value pairs before"
                                      " /metadata ('/' is not allowed inside a name)")
    rest = segments[at + 1:]
    if "urn" in request.match_info:
        entity = service_of(request).entity_of(request.match_info["urn"])
    else:
        path = "/".join([request.match_info["ns"], *segments[:at]])
        entity = from_path(path, request.query.get("type") or None)
    return entity, rest[0] if rest else "", rest[1] if len(rest) > 1 else None


def _answer(records: list[MetadataRecord]) -> web.Response:
    return web.json_response([r.to_json() for r in records])


async def _handle(request: web.Request) -> web.Response:
    try:
        entity, what, item = _target(request)
        scope = parse_scope(request.query.get("scope"))
        require(request, privileges_for(scope if request.method != "GET" else None, _PRIVILEGES[request.method]),
                to_urn(entity))
        service = service_of(request)
        if service.needs_index(entity, request.method != "GET") and not await api_of(request).wait_for_index(
                INDEX_WAIT):
            return error(503, "index_behind", f"the versions of application {entity.get('application')!r} are"
                         f" found in the search index, which did not catch up within {INDEX_WAIT:g} s; retry")
        if what == "changes":
            if request.method != "GET":
                return error(405, "method_not_allowed", "change records are read-only (GET)")
            return web.json_response(service_of(request).changes(entity, scope))
        if request.method == "GET":
            return _read(service_of(request).records(entity, scope), what, item)
        body = await read_json(request) if request.method == "POST" else None
        await api_of(request).run(_write, service_of(request), request.method, entity, scope, what, item, body,
                                  principal_of(request))
        return _answer(service_of(request).records(entity))
    except (InvalidMetadata, EntityError) as err:
        return error(400, "invalid_metadata" if isinstance(err, InvalidMetadata) else "invalid_entity", str(err))
    except NotFound as err:
        return error(404, "not_found", str(err))
    except WriteFailed as err:
        return error(err.failure.http_status, err.failure.code, err.failure.message)


def _read(records: list[MetadataRecord], what: str, item: str | None) -> web.Response:
    if what == "":
        return _answer(records)
    if what == "tags":
        tags = list(dict.fromkeys(t for r in records for t in r.tags))
        if item is None:
            return web.json_response(tags)
        return web.json_response([item]) if item in tags else error(404, "not_found", f"tag {item!r} not found")
    properties = {k: v for r in reversed(records) for k, v in r.properties.items()}  # USER wins
    if item is None:
        return web.json_response(properties)
    if item not in properties:
        return error(404, "not_found", f"property {item!r} not found")
    return web.json_response({item: properties[item]})


def _write(service: MetadataService, method: str, entity: MetadataEntity, scope: str | None, what: str,
           item: str | None, body: Any, actor: str) -> None:
    if method == "POST":
        if item is not None or what == "":
            raise InvalidMetadata("POST goes to .../metadata/properties (a JSON object) or .../metadata/tags"
                                  " (a JSON array)")
        if what == "tags":
            if not isinstance(body, list):
                raise InvalidMetadata("tags must be a JSON array of strings")
            service.add_tags(entity, scope or "USER", body, actor)
        else:
            service.add_properties(entity, scope or "USER", body, actor)
        return
    if what == "":
        service.remove_all(entity, scope or "USER", actor)
    elif what == "tags":
        service.remove_tags(entity, scope or "USER", None if item is None else [item], actor)
    else:
        service.remove_properties(entity, scope or "USER", None if item is None else [item], actor)


def _operation(summary: str, body: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "parameters": [
        {"name": "scope", "in": "query", "schema": {"type": "string", "enum": ["USER", "SYSTEM"]}},
        {"name": "type", "in": "query", "schema": {"type": "string"}, "description": "a custom entity's type"}],
        "responses": {"200": {"description": "The metadata"}, "400": {"description": "Invalid metadata or path"},
                      "404": {"description": "No such entity"}}}
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {"type": body}}}}
    return op


OPENAPI_PATHS: dict[str, Any] = {
    "/v3/namespaces/{ns}/{entity}/metadata": {
        "get": _operation("CDAP metadata records, one per scope"),
        "delete": _operation("Remove every tag and property of a scope")},
    "/v3/namespaces/{ns}/{entity}/metadata/properties": {
        "get": _operation("Properties"), "post": _operation("Add properties", "object"),
        "delete": _operation("Remove every property")},
    "/v3/namespaces/{ns}/{entity}/metadata/properties/{key}": {
        "get": _operation("One property"), "delete": _operation("Remove one property")},
    "/v3/namespaces/{ns}/{entity}/metadata/tags": {
        "get": _operation("Tags"), "post": _operation("Add tags", "array"), "delete": _operation("Remove every tag")},
    "/v3/namespaces/{ns}/{entity}/metadata/tags/{tag}": {
        "get": _operation("The tag, if the entity has it (else 404)"), "delete": _operation("Remove one tag")},
    "/v3/namespaces/{ns}/{entity}/metadata/changes": {
        "get": _operation("Change records of tags and properties: previous, updated, additions, deletions")},
    # {entity}: CDAP's entity path, slashes included: datasets/myds, apps/app/mapreduce/p, datasets/ds/field/f
    "/v3/urns/{urn}/metadata": {"get": _operation("The same routes by URN (also .../properties, .../tags)")},
}


def add_routes(app: web.Application) -> None:
    api = app[GMS_KEY]
    app[SERVICE_KEY] = MetadataService(api.gms, api.gms.limits.metadata_max_length, api.read_models.search)
    for path in ("/v3/namespaces/{ns}/{tail:" + _TAIL + "}", "/v3/urns/{urn}/{tail:" + _METADATA + "}"):
        for method in ("GET", "POST", "DELETE"):
            app.router.add_route(method, path, _handle)
