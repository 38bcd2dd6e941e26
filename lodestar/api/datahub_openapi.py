"""DataHub's OpenAPI entity routes, so DataHub's SDK in OpenAPI mode (`openapi_ingestion`,
`DATAHUB_REST_EMITTER_DEFAULT_ENDPOINT=OPENAPI`, `ClientMode.SDK`) and callers of DataHub's
OpenAPI work unchanged:

* v3: `POST|PATCH /openapi/v3/entity/{type}` (a list of `{"urn", "<aspect>": {"value",
  "systemMetadata"?, "headers"?}}`; PATCH values are `{"patch": [...], "arrayPrimaryKeys"?}`),
  `POST|PATCH /openapi/v3/entity/{type}/{urn}/{aspect}` (one `{"value", ...}`, or one patch),
  `GET|HEAD /openapi/v3/entity/{type}/{urn}[?aspects=]`, `GET /openapi/v3/entity/{type}/{urn}/{aspect}
  [?version=]`, `POST /openapi/v3/entity/{type}/batchGet`, `DELETE /openapi/v3/entity/{type}/{urn}[/{aspect}]`;
* v2: `POST|PATCH /openapi/v2/entity/{type}/{urn}/{aspect}` (the bare value or patch),
  `POST /openapi/v2/entity/{type}` (`[{"urn", "aspects": {...}}]`), `DELETE /openapi/v2/entity/{type}/{urn}`,
  `POST /openapi/v2/platform/entities/v1/` (MCPs);

each write query may say `async=true` (checked, then queued on the MCP topic: 202),
`createIfNotExists=true` (change type CREATE: 412 when the aspect exists) or
`createEntityIfNotExists=true` (CREATE_ENTITY: 412 when the entity exists); `systemMetadata=true`
adds each aspect's system metadata to an answer. Writes are proposals on GMS's write path (parse,
validation, per-proposal authorization), all of a request or none (`datahub.py`'s rule); a
synchronous write answers with each written aspect's stored value. An entity delete is the hard
delete of the Rest.li route; an aspect delete is a DELETE proposal (a tombstone version).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from gms.access import READ, REMOVE
from gms.errors import ProposalFailed
from gms.store import AspectStore, StoredAspect
from ingest.proposal import JSON_PATCH, Proposal, ProposalError
from lodestar.api import datahub
from lodestar.api.access import require
from lodestar.api.context import api_of, error, principal_of, read_json
from lodestar.api.datahub_reads import checked_entity, list_param, newest, path_urn, refuse
from lodestar.api.limits import MAX_MILLIS, MAX_VERSION, bool_param, int_param
from lodestar.api.native import conditional_headers, parse_all
from lodestar.api.openapi import ARRAY, ASPECT, OBJECT, URN, query_param, response
from schemas.registry import EntityRegistry, EntitySpec

MAX_ITEMS = 1000  # entities of one batchGet
TYPE_MARKER = "__type"  # the record name DataHub's Java clients put in a platform MCP's value


# -- what a request names -------------------------------------------------------------------


def _registry(request: web.Request) -> EntityRegistry:
    return api_of(request).gms.registry


def entity_of_path(request: web.Request) -> EntitySpec:
    """The path's entity type (its case aside, as DataHub matches it); 400 when unknown."""
    name = request.match_info["type"]
    registry = _registry(request)
    entity = registry.entity(name) or next(
        (spec for key, spec in registry.entities.items() if key.lower() == name.lower()), None)
    if entity is None:
        raise refuse(400, "unknown_entity_type", f"entity type {name!r} is not in the registry")
    return entity


def aspect_of(entity: EntitySpec, name: str, where: str) -> str:
    """The entity's aspect of that name (its case aside); 400 when the entity has none."""
    if name in entity.aspects:
        return name
    found = next((aspect for aspect in entity.aspects if aspect.lower() == name.lower()), None)
    if found is None:
        raise refuse(400, "unknown_aspect", f"{where}: {name!r} is not an aspect of {entity.name} entities")
    return found


def _urn_of(request: web.Request, entity: EntitySpec, urn: Any, where: str = "urn") -> str:
    """A URN of the path's entity type; 400 when malformed or of another type."""
    parsed, spec = checked_entity(request, urn, where)
    if spec.name != entity.name:
        raise refuse(400, "invalid_urn", f"{where}: {urn} is a {spec.name} URN, not a {entity.name} one")
    return str(parsed)


def _change_type(request: web.Request) -> str:
    if bool_param(request, "createEntityIfNotExists"):
        return "CREATE_ENTITY"
    return "CREATE" if bool_param(request, "createIfNotExists") else "UPSERT"


# -- writes ---------------------------------------------------------------------------------


def _mcp(entity: EntitySpec, urn: str, aspect: str, change_type: str, envelope: Any, where: str) -> dict[str, Any]:
    """The proposal of one aspect envelope `{"value", "systemMetadata"?, "headers"?}`."""
    if not isinstance(envelope, dict) or "value" not in envelope:
        raise refuse(400, "invalid_request", f'{where}: expected {{"value": ...}}')
    value = envelope["value"]
    if change_type == "PATCH":
        if isinstance(value, list):
            value = {"patch": value}
        body = {"value": value, "contentType": JSON_PATCH}
    else:
        body = {"json": value}
    mcp = {"entityType": entity.name, "entityUrn": urn, "changeType": change_type, "aspectName": aspect,
           "aspect": body}
    for name in ("systemMetadata", "headers"):
        if envelope.get(name) is not None:
            mcp[name] = envelope[name]
    return mcp


def _entity_mcps(request: web.Request, entity: EntitySpec, items: Any, change_type: str,
                 nested: bool = False) -> list[dict[str, Any]]:
    """The proposals of a list of `{"urn", "<aspect>": envelope}` (v3) or of
    `{"urn", "aspects": {"<aspect>": envelope}}` (v2, `nested`)."""
    if not isinstance(items, list) or not items:
        raise refuse(400, "invalid_request", 'body: expected a non-empty list of {"urn": ..., "<aspect>": {...}}')
    limit = api_of(request).gms.limits.max_batch
    mcps = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise refuse(400, "invalid_request", f"[{i}]: expected an object")
        urn = _urn_of(request, entity, item.get("urn"), f"[{i}].urn")
        aspects = item.get("aspects") if nested else {k: v for k, v in item.items() if k != "urn"}
        if not isinstance(aspects, dict) or not aspects:
            raise refuse(400, "invalid_request", f"[{i}]: names no aspect")
        for name, envelope in aspects.items():
            where = f"[{i}].{'aspects.' if nested else ''}{name}"
            mcps.append(_mcp(entity, urn, aspect_of(entity, name, where), change_type, envelope, where))
    if len(mcps) > limit:
        raise web.HTTPRequestEntityTooLarge(limit, len(mcps), text=f"{len(mcps)} aspects, over the limit of {limit}")
    return mcps


async def _write(request: web.Request, mcps: list[dict[str, Any]]) -> web.Response | list[tuple[str, str]] | None:
    """Apply (or with `async=true` queue) the proposals, all or none: the failure's answer;
    else, when applied, the (urn, aspect) written, in order; None when queued."""
    parsed: list[Proposal | ProposalError] = parse_all(mcps)
    if bool_param(request, "async"):
        return await datahub.queue_all(request, parsed)
    api = api_of(request)
    results = await api.apply(parsed, principal_of(request), conditional_headers(request), all_or_none=True)
    if any(r.failure is not None for r in results):
        return datahub.failure_response(parsed, results)
    return list(dict.fromkeys((m["entityUrn"], m["aspectName"]) for m in mcps))


def _written(request: web.Request, written: Iterable[tuple[str, str]], mcps: list[dict[str, Any]]
             ) -> dict[str, dict[str, Any]]:
    """urn -> aspect -> envelope: the stored value of each aspect written (timeseries points and
    queued writes: the value sent)."""
    store, registry = api_of(request).gms.store, _registry(request)
    sent = {(m["entityUrn"], m["aspectName"]): m["aspect"].get("json", m["aspect"].get("value")) for m in mcps}
    with_meta = bool_param(request, "systemMetadata")
    out: dict[str, dict[str, Any]] = {}
    for urn, aspect in written:
        spec = registry.aspect(aspect)
        row = None if spec is None or spec.is_timeseries else store.get(urn, aspect)
        envelope = _envelope(row, with_meta) if row is not None and row.exists else {"value": sent[(urn, aspect)]}
        out.setdefault(urn, {})[aspect] = envelope
    return out


async def _answer(request: web.Request, mcps: list[dict[str, Any]], shape: str) -> web.Response:
    """Write, then answer in the route's shape: `list` (v3, one object per entity), `one` (v3,
    one entity), `v2` (`{"urn", "aspects"}`), `v2list` (`[{"urn"}]`)."""
    outcome = await _write(request, mcps)
    if isinstance(outcome, web.Response):
        return outcome
    status = 202 if outcome is None else 200
    written = outcome if outcome is not None else dict.fromkeys((m["entityUrn"], m["aspectName"]) for m in mcps)
    by_urn = await asyncio.to_thread(_written, request, written, mcps)
    if shape == "list":
        body: Any = [{"urn": urn, **aspects} for urn, aspects in by_urn.items()]
    elif shape == "one":
        urn, aspects = next(iter(by_urn.items()))
        body = {"urn": urn, **aspects}
    elif shape == "v2":
        urn, aspects = next(iter(by_urn.items()))
        body = {"urn": urn, "aspects": aspects}
    else:
        body = [{"urn": urn} for urn in by_urn]
    return web.json_response(body, status=status)


async def post_entities(request: web.Request) -> web.Response:
    """v3 `POST /openapi/v3/entity/{type}`: aspects of entities of one type."""
    entity = entity_of_path(request)
    return await _answer(request, _entity_mcps(request, entity, await read_json(request), _change_type(request)),
                         "list")


async def patch_entities(request: web.Request) -> web.Response:
    """v3 `PATCH /openapi/v3/entity/{type}`: JSON Patches of aspects of entities of one type."""
    entity = entity_of_path(request)
    return await _answer(request, _entity_mcps(request, entity, await read_json(request), "PATCH"), "list")


async def post_entities_v2(request: web.Request) -> web.Response:
    """v2 `POST /openapi/v2/entity/{type}`: `[{"urn", "aspects": {"<aspect>": {"value"}}}]`."""
    entity = entity_of_path(request)
    mcps = _entity_mcps(request, entity, await read_json(request), _change_type(request), nested=True)
    return await _answer(request, mcps, "v2list")


async def _aspect_write(request: web.Request, change_type: str, shape: str, enveloped: bool) -> web.Response:
    entity = entity_of_path(request)
    urn = _urn_of(request, entity, path_urn(request))
    aspect = aspect_of(entity, request.match_info["aspect"], "aspect")
    body = await read_json(request)
    envelope = body if enveloped else {"value": body}
    return await _answer(request, [_mcp(entity, urn, aspect, change_type, envelope, "body")], shape)


async def post_aspect(request: web.Request) -> web.Response:
    """v3 `POST /openapi/v3/entity/{type}/{urn}/{aspect}`: `{"value", "systemMetadata"?, "headers"?}`."""
    return await _aspect_write(request, _change_type(request), "one", enveloped=True)


async def patch_aspect(request: web.Request) -> web.Response:
    """v3 `PATCH /openapi/v3/entity/{type}/{urn}/{aspect}`: `{"patch": [...], "arrayPrimaryKeys"?}`."""
    return await _aspect_write(request, "PATCH", "one", enveloped=False)


async def post_aspect_v2(request: web.Request) -> web.Response:
    """v2 `POST /openapi/v2/entity/{type}/{urn}/{aspect}`: the aspect's value."""
    return await _aspect_write(request, _change_type(request), "v2", enveloped=False)


async def patch_aspect_v2(request: web.Request) -> web.Response:
    """v2 `PATCH /openapi/v2/entity/{type}/{urn}/{aspect}`: `{"patch": [...], "arrayPrimaryKeys"?}`."""
    return await _aspect_write(request, "PATCH", "v2", enveloped=False)


async def platform_entities(request: web.Request) -> web.Response:
    """v2 `POST /openapi/v2/platform/entities/v1/`: MCPs (aspect values as objects, DataHub's
    `__type` marker dropped); answers the URNs written."""
    items = await read_json(request)
    if not isinstance(items, list) or not items or not all(isinstance(item, dict) for item in items):
        raise refuse(400, "invalid_request", "body: expected a non-empty list of MetadataChangeProposals")
    mcps = []
    for item in items:
        aspect = item.get("aspect")
        if isinstance(aspect, dict) and isinstance(aspect.get("value"), dict) \
                and aspect.get("contentType", "application/json") == "application/json":
            value = {k: v for k, v in aspect["value"].items() if k != TYPE_MARKER}
            item = {**item, "aspect": {"json": value}}
        mcps.append(item)
    outcome = await _write(request, mcps)
    if isinstance(outcome, web.Response):
        return outcome
    urns = list(dict.fromkeys(m.get("entityUrn") for m in mcps))
    return web.json_response(urns, status=202 if outcome is None else 200)


# -- reads ----------------------------------------------------------------------------------


def _envelope(row: StoredAspect, with_meta: bool) -> dict[str, Any]:
    return {"value": row.value, "systemMetadata": row.system_metadata} if with_meta else {"value": row.value}


def entity_object(registry: EntityRegistry, store: AspectStore, entity: EntitySpec, urn: str,
                  names: list[str] | None, with_meta: bool) -> dict[str, Any] | None:
    """DataHub's v3 entity: `{"urn", "<aspect>": {"value"}}` of its stored versioned aspects and
    its key aspect (of `names` only, when given); None when it has none."""
    rows = [row for row in store.entity(urn) if row.exists]
    if not rows:
        return None
    wanted = None if names is None else set(names)
    out: dict[str, Any] = {"urn": urn}
    if wanted is None or entity.key_aspect in wanted:
        out[entity.key_aspect] = {"value": registry.key_value(registry.parse_urn(urn))}
    for row in sorted(rows, key=lambda r: r.aspect):
        spec = registry.aspect(row.aspect)
        if spec is not None and not spec.is_timeseries and (wanted is None or row.aspect in wanted):
            out[row.aspect] = _envelope(row, with_meta)
    return out


async def get_entity(request: web.Request) -> web.Response:
    """v3 `GET /openapi/v3/entity/{type}/{urn}[?aspects=a&aspects=b][&systemMetadata=true]`; 404 when absent."""
    entity = entity_of_path(request)
    urn = _urn_of(request, entity, path_urn(request))
    require(request, READ, urn)
    asked = list_param(request, "aspects")
    names = None if asked is None else [aspect_of(entity, name, "aspects") for name in asked]
    api = api_of(request)
    found = await asyncio.to_thread(entity_object, api.gms.registry, api.gms.store, entity, urn, names,
                                    bool_param(request, "systemMetadata"))
    if found is None:
        raise refuse(404, "not_found", f"entity {urn} not found")
    return web.json_response(found)


async def get_aspect(request: web.Request) -> web.Response:
    """v3 `GET /openapi/v3/entity/{type}/{urn}/{aspect}[?version=n]`: `{"value"}` of a version (0:
    the latest); of a timeseries aspect, its newest point (with a version: the newest at or before
    that timestamp, as DataHub reads it)."""
    entity = entity_of_path(request)
    urn = _urn_of(request, entity, path_urn(request))
    require(request, READ, urn)
    aspect = aspect_of(entity, request.match_info["aspect"], "aspect")
    api = api_of(request)
    if _registry(request).aspects[aspect].is_timeseries:
        point = await _newest_point(request, urn, aspect, int_param(request, "version", 0, 0, MAX_MILLIS) or None)
        return web.json_response({"value": point})
    version = int_param(request, "version", 0, 0, MAX_VERSION)
    row = await asyncio.to_thread(api.gms.store.get, urn, aspect, version or None)
    if row is None or not row.exists:
        which = f"version {version} of " if version else ""
        raise refuse(404, "not_found", f"{which}{aspect} of {urn} not found")
    return web.json_response(_envelope(row, bool_param(request, "systemMetadata")))


async def _newest_point(request: web.Request, urn: str, aspect: str, at_most: int | None) -> Any:
    """The newest point of a timeseries aspect (at or before `at_most`), once indexed; 404 when none."""
    api = api_of(request)
    await api.wait_for_index()
    found = await asyncio.to_thread(newest, api.read_models.timeseries, urn, aspect, None, at_most, 1, [[]])
    if not found:
        raise refuse(404, "not_found", f"{urn} has no {aspect} point")
    return found[0]


async def batch_get(request: web.Request) -> web.Response:
    """v3 `POST /openapi/v3/entity/{type}/batchGet`: `[{"urn", "<aspect>": {}}]` -> the entities
    that exist, each with the aspects named (none named: all)."""
    entity = entity_of_path(request)
    items = await read_json(request)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise refuse(400, "invalid_request", 'body: expected a list of {"urn": ..., "<aspect>": {}}')
    if len(items) > MAX_ITEMS:
        raise refuse(400, "invalid_request", f"body: {len(items)} entities, over the limit of {MAX_ITEMS}")
    asked = []
    for i, item in enumerate(items):
        urn = _urn_of(request, entity, item.get("urn"), f"[{i}].urn")
        require(request, READ, urn)
        names = [aspect_of(entity, name, f"[{i}]") for name in item if name != "urn"]
        asked.append((urn, names or None))
    api, with_meta = api_of(request), bool_param(request, "systemMetadata")

    def read() -> list[dict[str, Any]]:
        found = (entity_object(api.gms.registry, api.gms.store, entity, urn, names, with_meta) for urn, names in asked)
        return [item for item in found if item is not None]

    return web.json_response(await asyncio.to_thread(read))


# -- deletes --------------------------------------------------------------------------------


async def delete_entity(request: web.Request) -> web.Response:
    """`DELETE /openapi/v{2,3}/entity/{type}/{urn}`: the entity's hard delete (none: nothing to do)."""
    entity = entity_of_path(request)
    urn = _urn_of(request, entity, path_urn(request))
    require(request, REMOVE, urn)
    answer = await datahub.delete_entity(request, urn)
    return answer if answer.status != 200 else web.Response(status=200)


async def delete_aspect(request: web.Request) -> web.Response:
    """`DELETE /openapi/v3/entity/{type}/{urn}/{aspect}`: a DELETE proposal of a versioned aspect;
    of a timeseries aspect, its newest point (as DataHub deletes it; 404 when there is none)."""
    entity = entity_of_path(request)
    urn = _urn_of(request, entity, path_urn(request))
    aspect = aspect_of(entity, request.match_info["aspect"], "aspect")
    api = api_of(request)
    if _registry(request).aspects[aspect].is_timeseries:
        require(request, REMOVE, urn)
        stamp = (await _newest_point(request, urn, aspect, None)).get("timestampMillis")
        try:
            await api.run(api.gms.delete_timeseries, urn, aspect, stamp, stamp, principal_of(request))
        except ProposalFailed as failure:
            return error(failure.http_status, failure.code, failure.message)
        await api.wait_for_index()
        return web.Response(status=200)
    outcome = await _write(request, [{"entityType": entity.name, "entityUrn": urn, "changeType": "DELETE",
                                      "aspectName": aspect}])
    return outcome if isinstance(outcome, web.Response) else web.Response(status=202 if outcome is None else 200)


# -- the routes -----------------------------------------------------------------------------


TYPE_PARAM = {"name": "type", "in": "path", "required": True, "schema": {"type": "string"},
         "description": "The entity type, e.g. dataset"}
_WRITE_FLAGS = [query_param("async", "true: checked, then queued (202)", kind="boolean"),
                query_param("createIfNotExists", "true: CREATE (412 when the aspect exists)", kind="boolean"),
                query_param("createEntityIfNotExists", "true: CREATE_ENTITY (412 when the entity exists)",
                            kind="boolean"),
                query_param("systemMetadata", "true: each aspect's system metadata in the answer", kind="boolean")]
_BODY = {"required": True, "content": {"application/json": {"schema": {}}}}
_REFUSALS = {"400": response("Invalid request"), "403": response("The caller may not write an entity"),
             "409": response("Conflicting writers"), "412": response("A precondition failed"),
             "413": response("Over a size limit")}


def _write_op(summary: str, answer: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"summary": summary, "parameters": [TYPE_PARAM, *(extra or []), *_WRITE_FLAGS], "requestBody": _BODY,
            "responses": {"200": response("The aspects written, as stored", answer),
                          "202": response("Queued (async=true)", answer), **_REFUSALS}}


_READ = {"400": response("Invalid request"), "403": response("The caller may not read it"),
         "404": response("Not found")}
_DELETE = {"200": response("Deleted (or nothing to delete)"), "400": response("Invalid request"),
           "403": response("The caller may not delete it"), "412": response("Refused")}
_PLATFORM = {"post": {
    "summary": "DataHub v2: MetadataChangeProposals (values as objects) -> the URNs written",
    "parameters": [query_param("async", kind="boolean")], "requestBody": _BODY,
    "responses": {"200": response("The URNs", ARRAY), "202": response("Queued", ARRAY), **_REFUSALS}}}
OPENAPI_PATHS: dict[str, Any] = {
    "/openapi/v3/entity/{type}": {
        "post": _write_op("DataHub v3: [{\"urn\", \"<aspect>\": {\"value\", \"systemMetadata\"?, \"headers\"?}}]",
                          ARRAY),
        "patch": _write_op("DataHub v3: [{\"urn\", \"<aspect>\": {\"value\": {\"patch\": [...]}}}]", ARRAY)},
    "/openapi/v3/entity/{type}/batchGet": {"post": {
        "summary": "DataHub v3: [{\"urn\", \"<aspect>\": {}}] -> the entities that exist, with those aspects",
        "parameters": [TYPE_PARAM, query_param("systemMetadata", kind="boolean")], "requestBody": _BODY,
        "responses": {"200": response("The entities", ARRAY), **_READ}}},
    "/openapi/v3/entity/{type}/{urn}": {
        "get": {"summary": "DataHub v3: an entity's aspects {\"urn\", \"<aspect>\": {\"value\"}}",
                "parameters": [TYPE_PARAM, URN, query_param("aspects", "Repeated"),
                               query_param("systemMetadata", kind="boolean")],
                "responses": {"200": response("The entity", OBJECT), **_READ}},
        "delete": {"summary": "DataHub v3: the entity's hard delete", "parameters": [TYPE_PARAM, URN],
                   "responses": _DELETE}},
    "/openapi/v3/entity/{type}/{urn}/{aspect}": {
        "get": {"summary": "DataHub v3: one aspect {\"value\"} (version 0: the latest; timeseries: the newest point,"
                           " at or before the version as a timestamp)",
                "parameters": [TYPE_PARAM, URN, ASPECT, query_param("version", kind="integer", minimum=0,
                                                               maximum=MAX_VERSION),
                               query_param("systemMetadata", kind="boolean")],
                "responses": {"200": response("The aspect", OBJECT), **_READ}},
        "post": _write_op("DataHub v3: {\"value\", \"systemMetadata\"?, \"headers\"?}", OBJECT, [URN, ASPECT]),
        "patch": _write_op("DataHub v3: {\"patch\": [...], \"arrayPrimaryKeys\"?}", OBJECT, [URN, ASPECT]),
        "delete": {"summary": "DataHub v3: the aspect deleted (timeseries: its newest point)",
                   "parameters": [TYPE_PARAM, URN, ASPECT], "responses": _DELETE}},
    "/openapi/v2/entity/{type}": {
        "post": _write_op("DataHub v2: [{\"urn\", \"aspects\": {\"<aspect>\": {\"value\"}}}] -> [{\"urn\"}]", ARRAY)},
    "/openapi/v2/entity/{type}/{urn}": {
        "delete": {"summary": "DataHub v2: the entity's hard delete", "parameters": [TYPE_PARAM, URN],
                   "responses": _DELETE}},
    "/openapi/v2/entity/{type}/{urn}/{aspect}": {
        "post": _write_op("DataHub v2: the aspect's value -> {\"urn\", \"aspects\"}", OBJECT, [URN, ASPECT]),
        "patch": _write_op("DataHub v2: {\"patch\": [...]} -> {\"urn\", \"aspects\"}", OBJECT, [URN, ASPECT])},
    "/openapi/v2/platform/entities/v1/": _PLATFORM,  # as DataHub's clients send it
    "/openapi/v2/platform/entities/v1": _PLATFORM,
}


def add_routes(app: web.Application) -> None:
    router = app.router
    v3, v2 = "/openapi/v3/entity/{type}", "/openapi/v2/entity/{type}"
    router.add_post(v3, post_entities)
    router.add_patch(v3, patch_entities)
    router.add_post(v3 + "/batchGet", batch_get)
    router.add_get(v3 + "/{urn}", get_entity)
    router.add_delete(v3 + "/{urn}", delete_entity)
    router.add_get(v3 + "/{urn}/{aspect}", get_aspect)
    router.add_post(v3 + "/{urn}/{aspect}", post_aspect)
    router.add_patch(v3 + "/{urn}/{aspect}", patch_aspect)
    router.add_delete(v3 + "/{urn}/{aspect}", delete_aspect)
    router.add_post(v2, post_entities_v2)
    router.add_delete(v2 + "/{urn}", delete_entity)
    router.add_post(v2 + "/{urn}/{aspect}", post_aspect_v2)
    router.add_patch(v2 + "/{urn}/{aspect}", patch_aspect_v2)
    router.add_post("/openapi/v2/platform/entities/v1/", platform_entities)
    router.add_post("/openapi/v2/platform/entities/v1", platform_entities)
