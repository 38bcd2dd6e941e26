"""Managed ingestion as DataHub's GraphQL API shows it (ingestion.graphql): ingestion sources
(`dataHubIngestionSource` entities, their dataHubIngestionSourceInfo aspect) made, read, listed,
changed and deleted, and requests to run one (`dataHubExecutionRequest` entities, their
dataHubExecutionRequestInput aspect) recorded and read. Lodestar runs no ingestion: a request's
result stays null until an executor writes its dataHubExecutionRequestResult aspect.

Every operation needs ADMIN on the instance (a recipe may hold credentials); each change is one
proposal through GMS as the caller, validated against DataHub's schema of the aspect."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import Proposal
from lodestar.api.graphql.edits import write
from lodestar.api.graphql.entities import Context, EntityRef, ownership, ref
from lodestar.api.graphql.listing import page_bounds, require_admin, urns_of_type
from lodestar.api.limits import MAX_COUNT

SOURCE, REQUEST = "dataHubIngestionSource", "dataHubExecutionRequest"
SOURCE_INFO, REQUEST_INPUT, REQUEST_RESULT = ("dataHubIngestionSourceInfo", "dataHubExecutionRequestInput",
                                              "dataHubExecutionRequestResult")
RUN_INGEST = "RUN_INGEST"
MANUAL = "MANUAL_INGESTION_SOURCE"  # a request made by a person, not by the source's schedule
MAX_EXECUTIONS = MAX_COUNT  # execution requests of one source read to order them
# a request's arguments are shown in the order DataHub writes them (a stored map keeps no order), then the others
ARGUMENT_ORDER = ("recipe", "version", "debug_mode")


def _entries(mapping: Any) -> list[dict[str, Any]] | None:
    return [{"key": k, "value": v} for k, v in mapping.items()] if isinstance(mapping, dict) else None


def _arguments(args: Any) -> list[dict[str, Any]] | None:
    if not isinstance(args, dict):
        return None
    rank = {name: i for i, name in enumerate(ARGUMENT_ORDER)}
    return _entries(dict(sorted(args.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))))


def _stored(ctx: Context, urn: Any, entity_type: str, what: str) -> dict[str, Any] | None:
    """The entity's aspects, None when nothing is stored; an error for a URN of another type."""
    require_admin(ctx, what)
    if not isinstance(urn, str) or not urn.startswith(f"urn:li:{entity_type}:"):
        raise GraphQLError(f"urn: {urn!r} is not a {entity_type} URN", extensions={"code": 400})
    return ctx.aspects(urn) or None


def _source_info(given: Mapping[str, Any]) -> dict[str, Any]:
    config = given["config"]
    try:
        recipe = json.loads(config["recipe"])
    except ValueError:
        recipe = None
    if not isinstance(recipe, dict):
        raise GraphQLError("input.config.recipe: must be a JSON object", extensions={"code": 400})
    kept: dict[str, Any] = {"recipe": config["recipe"], "executorId": config["executorId"]}
    if config.get("version") is not None:
        kept["version"] = config["version"]
    if config.get("debugMode") is not None:
        kept["debugMode"] = config["debugMode"]
    if config.get("extraArgs"):
        kept["extraArgs"] = {e["key"]: e.get("value") or "" for e in config["extraArgs"]}
    info: dict[str, Any] = {"name": given["name"], "type": given["type"], "config": kept}
    if given.get("schedule") is not None:
        info["schedule"] = {"interval": given["schedule"]["interval"], "timezone": given["schedule"]["timezone"]}
    return info


def create_source(ctx: Context, given: Mapping[str, Any]) -> str:
    require_admin(ctx, "createIngestionSource")
    urn = f"urn:li:{SOURCE}:{uuid.uuid4()}"
    write(ctx, Proposal(SOURCE, urn, "CREATE_ENTITY", SOURCE_INFO, _source_info(given)))
    return urn


def update_source(ctx: Context, urn: str, given: Mapping[str, Any]) -> str:
    if _stored(ctx, urn, SOURCE, "updateIngestionSource") is None:
        raise GraphQLError(f"urn: {urn} does not exist", extensions={"code": 404})
    write(ctx, Proposal(SOURCE, urn, "UPSERT", SOURCE_INFO, _source_info(given)))
    return urn


def delete_source(ctx: Context, urn: str) -> str:
    if _stored(ctx, urn, SOURCE, "deleteIngestionSource") is None:
        raise GraphQLError(f"urn: {urn} does not exist", extensions={"code": 404})
    write(ctx, Proposal(SOURCE, urn, "DELETE", "dataHubIngestionSourceKey"))
    return urn


def _executions(ctx: Context, urn: str, start: int | None = None, count: int | None = None) -> dict[str, Any]:
    """A page of the source's execution requests, newest first."""
    first, size = page_bounds({"start": start, "count": count}, 10)
    total, urns = urns_of_type(ctx, REQUEST, {}, 0, MAX_EXECUTIONS,
                               [{"field": "ingestionSource", "values": [urn], "condition": "EQUAL"}])
    if total > MAX_EXECUTIONS:
        raise GraphQLError(f"executions: the source has more than {MAX_EXECUTIONS} execution requests",
                           extensions={"code": 400})

    def requested_at(request: str) -> int:
        at = (ctx.aspect(request, REQUEST_INPUT) or {}).get("requestedAt")
        return at if isinstance(at, int) else 0
    page = sorted(urns, key=lambda u: (requested_at(u), u), reverse=True)[first:first + size]
    return {"start": first, "count": len(page), "total": total,
            "executionRequests": [request for u in page if (request := _request(ctx, u)) is not None]}


def _source(ctx: Context, urn: str) -> dict[str, Any] | None:
    info = ctx.aspect(urn, SOURCE_INFO)
    if info is None:
        return None
    config = info.get("config") or {}
    return {"urn": urn, "type": info.get("type"), "name": info.get("name"), "schedule": info.get("schedule"),
            "platform": ref(info.get("platform")),
            "config": {**config, "executorId": config.get("executorId") or "default",
                       "extraArgs": _entries(config.get("extraArgs"))},
            "executions": lambda start=None, count=None: _executions(ctx, urn, start, count),
            "ownership": lambda: ownership(urn, ctx.aspect(urn, "ownership"))}


def _request(ctx: Context, urn: str) -> dict[str, Any] | None:
    given = ctx.aspect(urn, REQUEST_INPUT)
    if given is None:
        return None
    source = given.get("source") or {}
    actor = given.get("actorUrn")
    result = ctx.aspect(urn, REQUEST_RESULT)
    return {"urn": urn, "type": "EXECUTION_REQUEST", "id": urn.removeprefix(f"urn:li:{REQUEST}:"),
            "input": {**given, "source": source, "arguments": _arguments(given.get("args")),
                      "actor": EntityRef(actor) if isinstance(actor, str) and actor.startswith("urn:li:corpuser:")
                      else None},
            "result": result,
            "source": lambda: _source(ctx, source["ingestionSource"]) if source.get("ingestionSource") else None}


def ingestion_source(ctx: Context, urn: str) -> dict[str, Any] | None:
    return _source(ctx, urn) if _stored(ctx, urn, SOURCE, "ingestionSource") is not None else None


def execution_request(ctx: Context, urn: str) -> dict[str, Any] | None:
    return _request(ctx, urn) if _stored(ctx, urn, REQUEST, "executionRequest") is not None else None


def list_sources(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    require_admin(ctx, "listIngestionSources")
    if given.get("sort"):
        raise GraphQLError("input.sort: ingestion sources are listed by name; sort is not supported",
                           extensions={"code": 400})
    start, count = page_bounds(given)
    total, urns = urns_of_type(ctx, SOURCE, given, start, count)
    sources = [source for u in urns if (source := _source(ctx, u)) is not None]
    return {"start": start, "count": len(sources), "total": total, "ingestionSources": sources}


def create_execution_request(ctx: Context, given: Mapping[str, Any]) -> str:
    """Records a request to run the source now with its recipe, version and debug mode."""
    source_urn = given["ingestionSourceUrn"]
    if _stored(ctx, source_urn, SOURCE, "createIngestionExecutionRequest") is None:
        raise GraphQLError(f"input.ingestionSourceUrn: {source_urn} does not exist", extensions={"code": 404})
    config = (ctx.aspect(source_urn, SOURCE_INFO) or {}).get("config") or {}
    args = {"recipe": config.get("recipe") or "{}"}
    if config.get("version"):
        args["version"] = config["version"]
    args["debug_mode"] = "true" if config.get("debugMode") else "false"
    urn = f"urn:li:{REQUEST}:{uuid.uuid4()}"
    write(ctx, Proposal(REQUEST, urn, "CREATE_ENTITY", REQUEST_INPUT, {
        "task": RUN_INGEST, "args": args, "executorId": config.get("executorId") or "default",
        "source": {"type": MANUAL, "ingestionSource": source_urn}, "requestedAt": int(time.time() * 1000),
        "actorUrn": principal_urn(ctx.principal)}))
    return urn


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "listIngestionSources": lambda ctx, args: list_sources(ctx, args["input"]),
    "ingestionSource": lambda ctx, args: ingestion_source(ctx, args["urn"]),
    "executionRequest": lambda ctx, args: execution_request(ctx, args["urn"]),
    "createIngestionSource": lambda ctx, args: create_source(ctx, args["input"]),
    "updateIngestionSource": lambda ctx, args: update_source(ctx, args["urn"], args["input"]),
    "deleteIngestionSource": lambda ctx, args: delete_source(ctx, args["urn"]),
    "createIngestionExecutionRequest": lambda ctx, args: create_execution_request(ctx, args["input"]),
}
