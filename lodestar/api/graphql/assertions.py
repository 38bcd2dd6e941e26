"""Custom assertions as DataHub's GraphQL API manages them (assertions.graphql): a check that a
platform other than Lodestar runs on a dataset, made or replaced by `upsertCustomAssertion`
(its assertionInfo, type CUSTOM, source EXTERNAL, and its dataPlatformInstance) and given
results by `reportAssertionResult` (assertionRunEvent points), each through GMS as the caller.
A dataset's assertions are found by the search index's `entity` field (assertionInfo.entityUrn),
those deleted since it indexed them left out; an assertion's results are read from the
timeseries read model, newest first."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from ingest.proposal import Proposal
from lodestar.api.datahub_reads import newest
from lodestar.api.graphql.edits import existing, stamp, write
from lodestar.api.graphql.entities import Context, EntityRef, entity_type_of
from lodestar.api.graphql.listing import page_bounds

INFO, RUN_EVENT = "assertionInfo", "assertionRunEvent"
MAX_ASSERTIONS = 10_000  # assertions of one dataset read
MAX_RUN_EVENTS = 1000  # results one runEvents reads


def _entries(mapping: Any) -> list[dict[str, Any]] | None:
    return [{"key": k, "value": v} for k, v in mapping.items()] if isinstance(mapping, dict) else None


def _platform(given: Mapping[str, Any]) -> str:
    platform = given.get("platform") or {}
    if platform.get("urn"):
        if entity_type_of(platform["urn"]) != "dataPlatform":
            raise GraphQLError(f"input.platform.urn: {platform['urn']!r} is not a dataPlatform URN",
                               extensions={"code": 400})
        return platform["urn"]
    if platform.get("name"):
        return f"urn:li:dataPlatform:{platform['name']}"
    raise GraphQLError("input.platform: a urn or a name is required", extensions={"code": 400})


def _custom(given: Mapping[str, Any], entity: str) -> dict[str, Any]:
    custom: dict[str, Any] = {"type": given["type"], "entity": entity}
    if given.get("fieldPath"):
        custom["field"] = f"urn:li:schemaField:({entity},{given['fieldPath']})"
    if given.get("fieldPaths"):
        custom["fields"] = [f"urn:li:schemaField:({entity},{path})" for path in given["fieldPaths"]]
    for name in ("logic", "scope", "aggregation", "operator", "parameters", "nativeType"):
        if given.get(name) is not None:
            custom[name] = given[name]
    if given.get("nativeParameters"):
        custom["nativeParameters"] = {e["key"]: e.get("value") or "" for e in given["nativeParameters"]}
    return custom


def upsert_custom_assertion(ctx: Context, urn: str | None, given: Mapping[str, Any]) -> EntityRef:
    entity = existing(ctx, given["entityUrn"], "input.entityUrn", ("dataset",))
    platform = _platform(given)
    if urn is None:
        urn = f"urn:li:assertion:{uuid.uuid4()}"
    elif entity_type_of(urn) != "assertion":
        raise GraphQLError(f"urn: {urn!r} is not an assertion URN", extensions={"code": 400})
    current = ctx.aspect(urn, INFO)
    if current is not None and current.get("type") != "CUSTOM":
        raise GraphQLError(f"urn: {urn} is a {current.get('type')} assertion, not a custom one",
                           extensions={"code": 400})
    now = stamp(ctx)
    info: dict[str, Any] = {"type": "CUSTOM", "customAssertion": _custom(given, entity), "entityUrn": entity,
                            "description": given["description"], "lastUpdated": now,
                            "source": (current or {}).get("source") or {"type": "EXTERNAL", "created": now}}
    if given.get("externalUrl") is not None:
        info["externalUrl"] = given["externalUrl"]
    write(ctx, Proposal("assertion", urn, "UPSERT", "dataPlatformInstance", {"platform": platform}))
    write(ctx, Proposal("assertion", urn, "UPSERT", INFO, info))
    return EntityRef(urn)


def report_result(ctx: Context, urn: str, given: Mapping[str, Any]) -> bool:
    info = ctx.aspect(existing(ctx, urn, "urn", ("assertion",)), INFO) or {}
    assertee = info.get("entityUrn") or (info.get("customAssertion") or {}).get("entity")
    if not isinstance(assertee, str):
        raise GraphQLError(f"urn: {urn} names no entity it asserts about (no assertionInfo)", extensions={"code": 400})
    at = given.get("timestampMillis")
    at = int(time.time() * 1000) if at is None else at
    result: dict[str, Any] = {"type": given["type"]}
    if given.get("properties"):
        result["nativeResults"] = {e["key"]: e.get("value") or "" for e in given["properties"]}
    if given.get("externalUrl") is not None:
        result["externalUrl"] = given["externalUrl"]
    if given.get("severity") is not None:
        result["severity"] = given["severity"]
    if given.get("error") is not None:
        result["error"] = {"type": given["error"]["type"], "properties": {"message": given["error"]["message"]}}
    write(ctx, Proposal("assertion", urn, "UPSERT", RUN_EVENT, {
        "timestampMillis": at, "runId": str(at), "asserteeUrn": assertee, "assertionUrn": urn, "status": "COMPLETE",
        "result": result}))
    return True


def assertions_of(r: EntityRef, ctx: Context, search: Callable[..., dict[str, Any]], start: int | None = None,
                  count: int | None = None) -> dict[str, Any]:
    """A page of the assertions about the dataset, by URN."""
    first, size = page_bounds({"start": start, "count": count})
    found = search(ctx, {"query": "*", "start": 0, "count": MAX_ASSERTIONS, "types": ["ASSERTION"],
                         "filters": [{"field": "entity", "values": [r.urn], "condition": "EQUAL"}],
                         "sortInput": {"sortCriterion": {"field": "urn", "sortOrder": "ASCENDING"}},
                         "searchFlags": {"skipAggregates": True}})
    live = [hit["entity"] for hit in found["searchResults"] if ctx.aspect(hit["entity"].urn, INFO) is not None]
    page = live[first:first + size]
    return {"start": first, "count": len(page), "total": len(live), "assertions": page}


def _run_event(point: Mapping[str, Any]) -> dict[str, Any]:
    result = point.get("result")
    if isinstance(result, dict):
        error = result.get("error")
        result = {**result, "nativeResults": _entries(result.get("nativeResults")),
                  "error": {**error, "properties": _entries(error.get("properties"))} if isinstance(error, dict)
                  else None}
    return {**point, "result": result}


def run_events(r: EntityRef, ctx: Context, status: str | None = None, startTimeMillis: int | None = None,
               endTimeMillis: int | None = None, limit: int | None = None) -> dict[str, Any] | None:
    """The assertion's newest results and how many of them succeeded, failed and errored."""
    if not ctx.may_read(r.urn):
        return None
    keep = 1 if limit is None else limit
    if not 0 <= keep <= MAX_RUN_EVENTS:
        raise GraphQLError(f"limit: must be from 0 to {MAX_RUN_EVENTS}", extensions={"code": 400})
    clauses = [[{"field": "status", "condition": "EQUAL", "value": status}]] if status else [[]]
    points = newest(ctx.api.read_models.timeseries, r.urn, RUN_EVENT, startTimeMillis, endTimeMillis, keep, clauses)
    events = [_run_event(p) for p in points if isinstance(p, dict)]
    types = [(e.get("result") or {}).get("type") for e in events]
    return {"total": len(events), "succeeded": types.count("SUCCESS"), "failed": types.count("FAILURE"),
            "errored": types.count("ERROR"), "runEvents": events}


def assertion_info(r: EntityRef, ctx: Context) -> dict[str, Any] | None:
    """The assertionInfo aspect as GraphQL shows it (a custom assertion's entity and field by name)."""
    info = ctx.aspect(r.urn, INFO)
    if info is None:
        return None
    custom = info.get("customAssertion")
    if isinstance(custom, dict):
        field = custom.get("field")
        path = field.rsplit(",", 1)[-1].removesuffix(")") if isinstance(field, str) else None
        custom = {**custom, "entityUrn": custom.get("entity"),
                  "field": {"urn": field, "path": path} if path is not None else None}
    return {**info, "customAssertion": custom}


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "upsertCustomAssertion": lambda ctx, args: upsert_custom_assertion(ctx, args.get("urn"), args["input"]),
    "reportAssertionResult": lambda ctx, args: report_result(ctx, args["urn"], args["result"]),
}
