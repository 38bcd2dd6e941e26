"""What DataHub's GraphQL API manages as entities of their own (managed.graphql).

Metadata tests: `test` entities with a `testInfo` aspect, made and changed here (read and listed
as entities; an entity's `testResults` aspect, entities.py, says which it passes and fails).
Lodestar stores tests and their results as written; it does not run them.

Views: `dataHubView` entities with a `dataHubViewInfo` aspect (a name and saved search filters),
GLOBAL (everyone's) or PERSONAL (listed for their maker only), made, changed, deleted and listed
here. Lodestar stores views; its searches do not apply them (`viewUrn` is refused there)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import Proposal
from lodestar.api.graphql.edits import stamp, write
from lodestar.api.graphql.entities import Context, EntityRef, lodestar_type

DEFINITION_TYPE = "JSON"  # the one kind of test definition


def _test_info(given: Mapping[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = {"name": given["name"], "category": given["category"],
                             "definition": {"type": DEFINITION_TYPE}}
    if given.get("description") is not None:
        value["description"] = given["description"]
    definition = given.get("definition") or {}
    if definition.get("json") is not None:
        value["definition"]["json"] = definition["json"]
    return value


def create_test(ctx: Context, given: Mapping[str, Any]) -> str:
    """A new test (urn:li:test:<id>, a random id when none is given); fails when it exists."""
    urn = f"urn:li:test:{given.get('id') or uuid.uuid4()}"
    write(ctx, Proposal("test", urn, "CREATE_ENTITY", "testInfo", _test_info(given)))
    return urn


def update_test(ctx: Context, urn: str, given: Mapping[str, Any]) -> str:
    """Replaces an existing test's name, category, description and definition."""
    if not urn.startswith("urn:li:test:"):
        raise GraphQLError(f"urn: {urn!r} is not a test URN", extensions={"code": 400})
    if ctx.aspect(urn, "testInfo") is None:
        raise GraphQLError(f"urn: test {urn} does not exist", extensions={"code": 404})
    write(ctx, Proposal("test", urn, "UPSERT", "testInfo", _test_info(given)))
    return urn


MAX_VIEWS_LISTED = 10_000  # views a listing reads (a view is one person's saved search: they are few)


def _view_definition(given: Mapping[str, Any]) -> dict[str, Any]:
    """DataHub's stored view definition: entity type names and a filter in disjunctive form (AND:
    one conjunction of every condition; OR: one conjunction per condition)."""
    conditions = []
    for f in given["filter"].get("filters") or []:
        condition = {"field": f["field"], "values": list(f.get("values") or []),
                     "condition": f.get("condition") or "EQUAL", "negated": bool(f.get("negated"))}
        conditions.append(condition)
    ors = [{"and": conditions}] if given["filter"]["operator"] == "AND" else [{"and": [c]} for c in conditions]
    return {"entityTypes": [lodestar_type(t) for t in given.get("entityTypes") or []], "filter": {"or": ors}}


def _view_urn(ctx: Context, urn: str) -> dict[str, Any]:
    """The stored view (its dataHubViewInfo); a GraphQLError when there is none."""
    if not urn.startswith("urn:li:dataHubView:"):
        raise GraphQLError(f"urn: {urn!r} is not a view URN", extensions={"code": 400})
    info = ctx.aspect(urn, "dataHubViewInfo")
    if info is None:
        raise GraphQLError(f"urn: view {urn} does not exist", extensions={"code": 404})
    return info


def create_view(ctx: Context, given: Mapping[str, Any]) -> EntityRef:
    """A new view with a random id, made by the caller."""
    urn = f"urn:li:dataHubView:{uuid.uuid4()}"
    now = stamp(ctx)
    value = {"name": given["name"], "type": given["viewType"], "definition": _view_definition(given["definition"]),
             "created": now, "lastModified": now}
    if given.get("description") is not None:
        value["description"] = given["description"]
    write(ctx, Proposal("dataHubView", urn, "CREATE_ENTITY", "dataHubViewInfo", value))
    return EntityRef(urn)


def update_view(ctx: Context, urn: str, given: Mapping[str, Any]) -> EntityRef:
    """Changes what is given of a view's name, description and definition."""
    value = dict(_view_urn(ctx, urn))
    for name in ("name", "description"):
        if given.get(name) is not None:
            value[name] = given[name]
    if given.get("definition") is not None:
        value["definition"] = _view_definition(given["definition"])
    value["lastModified"] = stamp(ctx)
    write(ctx, Proposal("dataHubView", urn, "UPSERT", "dataHubViewInfo", value))
    return EntityRef(urn)


def delete_view(ctx: Context, urn: str) -> bool:
    _view_urn(ctx, urn)
    write(ctx, Proposal("dataHubView", urn, "DELETE", "dataHubViewKey"))
    return True


def list_views(ctx: Context, given: Mapping[str, Any], view_type: str | None, mine: bool,
               search: Callable[[Context, Mapping[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """listGlobalViews (GLOBAL ones) and listMyViews (the caller's, of viewType when given): the views
    the search index finds (by their maker for mine), kept by type from their stored info (the index
    does not hold a view's type), in the index's order, paged here."""
    filters = [{"field": "createdBy", "values": [principal_urn(ctx.principal)]}] if mine else []
    found = search(ctx, {"query": given.get("query") or "*", "start": 0, "count": MAX_VIEWS_LISTED,
                         "types": ["DATAHUB_VIEW"], "filters": filters, "searchFlags": {"skipAggregates": True}})
    kept = [hit["entity"] for hit in found["searchResults"]
            if view_type is None or (ctx.aspect(hit["entity"].urn, "dataHubViewInfo") or {}).get("type") == view_type]
    start, count = max(0, given.get("start") or 0), given.get("count")
    shown = kept[start:start + (20 if count is None else max(0, count))]
    return {"start": start, "count": len(shown), "total": len(kept), "views": shown}


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "createTest": lambda ctx, args: create_test(ctx, args["input"]),
    "updateTest": lambda ctx, args: update_test(ctx, args["urn"], args["input"]),
    "createView": lambda ctx, args: create_view(ctx, args["input"]),
    "updateView": lambda ctx, args: update_view(ctx, args["urn"], args["input"]),
    "deleteView": lambda ctx, args: delete_view(ctx, args["urn"]),
}
