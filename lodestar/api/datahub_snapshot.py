"""Rest.li `GET /entities/{urn}[?aspects=List(a,b)]`: an entity in DataHub's snapshot form,
`{"value": {"<...>Snapshot": {"urn", "aspects": [{"<aspect type>": value}, ...]}}}`, with the
latest version of each aspect the snapshot may hold (schemas/snapshots.py). An entity with
nothing stored is 404; one of a type without a snapshot form is 400 (read it at /entitiesV2)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gms.access import READ
from lodestar.api.access import require
from lodestar.api.context import GMS_KEY, api_of
from lodestar.api.datahub_reads import checked_entity, list_param, path_urn, refuse
from schemas.snapshots import SnapshotForm, snapshot_forms

FORMS_KEY = web.AppKey("snapshot_forms", dict)


async def get_snapshot(request: web.Request) -> web.Response:
    urn = path_urn(request)
    parsed, entity = checked_entity(request, urn)
    form: SnapshotForm | None = request.app[FORMS_KEY].get(entity.name)
    if form is None:
        raise refuse(400, "invalid_request", f"urn: {entity.name} entities have no snapshot form; read them at"
                                             " /entitiesV2/{urn}")
    require(request, READ, str(parsed))
    wanted = list_param(request, "aspects")
    gms = api_of(request).gms
    registry = gms.registry
    rows = {row.aspect: row for row in gms.store.entity(str(parsed))}
    if not rows:
        raise refuse(404, "not_found", f"entity {parsed} not found")
    aspects: list[dict[str, Any]] = []
    for name in form.aspects:
        if wanted is not None and name not in wanted and name != entity.key_aspect:
            continue
        if name in rows:
            value = rows[name].value
        elif name == entity.key_aspect:
            value = registry.key_value(parsed)
        else:
            continue
        aspects.append({registry.aspects[name].schema_name: value})
    return web.json_response({"value": {form.name: {"urn": str(parsed), "aspects": aspects}}})


OPENAPI_PATHS: dict[str, Any] = {"/entities/{urn}": {"get": {
    "summary": "Rest.li: an entity in DataHub's snapshot form (?aspects=List(a,b) to choose aspects)",
    "parameters": [{"name": "urn", "in": "path", "required": True, "schema": {"type": "string"}}],
    "responses": {"200": {"description": "{value: {<...>Snapshot: {urn, aspects}}}"},
                  "400": {"description": "A malformed URN, or an entity type without a snapshot form"},
                  "403": {"description": "No READ privilege on the entity"},
                  "404": {"description": "Nothing stored for the entity"}}}}}


def add_routes(app: web.Application) -> None:
    app[FORMS_KEY] = snapshot_forms(app[GMS_KEY].gms.registry)
    app.router.add_get("/entities/{urn}", get_snapshot)
