"""DataHub's v3 entity scroll, `GET /openapi/v3/entity/{type}?query=&count=&scrollId=&aspects=`:
the entities of one type a query string matches (`query_string.py`; none: all), in URN order, a
page at a time: `{"entities": [{"urn", "<aspect>": {"value"}}], "scrollId", "totalCount"}` (no
`scrollId` on the last page). What DataHub's `OpenAPIGraphClient.scroll_urns_by_filter` (platform
resources' searches) sends.

Matches come from the search index (so a write shows once it is indexed, as in DataHub), only
what the caller may read. A query without negations runs as the GraphQL searches do (graphql/
search.py: one index query per alternative, merged; the scroll cursor survives writes between
pages). A clause with negations (`-field:value`) is the clause's matches less those of the
clause with each negated term, collected whole: at most MAX_NEGATED entities, else 400."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from typing import Any

from aiohttp import web
from graphql import GraphQLError

from lodestar.api.context import api_of
from lodestar.api.datahub_openapi import TYPE_PARAM, aspect_of, entity_object, entity_of_path
from lodestar.api.datahub_reads import list_param, refuse
from lodestar.api.graphql.filters import Branch
from lodestar.api.graphql.search import Search, Searcher
from lodestar.api.limits import MAX_COUNT, bool_param, int_param
from lodestar.api.openapi import OBJECT, query_param, response
from lodestar.api.query_string import Clause, QueryStringError, parse
from lodestar.api.reads import readable_within
from mcl_processor.search import SearchIndex
from mcl_processor.search.cdap import Expr

MAX_NEGATED = 10_000  # entities a clause with negations (or a negated term within it) may match
_PAGE = 1_000


def _all_urns(index: SearchIndex, query: str, entity: str, removed: bool, within: Expr | None) -> set[str]:
    """Every URN of `entity` the query matches; 400 past MAX_NEGATED."""
    found: set[str] = set()
    for start in range(0, MAX_NEGATED + 1, _PAGE):
        hits = index.query(query, [entity], start, _PAGE, removed, "urn", within=within).hits
        found.update(hit.urn for hit in hits)
        if len(hits) < _PAGE:
            return found
    raise refuse(400, "invalid_request", f"query: a clause with a negation matches over {MAX_NEGATED} entities;"
                                         " narrow it")


def _negated_page(index: SearchIndex, clauses: list[Clause], entity: str, removed: bool, within: Expr | None,
                  cursor: str | None, count: int, key: str) -> tuple[list[str], int, str | None]:
    """The page after `cursor` of the URNs some clause matches, the total, and the next cursor."""
    matched: set[str] = set()
    for clause in clauses:
        base = " ".join(clause.positive)
        kept = _all_urns(index, base, entity, removed, within)
        for term in clause.negative:
            kept -= _all_urns(index, f"{base} {term}", entity, removed, within)
        matched |= kept
    last = _decoded(cursor, key) if cursor else None
    ordered = sorted(urn for urn in matched if last is None or urn > last)
    page = ordered[:count]
    more = len(ordered) > count and bool(page)
    return page, len(matched), _encoded(key, page[-1]) if more else None


def _encoded(key: str, last: str) -> str:
    text = json.dumps({"k": key, "l": last}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decoded(cursor: str, key: str) -> str:
    try:
        found = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if found["k"] == key and isinstance(found["l"], str):
            return str(found["l"])
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        pass
    raise refuse(400, "invalid_request", "scrollId: not a scroll position of this query (pass back the scrollId"
                                         " of the same type and query)")


def _page(index: SearchIndex, clauses: list[Clause], entity: str, removed: bool, within: Expr | None,
          cursor: str | None, count: int) -> tuple[list[str], int, str | None]:
    """The URNs of one page, the total, and the cursor of the next page (None: no more)."""
    if any(clause.negative for clause in clauses):
        key = hashlib.sha256(json.dumps([entity, removed, [[c.positive, c.negative] for c in clauses]])
                             .encode()).hexdigest()[:16]
        return _negated_page(index, clauses, entity, removed, within, cursor, count, key)
    branches = [Branch(terms=c.positive, types=frozenset({entity}), removed="any" if removed else None)
                for c in clauses]
    searcher = Searcher(index, Search("*", branches, within, "urn"), skip_facets=True)
    try:
        found = searcher.scroll(cursor, count)
        return [hit.urn for hit in found.hits], found.total(), found.next_cursor
    except (GraphQLError, ValueError) as err:
        raise refuse(400, "invalid_request", str(err)) from None


async def scroll_entities(request: web.Request) -> web.Response:
    """v3 `GET /openapi/v3/entity/{type}`: a page of the type's entities the query matches."""
    entity = entity_of_path(request)
    try:
        clauses = parse(request.query.get("query", "*"))
    except QueryStringError as err:
        raise refuse(400, "invalid_request", str(err)) from None
    count = int_param(request, "count", 10, 1, MAX_COUNT) or 10
    asked = list_param(request, "aspects")
    names = None if asked is None else [aspect_of(entity, name, "aspects") for name in asked]
    removed, with_meta = bool_param(request, "includeSoftDelete"), bool_param(request, "systemMetadata")
    api, within, cursor = api_of(request), readable_within(request), request.query.get("scrollId") or None

    def read() -> dict[str, Any]:
        urns, total, after = _page(api.read_models.search, clauses, entity.name, removed, within, cursor, count)
        found = (entity_object(api.gms.registry, api.gms.store, entity, urn, names, with_meta) for urn in urns)
        out: dict[str, Any] = {"entities": [item for item in found if item is not None], "totalCount": total}
        if after is not None:
            out["scrollId"] = after
        return out

    return web.json_response(await asyncio.to_thread(read))


OPENAPI_PATHS: dict[str, Any] = {
    "/openapi/v3/entity/{type}": {"get": {
        "summary": "DataHub v3: the entities of a type an Elasticsearch query string matches, in URN order",
        "parameters": [TYPE_PARAM, query_param("query", "Query string (default *): field:\"value\", field:prefix*,"
                                                        " AND, OR, NOT/-, parentheses"),
                       query_param("count", kind="integer", minimum=1, maximum=MAX_COUNT),
                       query_param("scrollId", "The previous page's scrollId"), query_param("aspects", "Repeated"),
                       query_param("includeSoftDelete", kind="boolean"),
                       query_param("systemMetadata", kind="boolean")],
        "responses": {"200": response("{\"entities\", \"scrollId\"?, \"totalCount\"}", OBJECT),
                      "400": response("Invalid query or scrollId"),
                      "403": response("The caller may not read")}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi/v3/entity/{type}", scroll_entities)
