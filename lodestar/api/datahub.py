"""DataHub's Rest.li write routes, so DataHub's unmodified clients (`DatahubRestEmitter`,
`DataHubGraph`, the `datahub` CLI and its ingestion sink) work:

- `GET /config`: what Lodestar supports, in the keys DataHub's clients read;
- `POST /aspects?action=ingestProposal|ingestProposalBatch`: proposals, applied (`async` false)
  or queued on the MCP topic (`async` true);
- `POST /entities?action=delete|ingest`: a hard delete of an entity, or of a timeseries aspect's
  points in a time window; an MCE (a snapshot: one proposal per aspect);
- `POST /usageStats?action=batchIngest`: usage buckets as `datasetUsageStatistics` points;
- `POST /runs?action=list|describe|rollback`: ingestion runs, from the runIds the aspect
  store keeps (gms/runs.py);

each also with a trailing slash (`/aspects/?action=...`, as `datahub put` sends it).

A request's proposals are checked first, all of them (parse, registry, schema, size,
authorization): if any fails, none is applied or queued and the request fails with the first
failure's status (400, 403, 413) and a message naming every failing proposal (DataHub's emitter
raises with that message; its ingestion sink reports the batch as failed). What fails only
against the stored state (a precondition, 412; a conflict, 409) fails alone: the others of a
synchronous batch are applied, and the answer is that failure's status with a message saying
which failed and that the others were applied, and `results`, one per proposal. Queued proposals
that fail when applied land on `FailedMetadataChangeProposal_v1` (`lodestar failed` lists them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from gms.access import REMOVE
from gms.errors import ProposalFailed
from gms.runs import IngestionRuns, RollbackFailed
from gms.service import Gms
from gms.write_path import Result
from ingest.files import ProposalFileError, proposals_of_snapshot
from ingest.proposal import Proposal, ProposalError
from lodestar.api import datahub_reads
from lodestar.api.access import readable, require
from lodestar.api.context import api_of, error, principal_of, query_route, read_json
from lodestar.api.native import conditional_headers, parse_all
from lodestar.api.openapi import ERROR_OR_RESULTS, OBJECT, query_param, response
from schemas.datahub_model import datahub_client_version
from schemas.metadata_entity import INSTANCE

CHECKPOINT_ASPECT = "datahubIngestionCheckpoint"
USAGE_ASPECT = "datasetUsageStatistics"
MAX_LISTED = 10  # failing proposals a message names (the answer's results name them all)
QUERY_ACTIONS = frozenset({"getTimeseriesAspectValues", "getCount", "search", "listUrns", "list", "describe"})


async def config(request: web.Request) -> web.Response:
    # No "versions" key: DataHub's emitter then keeps to the Rest.li endpoints below.
    checkpoint = api_of(request).gms.registry.aspect(CHECKPOINT_ASPECT)
    # stateful ingestion reads its checkpoints back with getTimeseriesAspectValues (datahub_reads.py)
    stateful = checkpoint is not None and checkpoint.is_timeseries \
        and "getTimeseriesAspectValues" in datahub_reads.ASPECT_ACTIONS
    return web.json_response({
        "noCode": "true", "product": "lodestar", "statefulIngestionCapable": stateful, "patchCapable": True,
        "supportsImpactAnalysis": False, "retention": "false", "timeZone": "GMT",
        "telemetry": {"enabledCli": False, "enabledIngestion": False},
        "managedIngestion": {"enabled": False, "defaultCliVersion": datahub_client_version()},
        "datahub": {"serverType": "lodestar"}})


def _is_async(body: dict[str, Any]) -> bool:
    return str(body.get("async", "false")).lower() == "true"


def _describe(proposal: Proposal | ProposalError) -> str:
    if isinstance(proposal, ProposalError):
        return "(unreadable)"
    return f"({proposal.entity_urn} {proposal.aspect_name})"


def failure_response(parsed: Sequence[Proposal | ProposalError], results: Sequence[Result],
                      what: str = "applied") -> web.Response:
    """A request some of whose proposals failed: the first failure's status; a message naming
    the failures (DataHub's clients show `message`) and what became of the others; `results`."""
    failures = [(i, r.failure) for i, r in enumerate(results) if r.failure is not None]
    first = failures[0][1]
    assert first is not None
    if len(results) == 1:
        return error(first.http_status, first.code, first.message, **_extra(first))
    listing = "; ".join(f"proposal {i} {_describe(parsed[i])}: {f.message}" for i, f in failures[:MAX_LISTED])
    more = f"; and {len(failures) - MAX_LISTED} more" if len(failures) > MAX_LISTED else ""
    if any(r.status == "skipped" for r in results):
        outcome = f"none was {what}"
    else:
        outcome = f"the other {len(results) - len(failures)} were {what}"
    return error(first.http_status, first.code,
                 f"{len(failures)} of {len(results)} proposals failed, {outcome}: {listing}{more}",
                 results=[r.to_json() for r in results])


def _extra(failure: ProposalFailed) -> dict[str, Any]:
    return {"expected": failure.expected, "actual": failure.actual} if failure.expected is not None else {}


async def aspects(request: web.Request) -> web.Response:
    action = request.query.get("action")
    if action in datahub_reads.ASPECT_ACTIONS:  # reads: getTimeseriesAspectValues, getCount
        return await datahub_reads.aspect_action(request)
    body = await read_json(request)
    if not isinstance(body, dict):
        return error(400, "invalid_request", "body must be a JSON object")
    if action == "ingestProposal":
        items = [body.get("proposal")]
    elif action == "ingestProposalBatch":
        items = body.get("proposals")
        if not isinstance(items, list):
            return error(400, "invalid_request", 'ingestProposalBatch needs {"proposals": [...]}')
    else:
        return error(400, "unknown_action", f"unknown action {action!r} (ingestProposal, ingestProposalBatch)")
    api = api_of(request)
    if len(items) > api.gms.limits.max_batch:
        return error(413, "too_large", f"{len(items)} proposals, over the limit of {api.gms.limits.max_batch}")
    parsed = parse_all(items)
    urns = [p.entity_urn if isinstance(p, Proposal) else None for p in parsed]
    value = urns[0] if action == "ingestProposal" else urns
    if _is_async(body):
        return await _queue(request, parsed, value)
    results = await api.apply(parsed, principal_of(request), conditional_headers(request), all_or_none=True)
    if any(r.failure is not None for r in results):
        return failure_response(parsed, results)
    return web.json_response({"value": value})


async def _queue(request: web.Request, parsed: list[Proposal | ProposalError], value: Any) -> web.Response:
    return await queue_all(request, parsed) or web.json_response({"value": value}, status=202)


async def queue_all(request: web.Request, parsed: list[Proposal | ProposalError]) -> web.Response | None:
    """Check every proposal as it can be checked before it is applied, then queue them all on
    the MCP topic (None), or none (an answer with the first failure's status)."""
    api = api_of(request)
    headers = conditional_headers(request)
    actor = principal_of(request)
    checked = await api.run(api.gms.check, parsed, actor, headers)
    if any(isinstance(item, ProposalFailed) for item in checked):
        results = [Result("failed", failure=item) if isinstance(item, ProposalFailed) else Result("skipped")
                   for item in checked]
        return failure_response(parsed, results, "queued")
    proposals = [p for p in parsed if isinstance(p, Proposal)]
    for proposal in proposals:
        proposal.headers = {**headers, **proposal.headers}
    await api.run(api.gms.enqueue, proposals, actor)
    return None


async def entities(request: web.Request) -> web.Response:
    action = request.query.get("action")
    if action in datahub_reads.ENTITY_ACTIONS:  # search, listUrns, deleteReferences
        return await datahub_reads.entity_action(request)
    if action == "deleteAll":  # `datahub delete by-registry`
        return error(400, "unsupported", "deleteAll (datahub delete by-registry): Lodestar has no model registries"
                     " (its model is DataHub's and entity-registry.yml), so no metadata was written under a"
                     " registry id; delete by URN or filter, or roll back an ingestion run")
    if action not in ("delete", "ingest"):
        return error(400, "unknown_action",
                     f"unknown action {action!r} ({', '.join(('delete', 'ingest', *datahub_reads.ENTITY_ACTIONS))})")
    body = await read_json(request)
    if not isinstance(body, dict):
        return error(400, "invalid_request", "body must be a JSON object")
    if action == "ingest":
        return await _ingest_snapshot(request, body)
    urn = body.get("urn")
    if not isinstance(urn, str) or not urn:
        return error(400, "invalid_request", 'delete needs {"urn": "..."}')
    api = api_of(request)
    if api.gms.registry.entity(urn.removeprefix("urn:li:").partition(":")[0]) is None:
        return error(400, "invalid_urn", f"urn: {urn!r} is no URN of a known entity type")
    require(request, REMOVE, urn)
    if body.get("aspectName") is not None:
        return await _delete_points(request, urn, body)
    return await delete_entity(request, urn)


async def delete_entity(request: web.Request, urn: str) -> web.Response:
    """The hard delete of an entity of a known type the caller may REMOVE, answered once indexed:
    `{"value": {"urn", "rows", "timeseriesRows"}}`, or the deletion's failure."""
    api = api_of(request)
    await api.wait_for_index()  # so that the count covers every point written before
    points = await asyncio.to_thread(api.read_models.timeseries.count, urn)
    try:
        rows, result = await api.run(_hard_delete, api.gms, urn, principal_of(request), points > 0)
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)
    if result is not None and result.failure is not None:
        return error(result.http_status, result.failure.code, result.failure.message)
    await api.wait_for_index()
    return web.json_response({"value": {"urn": urn, "rows": rows, "timeseriesRows": points}})


def _hard_delete(gms: Gms, urn: str, actor: str, has_points: bool) -> tuple[int, Result | None]:
    """Delete an entity and purge its versions: (the version rows it had, the deletion's
    result, None when nothing was deleted). Its timeseries points go with its key aspect's
    deletion; an entity with points but no aspects gets a timeseries delete of each aspect."""
    entity = gms.registry.entity(urn.removeprefix("urn:li:").partition(":")[0])
    assert entity is not None
    aspects = [name for name in entity.aspects if not gms.registry.aspect(name).is_timeseries]  # type: ignore[union-attr]
    rows = sum(len(gms.store.history(urn, name)) for name in aspects)
    if gms.store.entity(urn):
        return rows, gms.delete_entity(urn, True, actor, authorize=True)
    if rows:  # deleted before, its history kept: purged now, as a deletion of each aspect it had
        gms.authorize_change(actor, urn, "DELETE", [name for name in aspects if gms.store.history(urn, name)])
        with gms.store.batch() as batch:
            batch.purge(urn)
    if has_points:
        for name in entity.aspects:
            if name not in aspects:
                gms.delete_timeseries(urn, name, None, None, actor)
    return rows, None


async def _delete_points(request: web.Request, urn: str, body: dict[str, Any]) -> web.Response:
    """`{"urn", "aspectName", "startTimeMillis"?, "endTimeMillis"?}`: the points of a timeseries
    aspect in the window (bounds included; absent: open), as a DELETE MCL the MCL processor
    applies; answered once it did, with how many points the read model held in the window."""
    api = api_of(request)
    aspect, start, end = body["aspectName"], body.get("startTimeMillis"), body.get("endTimeMillis")
    if not isinstance(aspect, str) or not all(b is None or (isinstance(b, int) and not isinstance(b, bool))
                                              for b in (start, end)):
        return error(400, "invalid_request", "aspectName must be a string, startTimeMillis and endTimeMillis"
                     " integers (epoch milliseconds)")
    await api.wait_for_index()
    points = await asyncio.to_thread(api.read_models.timeseries.count, urn, aspect, start, end)
    try:
        await api.run(api.gms.delete_timeseries, urn, aspect, start, end, principal_of(request))
    except ProposalFailed as failure:
        return error(failure.http_status, failure.code, failure.message)
    await api.wait_for_index()
    return web.json_response({"value": {"urn": urn, "rows": 0, "timeseriesRows": points}})


async def _apply_all(request: web.Request, items: list[dict[str, Any]]) -> web.Response | None:
    """Apply proposals made from another form (all or none checked first); None when all succeeded."""
    api = api_of(request)
    parsed = parse_all(items)
    results = await api.apply(parsed, principal_of(request), conditional_headers(request), all_or_none=True)
    if any(r.failure is not None for r in results):
        return failure_response(parsed, results)
    return None


async def _ingest_snapshot(request: web.Request, body: dict[str, Any]) -> web.Response:
    """An MCE (`{"entity": {"value": {"<...>Snapshot": {"urn", "aspects"}}}, "systemMetadata"}`),
    applied as one proposal per aspect, as `lodestar ingest` reads MCE files."""
    entity = body.get("entity")
    system_metadata = body.get("systemMetadata")
    try:
        snapshot = entity.get("value") if isinstance(entity, dict) else None
        items = list(proposals_of_snapshot(snapshot, api_of(request).gms.registry, "entity.value",
                                           system_metadata if isinstance(system_metadata, dict) else None))
    except ProposalFileError as err:
        return error(400, "invalid_proposal", str(err))
    if not items:
        return error(400, "invalid_proposal", "entity.value: the snapshot has no aspects")
    return await _apply_all(request, items) or web.json_response({})


async def usage_stats(request: web.Request) -> web.Response:
    """`{"buckets": [UsageAggregation]}`: each bucket a datasetUsageStatistics point of its resource."""
    if request.query.get("action") != "batchIngest":
        return error(400, "unknown_action", f"unknown action {request.query.get('action')!r} (batchIngest)")
    body = await read_json(request)
    buckets = body.get("buckets") if isinstance(body, dict) else None
    if not isinstance(buckets, list) or not buckets:
        return error(400, "invalid_request", 'batchIngest needs {"buckets": [{"bucket", "duration", "resource",'
                     ' "metrics"}, ...]}')
    items = []
    for i, bucket in enumerate(buckets):
        if not isinstance(bucket, dict) or not isinstance(bucket.get("resource"), str) \
                or not isinstance(bucket.get("bucket"), int):
            return error(400, "invalid_request", f"buckets[{i}]: needs resource (a URN) and bucket (epoch millis)")
        resource = bucket["resource"]
        items.append({"entityType": resource.removeprefix("urn:li:").partition(":")[0], "entityUrn": resource,
                      "changeType": "UPSERT", "aspectName": USAGE_ASPECT, "aspect": {"json": usage_point(bucket)}})
    return await _apply_all(request, items) or web.json_response({})


def usage_point(bucket: dict[str, Any]) -> dict[str, Any]:
    """A UsageAggregation bucket as a datasetUsageStatistics value."""
    metrics = bucket.get("metrics") if isinstance(bucket.get("metrics"), dict) else {}
    point: dict[str, Any] = {"timestampMillis": bucket["bucket"]}
    if isinstance(bucket.get("duration"), str):
        point["eventGranularity"] = {"unit": bucket["duration"], "multiple": 1}
    for name in ("uniqueUserCount", "totalSqlQueries", "topSqlQueries"):
        if metrics.get(name) is not None:
            point[name] = metrics[name]
    users = [u for u in metrics.get("users") or [] if isinstance(u, dict) and u.get("user")]
    if users:
        point["userCounts"] = [{"user": u["user"], "count": u.get("count"),
                                **({"userEmail": u["userEmail"]} if u.get("userEmail") else {})} for u in users]
    fields = [f for f in metrics.get("fields") or [] if isinstance(f, dict)]
    if fields:
        point["fieldCounts"] = [{"fieldPath": f.get("fieldName"), "count": f.get("count")} for f in fields]
    return point


def _int(body: dict[str, Any], name: str, default: int, most: int = 10_000) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise web.HTTPBadRequest(text=json.dumps({"error": "invalid_request", "status": 400,
                                                  "message": f"{name}: an integer from 0 to {most}"}),
                                 content_type="application/json")
    return value


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    return str(value).lower() == "true" if not isinstance(value, bool) else value


async def runs(request: web.Request) -> web.Response:
    """DataHub's ingestion runs (gms/runs.py): list, describe, rollback."""
    action = request.query.get("action")
    if action not in ("list", "describe", "rollback"):
        return error(400, "unknown_action", f"unknown action {action!r} (list, describe, rollback)")
    body = await read_json(request)
    if not isinstance(body, dict):
        return error(400, "invalid_request", "body must be a JSON object")
    api = api_of(request)
    ingestion_runs = IngestionRuns(api.gms)
    if action == "list":
        rows = await asyncio.to_thread(ingestion_runs.list, _int(body, "pageOffset", 0, 10**9),
                                       _int(body, "pageSize", 10), _flag(body, "includeSoft", False),
                                       readable(request))
        return web.json_response({"value": rows})
    run_id = body.get("runId")
    if not isinstance(run_id, str) or not run_id:
        return error(400, "invalid_request", f'{action} needs {{"runId": "..."}}')
    if action == "describe":
        rows = await asyncio.to_thread(ingestion_runs.describe, run_id, _int(body, "start", 0, 10**9),
                                       _int(body, "count", 100), _flag(body, "includeSoft", False),
                                       _flag(body, "includeAspect", False), readable(request))
        return web.json_response({"value": rows})
    require(request, REMOVE, INSTANCE)
    try:
        summary = await api.run(ingestion_runs.rollback, run_id, principal_of(request), _flag(body, "dryRun", False),
                                _flag(body, "safe", True))
    except RollbackFailed as failed:
        return error(failed.status, "rollback_failed", str(failed), applied=failed.applied,
                     failures=[{"urn": u, "aspectName": a, "message": m} for u, a, m in failed.failures])
    if not summary["dryRun"] and summary["aspectsReverted"]:
        await api.wait_for_index()
    return web.json_response({"value": summary})


_BODY = {"required": True, "content": {"application/json": {"schema": OBJECT}}}
_ASPECTS = {"post": {
    "summary": "DataHub Rest.li: ?action=ingestProposal | ingestProposalBatch (all checked first: one invalid,"
               " none applied or queued)",
    "parameters": [query_param("action", required=True,
                               enum=["ingestProposal", "ingestProposalBatch", *datahub_reads.ASPECT_ACTIONS])],
    "requestBody": _BODY,
    "responses": {"200": response("Applied", OBJECT), "202": response("Queued on the MCP topic", OBJECT),
                  "400": response("Invalid request or proposal", ERROR_OR_RESULTS),
                  "403": response("A proposal the caller may not make", ERROR_OR_RESULTS),
                  "409": response("A proposal kept conflicting with concurrent writers", ERROR_OR_RESULTS),
                  "412": response("Precondition failed", ERROR_OR_RESULTS),
                  "413": response("Over a size limit", ERROR_OR_RESULTS)}}}
_ENTITIES = {"post": {
    "summary": "DataHub Rest.li: ?action=delete {\"urn\", \"aspectName\"?, \"startTimeMillis\"?, \"endTimeMillis\"?}"
               " (hard delete; with aspectName a timeseries aspect's points in the window) | ingest (an MCE)",
    "parameters": [query_param("action", required=True, enum=["delete", "ingest", *datahub_reads.ENTITY_ACTIONS])],
    "requestBody": _BODY,
    "responses": {"200": response("Deleted ({\"value\": {\"urn\", \"rows\", \"timeseriesRows\"}}) or ingested",
                                  OBJECT),
                  "400": response("Invalid request", ERROR_OR_RESULTS),
                  "403": response("The caller may not delete or write it", ERROR_OR_RESULTS),
                  "409": response("Conflicting writers", ERROR_OR_RESULTS),
                  "412": response("Refused", ERROR_OR_RESULTS),
                  "413": response("Over a size limit", ERROR_OR_RESULTS)}}}
_USAGE = {"post": {
    "summary": "DataHub Rest.li: ?action=batchIngest {\"buckets\": [UsageAggregation]} as datasetUsageStatistics",
    "parameters": [query_param("action", required=True, enum=["batchIngest"])],
    "requestBody": _BODY,
    "responses": {"200": response("Ingested", OBJECT), "400": response("Invalid request", ERROR_OR_RESULTS),
                  "403": response("The caller may not write a resource", ERROR_OR_RESULTS),
                  "413": response("Over a size limit", ERROR_OR_RESULTS)}}}
_RUNS = {"post": {
    "summary": "DataHub Rest.li: ?action=list | describe | rollback (ingestion runs by the runIds of the aspect"
               " store; rollback needs WRITE on the instance)",
    "parameters": [query_param("action", required=True, enum=["list", "describe", "rollback"])],
    "requestBody": _BODY,
    "responses": {"200": response("The runs, a run's rows, or what the rollback did", OBJECT),
                  "400": response("Invalid request"), "403": response("The caller may not roll back"),
                  "409": response("Conflicting writers"), "412": response("A write was refused")}}}
OPENAPI_PATHS: dict[str, Any] = {
    "/aspects": _ASPECTS, "/aspects/": _ASPECTS, "/entities": _ENTITIES, "/entities/": _ENTITIES,
    "/usageStats": _USAGE, "/usageStats/": _USAGE, "/runs": _RUNS, "/runs/": _RUNS,
    "/config": {"get": {"summary": "Server configuration (DataHub clients read noCode, statefulIngestionCapable)",
                        "security": [], "responses": {"200": response("Configuration", OBJECT)}}},
}


def _query_action(request: web.Request) -> bool:
    return request.query.get("action") in QUERY_ACTIONS


def add_routes(app: web.Application) -> None:
    app.router.add_get("/config", config)
    # DataHub's read actions are queries for the write guards: served while indexing lags.
    for path, handler in (("/aspects", aspects), ("/entities", entities), ("/usageStats", usage_stats),
                          ("/runs", runs)):
        app.router.add_post(path, query_route(handler, _query_action) if path != "/usageStats" else handler)
        app.router.add_post(path + "/", handler)  # as `datahub put` and others send them
