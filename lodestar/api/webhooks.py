"""Webhook routes (`/v1/webhooks`): register, list, read and remove webhooks, and list each
one's dead letters. Every route needs ADMIN on the instance (see lodestar.webhooks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from gms.access.admin import AccessAdmin
from gms.errors import ProposalFailed
from lodestar.api.context import api_of, error, principal_of, read_json
from lodestar.webhooks import WebhookError, Webhooks


async def _answer(request: web.Request, fn: Callable[[Webhooks, str], Any], status: int = 200) -> web.Response:
    api = api_of(request)
    webhooks = Webhooks(api.gms)

    def call(actor: str) -> Any:
        AccessAdmin(api.gms).require_admin(actor)  # first: a refused caller learns nothing of the webhooks
        return fn(webhooks, actor)

    try:
        return web.json_response(await api.run(call, principal_of(request)), status=status)
    except WebhookError as err:
        return error(err.status, "not_found" if err.status == 404 else "invalid_webhook", str(err))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)


async def register(request: web.Request) -> web.Response:
    body = await read_json(request)
    return await _answer(request, lambda hooks, actor: hooks.register(actor, body).to_json(with_secret=True), 201)


async def list_webhooks(request: web.Request) -> web.Response:
    return await _answer(request, lambda hooks, _: {"webhooks": [hook.to_json() for hook in hooks.all()]})


async def get_webhook(request: web.Request) -> web.Response:
    return await _answer(request, lambda hooks, _: hooks.get(request.match_info["id"]).to_json())


async def remove_webhook(request: web.Request) -> web.Response:
    def remove(hooks: Webhooks, actor: str) -> dict[str, str]:
        hooks.remove(actor, request.match_info["id"])
        return {"removed": request.match_info["id"]}
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
                         "url": {"type": "string"}, "secret": {"type": "string"}, "entityTypes": _NAMES,
                         "aspects": _NAMES, "changeTypes": _NAMES, "urnPattern": {"type": "string"},
                         "description": {"type": "string"}}}}}},
                 "responses": {"201": _ANSWER, **_REFUSED}},
        "get": {"summary": "The registered webhooks (without secrets)", "responses": {"200": _ANSWER, **_REFUSED}}},
    "/v1/webhooks/{id}": {
        "get": {"summary": "One webhook (without its secret)", "responses": {"200": _ANSWER, **_REFUSED}},
        "delete": {"summary": "Remove a webhook", "responses": {"200": _ANSWER, **_REFUSED}}},
    "/v1/webhooks/{id}/dead-letters": {
        "get": {"summary": "Changes the webhook's URL did not accept after the last retry",
                "responses": {"200": _ANSWER, **_REFUSED}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/webhooks", register)
    app.router.add_get("/v1/webhooks", list_webhooks)
    app.router.add_get("/v1/webhooks/{id}", get_webhook)
    app.router.add_delete("/v1/webhooks/{id}", remove_webhook)
    app.router.add_get("/v1/webhooks/{id}/dead-letters", dead_letters)
