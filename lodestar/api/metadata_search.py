"""CDAP's metadata search: `GET /v3/namespaces/{ns}/metadata/search` and `GET /v3/metadata/search`.

Parameters: `query` (CDAP's syntax, see mcl_processor/search/cdap.py), `target` (entity types,
repeatable or comma-separated), `scope` (USER or SYSTEM), `namespaces` (the second route,
repeatable), `sort` (`entity-name asc|desc` or `creation-time asc|desc`, only with query `*`),
`offset`, `limit`, `cursor` and `numCursors` (with a sort only), `showHidden` (entities whose
name starts with `_` are left out unless true). It runs on the search index's `select`, with
the caller's readable resources among its conditions, so what a caller may not read counts
nowhere. Results without a sort come by entity name.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from lodestar.api.access import readable
from lodestar.api.context import error
from lodestar.api.metadata_v3 import service_of
from lodestar.metadata.service import MetadataService, parse_scope
from lodestar.metadata.validation import InvalidMetadata
from mcl_processor.search import SearchHit
from mcl_processor.search.cdap import HIDDEN, NAMESPACE, RESOURCE, SUBTYPE, TYPE, All, Any_, Expr, any_of, parse
from mcl_processor.search.cdap import system as system_term

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
MAX_CURSORS = 100
CREATION_SORT_LIMIT = 10_000  # matches a creation-time sort orders (their times come from the store)
SORT_FIELDS = ("entity-name", "creation-time")
TARGET_ALIASES = {"app": "application", "apps": "application", "datasets": "dataset", "streams": "stream",
                  "programs": "program", "fields": "field"}


class BadSearch(ValueError):
    """A search CDAP would refuse; the message says why."""


@dataclass(frozen=True)
class Search:
    query: str
    targets: tuple[str, ...]
    namespaces: tuple[str, ...]
    scope: str | None
    sort: tuple[str, str] | None  # (field, asc|desc)
    offset: int
    limit: int
    num_cursors: int
    show_hidden: bool

    def fingerprint(self) -> str:
        """What a cursor must belong to: everything but the offset and the cursors wanted."""
        return hashlib.sha256(repr((self.query, self.targets, self.namespaces, self.scope, self.sort, self.limit,
                                    self.show_hidden)).encode()).hexdigest()[:16]

    def cursor(self, offset: int) -> str:
        return base64.urlsafe_b64encode(json.dumps({"offset": offset, "search": self.fingerprint()}).encode()).decode()


def _int(query: Any, name: str, default: int, low: int, high: int | None = None) -> int:
    text = query.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadSearch(f"{name}: {text!r} is not an integer") from None
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadSearch(f"{name}: {value} is not {bounds}")
    return value


def _many(query: Any, name: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for item in query.getall(name, []) for v in item.split(",") if v.strip()))


def parse_search(query: Any, namespaces: Sequence[str]) -> Search:
    """A search from the request's parameters; raises BadSearch saying what is wrong."""
    text = query.get("query")
    if text is None or not text.strip():
        raise BadSearch("query is required (use * for everything)")
    try:
        scope = parse_scope(query.get("scope"))
    except InvalidMetadata as err:
        raise BadSearch(str(err)) from None
    sort = None
    if query.get("sort"):
        field, _, order = query["sort"].strip().lower().partition(" ")
        order = order.strip() or "asc"
        if field not in SORT_FIELDS or order not in ("asc", "desc"):
            raise BadSearch(f"sort: {query['sort']!r} is not one of 'entity-name asc|desc', 'creation-time asc|desc'")
        if text.strip() != "*":
            raise BadSearch("sort: a sorted search takes the query '*' only (other queries come by relevance)")
        sort = (field, order)
    show_hidden = query.get("showHidden", "false").lower()
    if show_hidden not in ("true", "false"):
        raise BadSearch(f"showHidden: {query['showHidden']!r} is not true or false")
    targets = tuple(TARGET_ALIASES.get(t.lower(), t.lower()) for t in _many(query, "target"))
    search = Search(text.strip(), tuple(t for t in targets if t != "all"), tuple(namespaces), scope, sort,
                    _int(query, "offset", 0, 0), _int(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
                    _int(query, "numCursors", 0, 0, MAX_CURSORS), show_hidden == "true")
    if (search.num_cursors or query.get("cursor")) and sort is None:
        raise BadSearch("cursor and numCursors need a sort (entity-name or creation-time, with query '*')")
    if query.get("cursor"):
        if search.offset:
            raise BadSearch("cursor and offset exclude each other: a cursor says where its page starts")
        try:
            found = json.loads(base64.urlsafe_b64decode(query["cursor"].encode()))
            offset, owner = int(found["offset"]), found["search"]
        except (ValueError, KeyError, TypeError):
            raise BadSearch("cursor: not a cursor this API gave") from None
        if owner != search.fingerprint():
            raise BadSearch("cursor: it belongs to another search (query, target, scope, sort, limit and showHidden"
                            " must stay the same)")
        search = Search(**{**search.__dict__, "offset": max(0, offset)})
    return search


def conditions(search: Search, readable_resources: frozenset[str] | None) -> tuple[Expr, Expr | None]:
    """The index expression of a search and what it must leave out (hidden entities)."""
    parts: list[Expr] = [parse(search.query, search.scope)]
    if search.targets:
        parts.append(Any_(tuple(system_term(key, t) for t in search.targets for key in (TYPE, SUBTYPE))))
    if search.namespaces:
        parts.append(any_of(NAMESPACE, [ns.lower() for ns in search.namespaces]))
    if readable_resources is not None:
        parts.append(any_of(RESOURCE, sorted(readable_resources)))
    return All(tuple(parts)), None if search.show_hidden else system_term(HIDDEN, "true")


def run(service: MetadataService, search: Search, readable_resources: frozenset[str] | None) -> dict[str, Any]:
    index = service.search
    assert index is not None
    expr, exclude = conditions(search, readable_resources)
    if search.sort is not None and search.sort[0] == "creation-time":
        total, hits = _by_creation_time(service, expr, exclude, search)
    else:
        order = "-name" if search.sort == ("entity-name", "desc") else "name"
        result = index.select(expr, exclude, search.offset, search.limit, order)
        total, hits = result.total, result.hits
    cursors = [search.cursor(offset) for k in range(1, search.num_cursors + 1)
               if (offset := search.offset + k * search.limit) < total]
    return {"total": total, "offset": search.offset, "limit": search.limit,
            "sort": " ".join(search.sort) if search.sort else "", "cursors": cursors,
            "showHidden": search.show_hidden, "results": [_result(service, hit, search.scope) for hit in hits]}


def _by_creation_time(service: MetadataService, expr: Expr, exclude: Expr | None, search: Search
                      ) -> tuple[int, list[SearchHit]]:
    everything = service.search.select(expr, exclude, 0, CREATION_SORT_LIMIT + 1, "urn")  # type: ignore[union-attr]
    if everything.total > CREATION_SORT_LIMIT:
        raise BadSearch(f"sort: creation-time orders at most {CREATION_SORT_LIMIT} results, this search has"
                        f" {everything.total}; narrow it with target or namespaces")
    created = {hit.urn: service.creation_time(hit.urn) for hit in everything.hits}
    ordered = sorted(everything.hits, key=lambda h: (created[h.urn], h.urn), reverse=search.sort == ("creation-time",
                                                                                                        "desc"))
    return everything.total, ordered[search.offset:search.offset + search.limit]


def _result(service: MetadataService, hit: SearchHit, scope: str | None) -> dict[str, Any]:
    entity = service.entity_of(hit.urn)
    records = service.records(entity, scope, hit.urn)
    return {"metadataEntity": entity.to_json(), "urn": hit.urn,
            "metadata": {r.scope: {"properties": r.properties, "tags": r.tags} for r in records}}


async def _search(request: web.Request, namespaces: Sequence[str]) -> web.Response:
    try:
        search = parse_search(request.query, namespaces)
        readable_resources = readable(request)
        return web.json_response(await asyncio.to_thread(run, service_of(request), search, readable_resources))
    except BadSearch as err:
        return error(400, "invalid_search", str(err))


async def namespace_search(request: web.Request) -> web.Response:
    return await _search(request, [request.match_info["ns"]])


async def instance_search(request: web.Request) -> web.Response:
    return await _search(request, _many(request.query, "namespaces"))


_PARAMETERS = [{"name": name, "in": "query", "schema": {"type": kind}} for name, kind in (
    ("query", "string"), ("target", "string"), ("scope", "string"), ("sort", "string"), ("offset", "integer"),
    ("limit", "integer"), ("cursor", "string"), ("numCursors", "integer"), ("showHidden", "boolean"))]
_RESPONSES = {"200": {"description": "{total, offset, limit, sort, cursors, results}"},
              "400": {"description": "An invalid query, sort or cursor, and why"}}
OPENAPI_PATHS: dict[str, Any] = {
    "/v3/namespaces/{ns}/metadata/search": {"get": {"summary": "CDAP-syntax search in a namespace",
                                                    "parameters": _PARAMETERS, "responses": _RESPONSES}},
    "/v3/metadata/search": {"get": {"summary": "CDAP-syntax search in every namespace (or ?namespaces=)",
                                    "parameters": [*_PARAMETERS, {"name": "namespaces", "in": "query",
                                                                  "schema": {"type": "string"}}],
                                    "responses": _RESPONSES}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v3/namespaces/{ns}/metadata/search", namespace_search)
    app.router.add_get("/v3/metadata/search", instance_search)
