"""Pages of the entities of one Lodestar entity type that GraphQL lists without serving them as
`Entity` objects (ingestion sources, execution requests, secrets): searched in the index like
any entity, among those the caller may read, and kept out of searches across all entity types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphql import GraphQLError

from gms.access.accounts import Accounts
from lodestar.api.graphql.entities import Context
from lodestar.api.graphql.filters import Branch, branches
from lodestar.api.graphql.search import Search, Searcher, query_text
from lodestar.api.limits import MAX_COUNT, MAX_START
from mcl_processor.search.cdap import RESOURCE, any_of


def require_admin(ctx: Context, what: str) -> None:
    """Refuses a caller without ADMIN on the instance (DataHub's manage-ingestion and
    manage-secrets privileges, which `me` answers as ADMIN too)."""
    if not Accounts(ctx.api.gms).is_admin(ctx.principal):
        raise GraphQLError(f"forbidden: {what} needs ADMIN on the instance", extensions={"code": 403})


def page_bounds(given: Mapping[str, Any], default_count: int = 20) -> tuple[int, int]:
    """`start` and `count` of an input, checked."""
    start = given.get("start") or 0
    count = default_count if given.get("count") is None else given["count"]
    if not 0 <= start <= MAX_START or not 0 <= count <= MAX_COUNT:
        raise GraphQLError(f"input: start must be from 0 to {MAX_START} and count from 0 to {MAX_COUNT}",
                           extensions={"code": 400})
    return start, count


def urns_of_type(ctx: Context, entity_type: str, given: Mapping[str, Any], start: int, count: int,
                 conditions: Sequence[Mapping[str, Any]] = ()) -> tuple[int, list[str]]:
    """The total and one page (by name; by URN for filters of several alternatives) of the
    entities of `entity_type` the caller may read matching the input's query, filters and the
    extra conditions."""
    index = ctx.api.read_models.search
    of_type = Branch(types=frozenset({entity_type}))
    found = [b for b in (x.and_(of_type) for x in branches(None, [*(given.get("filters") or []), *conditions],
                                                             index.annotations)) if b is not None]
    within = None if ctx.readable is None else any_of(RESOURCE, sorted(ctx.readable))
    search = Search(query_text(given.get("query")), found, within, "name" if len(found) == 1 else "urn")
    page = Searcher(index, search, skip_facets=True).page(start, count)
    return page.total(), [hit.urn for hit in page.hits]
