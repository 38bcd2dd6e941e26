"""Webhook routes (`/v1/webhooks`): register, list, read, rotate the secret of and remove webhooks,
and list each one's dead letters. Every route needs ADMIN on the instance (see lodestar.webhooks).
A secret is in the answer of the request that set it (registering, rotating) and in no other.
When the app starts, secrets still held by registrations are moved into the secret store
(`Webhooks.upgrade`). A URL must be http(s) and point to addresses the app's address rules
allow (`ADDRESSES_KEY`, lodestar.webhook_addresses), else 400."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gms.access.admin import AccessAdmin
from gms.errors import ProposalFailed
from lodestar.api.context import GMS_KEY, api_of, error, principal_of, read_json
from lodestar.api.limits import bool_param
from lodestar.webhook_addresses import AddressRules
from lodestar.webhooks import MAX_GRACE_SECONDS, WebhookError, Webhooks

log = logging.getLogger(__name__)
ADDRESSES_KEY = web.AppKey("webhook_addresses", AddressRules)  # set by create_app


async def _answer(request: web.Request, fn: Callable[[Webhooks, str], Any], status: int = 200) -> web.Response:
    api = api_of(request)

    def call(actor: str) -> Any:
        AccessAdmin(api.gms).require_admin(actor)  # first: a refused caller learns nothing of the webhooks
        hooks = Webhooks(api.gms, addresses=request.app[ADDRESSES_KEY])
        return fn(hooks, actor)  # on the writer thread: opening the secret store may take a while

    try:
        return web.json_response(await api.run(call, principal_of(request)), status=status)
    except WebhookError as err:
        return error(err.status, "not_found" if err.status == 404 else "invalid_webhook", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)


async def register(request: web.Request) -> web.Response:
    body = await read_json(request)
    return await _answer(request, lambda hooks, actor: hooks.register(actor, body).to_json(), 201)


async def rotate_secret(request: web.Request) -> web.Response:
    body = await read_json(request)
    return await _answer(request, lambda hooks, actor: hooks.rotate(actor, request.match_info["id"], body).to_json())


async def list_webhooks(request: web.Request) -> web.Response:
    return await _answer(request, lambda hooks, _: {"webhooks": [hook.to_json() for hook in hooks.all()]})


async def get_webhook(request: web.Request) -> web.Response:
    return await _answer(request, lambda hooks, _: hooks.get(request.match_info["id"]).to_json())


async def remove_webhook(request: web.Request) -> web.Response:
    hard = bool_param(request, "hard")

    def remove(hooks: Webhooks, actor: str) -> dict[str, Any]:
        hooks.remove(actor, request.match_info["id"], hard)
        return {"removed": request.match_info["id"], "hard": hard}
    return await _answer(request, remove)


async def dead_letters(request: web.Request) -> web.Response:
    timeseries = api_of(request).read_models.timeseries
    return await _answer(request, lambda hooks, _: {
        "deadLetters": hooks.dead_letters(timeseries, request.match_info["id"])})


_JSON = "application/json"
_ANSWER = {"description": "The answer", "content": {_JSON: {"schema": {"type": "object"}}}}
_REFUSED = {"403": {"description": "The caller has no ADMIN privilege on the instance"},
            "404": {"description": "No such webhook"}}
_NAMES = {"type": "array", "items": {"type": "string"}}
OPENAPI_PATHS: dict[str, Any] = {  # for /openapi.json
    "/v1/webhooks": {
        "post": {"summary": "Register a webhook (changes logged from now on, matching its filters, are POSTed to url)",
                 "requestBody": {"required": True, "content": {_JSON: {"schema": {
                     "type": "object", "required": ["url"], "properties": {
                         "url": {"type": "string", "description": "http(s); its host must resolve to public"
                                 " addresses unless LODESTAR_WEBHOOK_ALLOW_PRIVATE allows others"},
                         "secret": {"type": "string"}, "entityTypes": _NAMES,
                         "aspects": _NAMES, "changeTypes": _NAMES, "urnPattern": {"type": "string"},
                         "description": {"type": "string"}}}}}},
                 "responses": {"201": _ANSWER, "400": {"description": "An invalid body or a refused URL"},
                               **_REFUSED}},
        "get": {"summary": "The registered webhooks (without secrets)", "responses": {"200": _ANSWER, **_REFUSED}}},
    "/v1/webhooks/{id}": {
        "get": {"summary": "One webhook (without its secret)", "responses": {"200": _ANSWER, **_REFUSED}},
        "delete": {"summary": "Remove a webhook and its secrets (hard: its versions too)",
                   "parameters": [{"name": "hard", "in": "query", "schema": {"type": "boolean", "default": False},
                                   "description": "Purge the registration's versions as well"}],
                   "responses": {"200": _ANSWER, "400": {"description": "hard is not true or false"}, **_REFUSED}}},
    "/v1/webhooks/{id}/rotate": {
        "post": {"summary": "Give the webhook a new secret, shown in this answer only; the secrets valid until now"
                            " keep signing deliveries beside it for graceSeconds at most",
                 "requestBody": {"required": True, "content": {_JSON: {"schema": {
                     "type": "object", "required": ["graceSeconds"], "properties": {
                         "graceSeconds": {"type": "number", "minimum": 0, "maximum": MAX_GRACE_SECONDS},
                         "secret": {"type": "string"}}}}}},
                 "responses": {"200": _ANSWER, "400": {"description": "An invalid body"}, **_REFUSED,
                               "412": {"description": "The webhook changed meanwhile (rotated again): retry"}}}},
    "/v1/webhooks/{id}/dead-letters": {
        "get": {"summary": "Changes the webhook's URL did not accept after the last retry",
                "responses": {"200": _ANSWER, **_REFUSED}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/webhooks", register)
    app.router.add_get("/v1/webhooks", list_webhooks)
    app.router.add_get("/v1/webhooks/{id}", get_webhook)
    app.router.add_delete("/v1/webhooks/{id}", remove_webhook)
    app.router.add_post("/v1/webhooks/{id}/rotate", rotate_secret)
    app.router.add_get("/v1/webhooks/{id}/dead-letters", dead_letters)
    app.on_startup.append(_upgrade)


async def _upgrade(app: web.Application) -> None:
    """Move secrets still held by registrations into the secret store (a failure is logged: the
    dispatcher tries again when it starts)."""
    api = app[GMS_KEY]
    try:
        moved = await api.run(lambda: Webhooks(api.gms).upgrade())
    except Exception:
        log.exception("webhooks: secrets held by registrations not moved into the secret store")
        return
    if moved:
        log.warning("webhooks: moved the secrets of %d webhook(s) out of their webhookInfo aspect into the secret"
                    " store; their earlier versions still hold them: rotate them (docs/subscriptions.md)", moved)
