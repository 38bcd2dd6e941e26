"""`browse`: DataHub's path-by-path browsing of one entity type by the entities' `browsePaths`
aspect (paths such as `/prod/kafka/orders`; segments compared without case, as search does).

At a path, `entities` are those with that very browse path and `groups` the next segments of
the deeper paths, each with the number of entities under it; `metadata.totalNumEntities` is the
number of entities in the groups. The browse reads the browse paths of the type's entities
that the search index finds (the caller's readable ones, live ones), at most MAX_BROWSED: past
that it is an error that says so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import Context, EntityRef

MAX_BROWSED = 10_000  # entities of one type whose browse paths a browse reads
Search = Callable[[Context, Mapping[str, Any]], dict[str, Any]]


def _segments(path: str) -> tuple[str, ...]:
    return tuple(part.lower() for part in path.strip("/").split("/") if part)


def browse(ctx: Context, given: Mapping[str, Any], search: Search) -> dict[str, Any]:
    if given.get("filters"):
        raise GraphQLError("input.filters: browse filters are not supported by Lodestar", extensions={"code": 400})
    wanted = tuple(part.lower() for part in given.get("path") or [])
    found = search(ctx, {"query": "*", "start": 0, "count": MAX_BROWSED, "types": [given["type"]],
                         "searchFlags": {"skipAggregates": True}})
    if found["total"]() > MAX_BROWSED:  # a search's total is counted when asked
        raise GraphQLError(f"browse: more than {MAX_BROWSED} entities of type {given['type']}; search them with"
                           " searchAcrossEntities and a browsePaths filter", extensions={"code": 400})
    here: list[EntityRef] = []
    groups: Counter[str] = Counter()
    names: dict[str, str] = {}
    for hit in found["searchResults"]:
        entity = hit["entity"]
        paths = (ctx.aspect(entity.urn, "browsePaths") or {}).get("paths") or []
        below: set[str] = set()
        for path in paths:
            if not isinstance(path, str):
                continue
            parts = path.strip("/").split("/")
            segments = _segments(path)
            if segments == wanted:
                if entity not in here:
                    here.append(entity)
            elif segments[:len(wanted)] == wanted and len(segments) > len(wanted):
                below.add(segments[len(wanted)])
                names.setdefault(segments[len(wanted)], [p for p in parts if p][len(wanted)])
        groups.update(below)
    start, count = given.get("start") or 0, 10 if given.get("count") is None else given["count"]
    if start < 0 or not 0 <= count <= MAX_BROWSED:
        raise GraphQLError(f"input: start must be at least 0 and count between 0 and {MAX_BROWSED}",
                           extensions={"code": 400})
    shown = here[start:start + count]
    return {"start": start, "count": len(shown), "total": len(here), "entities": shown,
            "groups": [{"name": names[g], "count": n} for g, n in sorted(groups.items())],
            "metadata": {"path": list(given.get("path") or []), "totalNumEntities": sum(groups.values())}}
