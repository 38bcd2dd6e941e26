"""Incidents as DataHub's GraphQL API manages them (incidents.graphql): `incident` entities with
an `incidentInfo` aspect naming the entities they are about, raised and resolved here through
GMS as the caller, and listed per entity (`incidents(state, start, count)`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from ingest.proposal import Proposal
from lodestar.api.graphql.edits import existing, pointer, stamp, write
from lodestar.api.graphql.entities import Context, EntityRef

MAX_INCIDENTS_LISTED = 10_000  # incidents of one entity a listing reads
PRIORITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")  # stored as their index: 0 is the most urgent
Search = Callable[[Context, Mapping[str, Any]], dict[str, Any]]


def raise_incident(ctx: Context, given: Mapping[str, Any]) -> str:
    """A new ACTIVE incident about an existing entity, raised by the caller; answers its URN."""
    about = existing(ctx, given["resourceUrn"], "resourceUrn")
    urn = f"urn:li:incident:{uuid.uuid4()}"
    now = stamp(ctx)
    value: dict[str, Any] = {"type": given["type"], "entities": [about], "created": now,
                             "status": {"state": "ACTIVE", "lastUpdated": now},
                             "source": {"type": "MANUAL"}}
    for name in ("title", "description", "customType"):
        if given.get(name) is not None:
            value[name] = given[name]
    if given.get("priority") is not None:
        value["priority"] = PRIORITIES.index(given["priority"])
    write(ctx, Proposal("incident", urn, "CREATE_ENTITY", "incidentInfo", value))
    return urn


def update_status(ctx: Context, urn: str, given: Mapping[str, Any]) -> bool:
    """Sets an incident's state (and message), the caller as who changed it."""
    existing(ctx, urn, "urn", ("incident",))
    status = {"state": given["state"], "lastUpdated": stamp(ctx)}
    if given.get("message") is not None:
        status["message"] = given["message"]
    write(ctx, Proposal("incident", urn, "PATCH", "incidentInfo", [{"op": "add", "path": pointer("status"),
                                                                      "value": status}]))
    return True


def incidents_of(r: EntityRef, ctx: Context, search: Search, state: str | None = None, start: int | None = None,
                 count: int | None = None) -> dict[str, Any]:
    """The incidents about an entity (of one state when given), newest first; `count` is the page
    size asked (20 by default), as DataHub answers it."""
    start, count = start or 0, 20 if count is None else count
    if start < 0 or not 0 <= count <= MAX_INCIDENTS_LISTED:
        raise GraphQLError(f"start must be at least 0 and count between 0 and {MAX_INCIDENTS_LISTED}",
                           extensions={"code": 400})
    found = search(ctx, {"query": "*", "start": 0, "count": MAX_INCIDENTS_LISTED, "types": ["INCIDENT"],
                         "filters": [{"field": "entities", "values": [r.urn]}],
                         "searchFlags": {"skipAggregates": True}})
    kept = []
    for hit in found["searchResults"]:
        info = ctx.aspect(hit["entity"].urn, "incidentInfo") or {}
        if state is None or (info.get("status") or {}).get("state") == state:
            kept.append((-((info.get("created") or {}).get("time") or 0), hit["entity"].urn))
    shown = [EntityRef(urn) for _, urn in sorted(kept)[start:start + count]]
    return {"start": start, "count": count, "total": len(kept), "incidents": shown}


def incident_field(r: EntityRef, ctx: Context, name: str) -> Any:
    """A field of an Incident read from its incidentInfo."""
    info = ctx.aspect(r.urn, "incidentInfo") or {}
    if name == "incidentType":
        return info.get("type")
    if name == "priority":
        priority = info.get("priority")
        return PRIORITIES[priority] if isinstance(priority, int) and 0 <= priority < len(PRIORITIES) else None
    if name == "entity":
        entities = [u for u in info.get("entities") or [] if isinstance(u, str)]
        return EntityRef(entities[0]) if entities else None
    if name == "source":
        source = info.get("source")
        return None if not isinstance(source, dict) else {
            "type": source.get("type"), "source": EntityRef(source["sourceUrn"]) if source.get("sourceUrn") else None}
    return info.get(name)


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "raiseIncident": lambda ctx, args: raise_incident(ctx, args["input"]),
    "updateIncidentStatus": lambda ctx, args: update_status(ctx, args["urn"], args["input"]),
}
