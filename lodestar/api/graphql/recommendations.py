"""`listRecommendations` (recommendations.graphql): the modules DataHub's home and search pages
show, made from the search index's facets over what the caller may read: the platforms,
domains, tags and glossary terms with the most entities, each a search to run. Lodestar keeps
no usage or view history, so the modules of popular, recently viewed or edited entities and
recent searches are never made; a scenario of an entity page or the search bar has no modules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import Context

DEFAULT_LIMIT = 10
MAX_CONTENT = 10  # values shown in one module
SCENARIOS_WITH_MODULES = frozenset({"HOME", "SEARCH_RESULTS"})


@dataclass(frozen=True, slots=True)
class Module:
    """A module of the values of one facet, the most frequent first."""

    module_id: str
    title: str
    render_type: str
    facet: str


MODULES = (
    Module("PLATFORMS", "Platforms", "PLATFORM_SEARCH_LIST", "platform"),
    Module("DOMAINS", "Domains", "DOMAIN_SEARCH_LIST", "domains"),
    Module("TOP_TAGS", "Top Tags", "TAG_SEARCH_LIST", "tags"),
    Module("TOP_TERMS", "Top Glossary Terms", "GLOSSARY_TERM_SEARCH_LIST", "glossaryTerms"),
)

Search = Callable[[Context, Mapping[str, Any]], dict[str, Any]]


def _content(module: Module, aggregation: Mapping[str, Any]) -> dict[str, Any]:
    value = aggregation["value"]
    condition = {"field": module.facet, "values": [value], "condition": "EQUAL", "negated": False}
    return {"value": value, "entity": aggregation["entity"],
            "params": {"searchParams": {"types": None, "query": "*", "filters": [condition]},
                       "contentParams": {"count": aggregation["count"]}}}


def list_recommendations(ctx: Context, given: Mapping[str, Any], search: Search) -> dict[str, Any]:
    """The caller's recommendation modules for the scenario of `requestContext` (HOME when none)."""
    limit = DEFAULT_LIMIT if given.get("limit") is None else given["limit"]
    if limit < 0:
        raise GraphQLError(f"input.limit: must be at least 0, not {limit}", extensions={"code": 400})
    if given.get("viewUrn"):
        raise GraphQLError("input.viewUrn: views are not supported by Lodestar", extensions={"code": 400})
    request = given.get("requestContext") or {}
    if request.get("scenario", "HOME") not in SCENARIOS_WITH_MODULES:
        return {"modules": []}
    wanted = request.get("modules")
    candidates = [m for m in MODULES if wanted is None or m.module_id in wanted]
    if not candidates or limit == 0:
        return {"modules": []}
    found = search(ctx, {"query": "*", "count": 0})["facets"]()
    by_facet = {facet["field"]: facet["aggregations"] for facet in found}
    modules = []
    for module in candidates:
        values = sorted((a for a in by_facet.get(module.facet, []) if a["entity"] is not None and a["count"] > 0),
                        key=lambda a: (-a["count"], a["value"]))[:MAX_CONTENT]
        if values:
            modules.append({"title": module.title, "moduleId": module.module_id, "renderType": module.render_type,
                            "content": [_content(module, a) for a in values]})
    return {"modules": modules[:limit]}
