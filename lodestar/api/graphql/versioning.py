"""Version sets as DataHub's GraphQL API shows them (versioning.graphql): a `versionSet` entity
(its versionSetProperties) and its versions, the entities whose versionProperties name it,
found by the search index's `versionSet` field and ordered by their `sortId`, highest first.
At most MAX_VERSIONS versions of a set are searched (more: an error saying so)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import Context, EntityRef
from lodestar.api.limits import MAX_COUNT

MAX_VERSIONS = MAX_COUNT
Search = Callable[[Context, Mapping[str, Any]], dict[str, Any]]


def _sort_id(ctx: Context, hit: Mapping[str, Any]) -> str:
    sort_id = (ctx.aspect(hit["entity"].urn, "versionProperties") or {}).get("sortId")
    return sort_id if isinstance(sort_id, str) else ""


def versions_search(r: EntityRef, ctx: Context, given: Mapping[str, Any], search: Search) -> dict[str, Any]:
    """One page (start, count) of the versions of the set matching the input's query and filters."""
    if given.get("sortInput"):
        raise GraphQLError("versionsSearch: versions come by sortId, highest first; sortInput is not supported",
                           extensions={"code": 400})
    start, count = given.get("start") or 0, 10 if given.get("count") is None else given["count"]
    if start < 0 or not 0 <= count <= MAX_COUNT:
        raise GraphQLError(f"input: start must be at least 0 and count between 0 and {MAX_COUNT}",
                           extensions={"code": 400})
    in_set = {"field": "versionSet", "values": [r.urn], "condition": "EQUAL"}
    found = search(ctx, {**given, "query": given.get("query") or "*", "start": 0, "count": MAX_VERSIONS,
                         "filters": [*(given.get("filters") or []), in_set]})
    total = found["total"]() if callable(found["total"]) else found["total"]  # a search counts on demand
    if total > MAX_VERSIONS:
        raise GraphQLError(f"versionsSearch: the set has more than {MAX_VERSIONS} versions matching; narrow the"
                           " query or filters", extensions={"code": 400})
    ordered = sorted(found["searchResults"], key=lambda hit: (_sort_id(ctx, hit), hit["entity"].urn), reverse=True)
    page = ordered[start:start + count]
    return {"start": start, "count": len(page), "total": total, "searchResults": page,
            "facets": found["facets"]}
