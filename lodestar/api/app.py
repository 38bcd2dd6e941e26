"""The aiohttp application: authentication, JSON errors, and the route modules it assembles
(their routes, and their paths in /openapi.json)."""

from __future__ import annotations

import logging

from aiohttp import web

from gms.access import PrincipalDisabled
from gms.service import Gms
from lodestar.api import (
    access,
    audit_events,
    datahub,
    datahub_openapi,
    datahub_reads,
    datahub_restli_relationships,
    datahub_scroll,
    datahub_snapshot,
    field_lineage_v3,
    graphql,
    guards,
    metadata_search,
    metadata_v3,
    native,
    observe,
    openapi,
    openlineage,
    reads,
    run_lineage,
    schema_registry,
    security_headers,
    sign_in,
    ui,
    webhooks,
)
from lodestar.api.auth import TokenAuth
from lodestar.api.context import (
    GMS_KEY,
    LIMIT_KEY,
    PRINCIPAL_KEY,
    PUBLIC_PATHS,
    UI_FILES,
    Api,
    Handler,
    RouteModule,
    api_of,
    error,
)
from lodestar.api.limits import max_json_items
from lodestar.api.writers import WriterThreads
from lodestar.webhook_addresses import AddressRules
from mcl_processor.processor import MclProcessor
from mcl_processor.readmodels import ReadModels

log = logging.getLogger(__name__)

# Each adds its routes (`add_routes`) and declares their OpenAPI paths (`OPENAPI_PATHS`).
ROUTE_MODULES: tuple[RouteModule, ...] = (
    native, reads, datahub, datahub_reads, metadata_v3, metadata_search, access, openapi, guards, observe, ui,
    run_lineage, field_lineage_v3, openlineage, webhooks, graphql, schema_registry, sign_in,
    datahub_snapshot, datahub_openapi, datahub_scroll, datahub_restli_relationships, audit_events)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        if exc.status == 413:
            return error(413, "too_large", f"request body over the limit of {request.app[LIMIT_KEY]} bytes")
        return error(exc.status, exc.reason.lower().replace(" ", "_"), exc.text or exc.reason)
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error(500, "internal_error", "internal error; see the server log")


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path in PUBLIC_PATHS or request.path == "/" or request.path.startswith(UI_FILES) \
            or request.path in sign_in.PUBLIC \
            or schema_registry.is_public(request):  # registry reads need no token, as DataHub's
        return await handler(request)
    try:
        principal = api_of(request).auth.principal(sign_in.session_authorization(request))
    except PrincipalDisabled as refused:
        return error(403, "principal_disabled", str(refused))
    if principal is None:
        return error(401, "unauthorized", "missing or invalid bearer token (Authorization: Bearer <token>)",
                     headers={"WWW-Authenticate": "Bearer"})
    request[PRINCIPAL_KEY] = principal
    return await handler(request)


def create_app(gms: Gms, auth: TokenAuth, read_models: ReadModels, processor: MclProcessor | None = None,
               yielding_niceness: int = 0, webhook_addresses: AddressRules | None = None) -> web.Application:
    """The HTTP app. `yielding_niceness`: how much lower the CPU priority of the writes is while
    the MCL processor lags past half its limit (`WriterThreads`; 0: the same). `webhook_addresses`:
    where webhook URLs may point (default: public addresses only)."""
    app = web.Application(middlewares=[observe.traced, json_errors, guards.unavailable, authenticate, guards.throttle],
                          client_max_size=gms.limits.max_request_bytes)
    app[LIMIT_KEY] = gms.limits.max_request_bytes
    app[webhooks.ADDRESSES_KEY] = webhook_addresses or AddressRules()
    app[GMS_KEY] = Api(gms, auth, read_models, processor,
                       WriterThreads(yielding_niceness, lambda: app[guards.GUARDS_KEY].indexing_first()),
                       max_json_items())
    auth.lookup = gms.access.token_principal  # tokens created through /v1/access
    app[openapi.DOCUMENT_KEY] = openapi.document(ROUTE_MODULES)
    security_headers.install(app)
    for module in ROUTE_MODULES:
        module.add_routes(app)

    async def shutdown(app: web.Application) -> None:
        app[GMS_KEY].writers.shutdown()

    app.on_cleanup.append(shutdown)
    return app
