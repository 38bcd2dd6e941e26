"""DataHub's read routes, so that DataHub's unmodified clients (`DataHubGraph`, the SDK's
`DataHubClient`, the `datahub` CLI, connectors that read before they write) find what Lodestar
stores, in the forms they parse:

* Rest.li: `GET /aspects/{urn}?aspect=&version=` (one aspect version as
  `{"aspect": {"<record's full name>": value}, "version": n}`; version 0 the latest; 404 when
  absent), `GET /entitiesV2/{urn}[?aspects=List(a,b)]` and `GET /entitiesV2?ids=List(...)`
  (the latest version of each aspect, enveloped), `POST /aspects?action=getTimeseriesAspectValues|getCount`,
  `POST /entities?action=search|listUrns|deleteReferences` (datahub.py's handlers of those two
  routes hand these actions over: `aspect_action`, `entity_action`);
* OpenAPI: `GET /openapi/relationships/v1/`, `GET /openapi/v2/timeline/v1/{urn}`,
  `GET /openapi/v1/registry/models/entity/specifications`.

Versioned aspects are read from the aspect store; timeseries points, search, listings and
incoming relationships from the read models (so they follow writes once indexed). Every read
of an entity needs READ on it; listings and counts hold only what the caller may read.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from itertools import product
from typing import Any
from urllib.parse import unquote

import orjson
from aiohttp import web

from gms.access import READ, can_read
from gms.store import AspectStore, StoredAspect
from gms.structured_properties import live_assignments, stored
from ingest.like import MAX_PATTERN_LENGTH, LikePattern
from ingest.proposal import ProposalError, parse_proposal
from lodestar.api.access import readable, require
from lodestar.api.context import Api, api_of, error, principal_of, read_json
from lodestar.api.datahub_relationships import Relationships, relationships_of, without_references
from lodestar.api.datahub_timeline import CATEGORIES, aspects_read, category_names, timeline
from lodestar.api.limits import MAX_COUNT, MAX_MILLIS, MAX_START, MAX_VERSION, bool_param, int_param
from lodestar.api.openapi import OBJECT, URN, query_param, response
from lodestar.api.reads import readable_within
from mcl_processor.annotations import entity_type_of
from mcl_processor.search.cdap import Expr
from mcl_processor.search.structured_properties import ASPECT as STRUCTURED_PROPERTIES
from mcl_processor.timeseries import TimeseriesStore
from schemas.registry import AspectSpec, EntityRegistry, EntitySpec
from schemas.urns import Urn, UrnError

ASPECT_ACTIONS = ("getTimeseriesAspectValues", "getCount")
ENTITY_ACTIONS = ("search", "searchAcrossEntities", "listUrns", "deleteReferences")
MAX_IDS = 1000  # URNs of one batch get
_PAGE = 10_000  # timeseries points read per query while looking for the newest
_EXPANSIONS = 64  # search queries one filter may expand to (its OR clauses times multi-value criteria)
_LIST = re.compile(r"List(?:\(|%28)(.*)(?:\)|%29)", re.IGNORECASE)
_UNKNOWN_ACTOR = "urn:li:corpuser:unknown"


# -- shared ---------------------------------------------------------------------------------


def refuse(status: int, code: str, message: str) -> web.HTTPException:
    """A JSON error to raise (the app's error form)."""
    kinds = {400: web.HTTPBadRequest, 404: web.HTTPNotFound, 412: web.HTTPPreconditionFailed}
    return kinds[status](text=json.dumps({"error": code, "message": message, "status": status}),
                         content_type="application/json")


def _registry(request: web.Request) -> EntityRegistry:
    return api_of(request).gms.registry


def _store(request: web.Request) -> AspectStore:
    return api_of(request).gms.store


def path_urn(request: web.Request) -> str:
    """The URN of the path, decoded once more when it came encoded twice (`urn%3Ali%3A...`, as a
    client sends a URN it was given already encoded); whitespace around it is dropped, as
    DataHub's GMS drops it (a URN never ends in a space)."""
    urn = request.match_info["urn"]
    return (unquote(urn) if urn[:6].lower() == "urn%3a" else urn).strip()


def checked_entity(request: web.Request, urn: Any, what: str = "urn") -> tuple[Urn, EntitySpec]:
    """The parsed URN and its entity; 400 for a URN that is malformed or of no known entity."""
    if not isinstance(urn, str) or not urn:
        raise refuse(400, "invalid_request", f"{what}: a URN is required")
    registry = _registry(request)
    try:
        parsed = registry.parse_urn(urn)
    except (UrnError, ValueError) as err:
        raise refuse(400, "invalid_urn", f"{what}: {err}") from None
    return parsed, registry.entities[parsed.entity_type]


def list_param(request: web.Request, name: str) -> list[str] | None:
    """A query parameter as a list: Rest.li's `name=List(a,b)` (items URL-encoded, so an
    encoded comma stays inside its item), repeated `name=a&name=b`, or `name=a,b`; None when absent."""
    values: list[str] | None = None
    for part in request.rel_url.raw_query_string.split("&"):
        key, _, value = part.partition("=")
        if unquote(key) != name:
            continue
        values = values if values is not None else []
        listed = _LIST.fullmatch(value)
        items = listed.group(1).split(",") if listed else unquote(value).split(",")
        values += [unquote(item) if listed else item for item in items if item]
    return values


def _stamp(row: StoredAspect) -> dict[str, Any]:
    meta = row.system_metadata
    return meta.get("aspectModified") or meta.get("aspectCreated") or {"time": row.modified_ms, "actor": _UNKNOWN_ACTOR}


async def _body(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise refuse(400, "invalid_request", "body must be a JSON object")
    return body


def _field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None,
           required: bool = False) -> Any:
    """A field of a JSON body, of type `kind` (a boolean is no number); 400 when mistyped or missing."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = body.get(name)
    if value is None:
        if required:
            raise refuse(400, "invalid_request", f"{name}: is required")
        return default
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise refuse(400, "invalid_request", f"{name}: expected {' or '.join(k.__name__ for k in kinds)}")
    return value


def _bounded(body: Mapping[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = _field(body, name, int, default)
    if value is not None and not low <= value <= high:
        raise refuse(400, "invalid_request", f"{name}: must be between {low} and {high}")
    return value


# -- aspects --------------------------------------------------------------------------------


def _versioned_aspect(request: web.Request, entity: EntitySpec, name: str | None) -> AspectSpec:
    if not name:
        raise refuse(400, "invalid_request", "aspect: is required")
    spec = _registry(request).aspect(name)
    if spec is None:
        raise refuse(400, "unknown_aspect", f"aspect {name!r} is not in the registry")
    if spec.is_timeseries:
        raise refuse(400, "invalid_request", f"aspect {name!r} is a timeseries aspect: read it with "
                                             "POST /aspects?action=getTimeseriesAspectValues")
    if name not in entity.aspects:
        raise refuse(404, "not_found", f"{name} is not an aspect of {entity.name} entities")
    return spec


async def get_aspect(request: web.Request) -> web.Response:
    """Rest.li `GET /aspects/{urn}?aspect=&version=`: one version (0, the default: the latest)."""
    urn = path_urn(request)
    _, entity = checked_entity(request, urn)
    require(request, READ, urn)
    spec = _versioned_aspect(request, entity, request.query.get("aspect"))
    version = int_param(request, "version", 0, 0, MAX_VERSION)
    row = _store(request).get(urn, spec.name, version or None)
    if row is None or not row.exists:
        which = f"version {version} of " if version else ""
        gone = " (deleted)" if row is not None else ""
        raise refuse(404, "not_found", f"{which}aspect {spec.name} of {urn} not found{gone}")
    return web.json_response({"urn": urn, "aspect": {spec.schema_name: shown_value(_store(request), row)},
                              "version": row.version, "systemMetadata": row.system_metadata})


def shown_value(store: AspectStore, row: StoredAspect) -> Any:
    """A stored aspect's value as DataHub's reads show it: a `structuredProperties` value without
    the values of properties that are not defined or are soft-deleted."""
    return live_assignments(row.value, stored(store)) if row.aspect == STRUCTURED_PROPERTIES else row.value


def enveloped(store: AspectStore, row: StoredAspect) -> dict[str, Any]:
    """An aspect's latest version as DataHub's EnvelopedAspect."""
    return {"name": row.aspect, "type": "VERSIONED", "version": row.version, "value": shown_value(store, row),
            "created": _stamp(row), "systemMetadata": row.system_metadata}


def entity_response(registry: EntityRegistry, store: AspectStore, parsed: Urn, entity: EntitySpec,
                    names: list[str] | None) -> dict[str, Any]:
    """DataHub's EntityResponse: the latest version of each versioned aspect (of `names` only,
    when given), and always the key aspect; as DataHub does, an entity that does not exist
    still answers with its key aspect, made from the URN (version 0, no system metadata)."""
    urn = str(parsed)
    wanted = None if names is None else {*names, entity.key_aspect}
    aspects: dict[str, Any] = {}
    for row in sorted(store.entity(urn), key=lambda r: r.aspect):
        spec = registry.aspect(row.aspect)
        if spec is not None and not spec.is_timeseries and (wanted is None or row.aspect in wanted):
            aspects[row.aspect] = enveloped(store, row)
    if entity.key_aspect not in aspects:
        aspects[entity.key_aspect] = {"name": entity.key_aspect, "type": "VERSIONED", "version": 0,
                                      "value": registry.key_value(parsed)}
    return {"entityName": entity.name, "urn": urn, "aspects": aspects}


async def get_entity(request: web.Request) -> web.Response:
    """Rest.li `GET /entitiesV2/{urn}[?aspects=List(a,b)]`."""
    urn = path_urn(request)
    parsed, entity = checked_entity(request, urn)
    require(request, READ, urn)
    return web.json_response(entity_response(_registry(request), _store(request), parsed, entity,
                                             list_param(request, "aspects")))


async def batch_get_entities(request: web.Request) -> web.Response:
    """Rest.li BATCH_GET `GET /entitiesV2?ids=List(urn1,urn2)[&aspects=List(...)]`."""
    ids = list_param(request, "ids")
    if not ids:
        raise refuse(400, "invalid_request", "ids: List(urn,...) is required")
    if len(ids) > MAX_IDS:
        raise refuse(400, "invalid_request", f"ids: {len(ids)} URNs, over the limit of {MAX_IDS}")
    checked = [checked_entity(request, urn, "ids") for urn in dict.fromkeys(ids)]
    for parsed, _ in checked:
        require(request, READ, str(parsed))
    names = list_param(request, "aspects")
    registry, store = _registry(request), _store(request)
    results = {str(parsed): entity_response(registry, store, parsed, entity, names) for parsed, entity in checked}
    return web.json_response({"results": results, "statuses": {}, "errors": {}})


# -- POST /aspects?action=... ---------------------------------------------------------------


async def aspect_action(request: web.Request) -> web.Response:
    """`POST /aspects?action=getTimeseriesAspectValues|getCount` (datahub.py's handler hands them over)."""
    action = request.query.get("action")
    body = await _body(request)
    if action == "getTimeseriesAspectValues":
        return await timeseries_values(request, body)
    if action == "getCount":
        return await aspect_count(request, body)
    raise refuse(400, "unknown_action", f"unknown action {action!r} ({', '.join(ASPECT_ACTIONS)})")


def _criteria(filter_: Any) -> list[list[dict[str, Any]]]:
    """A DataHub filter as OR-ed lists of AND-ed criteria: `{"or": [{"and": [...]}]}` or the
    older `{"criteria": [...]}`; none: one empty clause (everything)."""
    if filter_ is None:
        return [[]]
    if not isinstance(filter_, dict):
        raise refuse(400, "invalid_request", "filter: expected an object")
    clauses = filter_.get("or")
    if clauses is None:
        clauses = [{"and": filter_.get("criteria") or []}]
    if not isinstance(clauses, list) or not all(isinstance(c, dict) and isinstance(c.get("and", []), list)
                                                for c in clauses):
        raise refuse(400, "invalid_request", 'filter: expected {"or": [{"and": [criterion, ...]}, ...]}')
    out = []
    for clause in clauses:
        criteria = clause.get("and", [])
        for criterion in criteria:
            if not isinstance(criterion, dict) or not isinstance(criterion.get("field"), str):
                raise refuse(400, "invalid_request", "filter: every criterion needs a field")
        out.append(criteria)
    return out or [[]]


def _values(criterion: Mapping[str, Any]) -> list[str]:
    values = criterion.get("values")
    if values is None:
        values = [criterion["value"]] if criterion.get("value") is not None else []
    if not isinstance(values, list) or not all(isinstance(v, str | int | float | bool) for v in values):
        raise refuse(400, "invalid_request", f"filter: {criterion['field']}: values must be strings")
    return [_text(v) for v in values]


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _at(value: Any, path: str) -> list[Any]:
    found = [value]
    for name in path.removesuffix(".keyword").split("."):
        found = [item.get(name) for item in found if isinstance(item, dict)]
        found = [x for item in found for x in (item if isinstance(item, list) else [item]) if x is not None]
    return found


_NUMERIC = {"GREATER_THAN": lambda a, b: a > b, "GREATER_THAN_OR_EQUAL_TO": lambda a, b: a >= b,
            "LESS_THAN": lambda a, b: a < b, "LESS_THAN_OR_EQUAL_TO": lambda a, b: a <= b}
_TEXTUAL = {"EQUAL": lambda a, b: a == b, "IN": lambda a, b: a == b, "CONTAIN": lambda a, b: b in a,
            "START_WITH": lambda a, b: a.startswith(b), "END_WITH": lambda a, b: a.endswith(b)}
POINT_CONDITIONS = (*_TEXTUAL, *_NUMERIC, "EXISTS", "IS_NULL")


def _holds(criterion: Mapping[str, Any], urn: str, point: Any) -> bool:
    condition = criterion.get("condition", "EQUAL")
    found = [urn] if criterion["field"] == "urn" else [v for v in _at(point, criterion["field"])
                                                       if not isinstance(v, dict | list)]
    if condition == "EXISTS":
        held = bool(found)
    elif condition == "IS_NULL":
        held = not found
    elif condition in _TEXTUAL:
        wanted = _values(criterion)
        held = any(_TEXTUAL[condition](_text(v), w) for v in found for w in wanted)
    elif condition in _NUMERIC:
        wanted = _values(criterion)
        try:
            held = any(_NUMERIC[condition](float(v), float(w)) for v in found for w in wanted)
        except ValueError:
            raise refuse(400, "invalid_request", f"filter: {criterion['field']}: {condition} needs numbers") from None
    else:
        raise refuse(400, "invalid_request",
                     f"filter: condition {condition!r} is not one of {', '.join(POINT_CONDITIONS)}")
    return held != (criterion.get("negated") is True)


def newest(timeseries: TimeseriesStore, urn: str, aspect: str, start: int | None, end: int | None, keep: int,
            clauses: list[list[dict[str, Any]]]) -> list[Any]:
    """The `keep` newest points within [start, end] that satisfy a clause, newest first. The
    store reads oldest first, so the range is read in pages (each from the last timestamp of the
    one before, the points already read at that timestamp skipped)."""
    kept: list[Any] = []
    low, skip = start, 0
    while True:
        page = timeseries.query(urn, aspect, low, end, _PAGE + skip)
        points = page[skip:]
        kept += [p for p in points if any(all(_holds(c, urn, p) for c in clause) for clause in clauses)]
        kept = kept[-keep:]
        if len(page) < _PAGE + skip or not points:
            break
        last = points[-1].get("timestampMillis") if isinstance(points[-1], dict) else None
        if not isinstance(last, int):
            break
        skip = sum(1 for p in page if isinstance(p, dict) and p.get("timestampMillis") == last)
        low = last
    return kept[::-1]


async def timeseries_values(request: web.Request, body: dict[str, Any]) -> web.Response:
    """`getTimeseriesAspectValues`: the newest points first (`limit`, default 10,000; with
    `latestValue`: only the newest), within startTimeMillis..endTimeMillis, satisfying `filter`
    (DataHub's criteria on the points' fields); each value a JSON string, as DataHub sends it."""
    urn = _field(body, "urn", str, required=True)
    _, entity = checked_entity(request, urn)
    name = _field(body, "aspect", str, required=True)
    spec = _registry(request).aspect(name)
    if spec is None or not spec.is_timeseries:
        raise refuse(400, "invalid_request", f"aspect {name!r} is not a timeseries aspect")
    require(request, READ, urn)
    start = _bounded(body, "startTimeMillis", None, -MAX_MILLIS, MAX_MILLIS)
    end = _bounded(body, "endTimeMillis", None, -MAX_MILLIS, MAX_MILLIS)
    limit = _bounded(body, "limit", MAX_COUNT, 1, MAX_COUNT) or MAX_COUNT
    latest = _field(body, "latestValue", bool, False)
    clauses = _criteria(body.get("filter"))
    for criterion in (c for clause in clauses for c in clause):  # checked before any point is read
        if criterion.get("condition", "EQUAL") not in POINT_CONDITIONS:
            raise refuse(400, "invalid_request", f"filter: condition {criterion.get('condition')!r} is not one of"
                                                 f" {', '.join(POINT_CONDITIONS)}")
        _values(criterion)
    points = [] if name not in entity.aspects else await asyncio.to_thread(
        newest, api_of(request).read_models.timeseries, urn, name, start, end, 1 if latest else limit, clauses)
    values = [{"aspect": {"value": orjson.dumps(p).decode(), "contentType": "application/json"}} for p in points]
    answer: dict[str, Any] = {"entityName": entity.name, "aspectName": name, "limit": limit, "values": values}
    answer |= {k: v for k, v in (("startTimeMillis", start), ("endTimeMillis", end)) if v is not None}
    return web.json_response({"value": answer})


def _count(store: AspectStore, aspect: str, like: LikePattern | None, visible: frozenset[str] | None) -> int:
    count, after = 0, None
    while True:
        rows = list(store.scan_latest(after, 1000))
        for row in rows:
            if row.aspect == aspect and can_read(visible, row.urn) and (like is None or like.matches(row.urn)):
                count += 1
        if len(rows) < 1000:
            return count
        after = (rows[-1].urn, rows[-1].aspect)


async def aspect_count(request: web.Request, body: dict[str, Any]) -> web.Response:
    """`getCount`: how many entities have a live version of the aspect (URN matching `urnLike`,
    SQL LIKE), among those the caller may read. It scans the aspect store."""
    name = _field(body, "aspect", str, required=True)
    if _registry(request).aspect(name) is None:
        raise refuse(400, "unknown_aspect", f"aspect {name!r} is not in the registry")
    like = _field(body, "urnLike", str)
    if like is not None and len(like) > MAX_PATTERN_LENGTH:
        raise refuse(400, "invalid_request", f"urnLike: {len(like)} characters, over the limit of {MAX_PATTERN_LENGTH}")
    visible = readable(request)
    if visible is not None and not visible:  # nothing readable: nothing to scan
        return web.json_response({"value": 0})
    count = await asyncio.to_thread(_count, _store(request), name, LikePattern(like) if like else None, visible)
    return web.json_response({"value": count})


# -- POST /entities?action=... --------------------------------------------------------------


async def entity_action(request: web.Request) -> web.Response:
    """`POST /entities?action=search|listUrns|deleteReferences` (datahub.py's handler hands them over)."""
    action = request.query.get("action")
    body = await _body(request)
    if action == "search":
        return await search(request, body)
    if action == "searchAcrossEntities":
        return await search(request, body, _entity_types(request, body))
    if action == "listUrns":
        return await list_urns(request, body)
    if action == "deleteReferences":
        return await delete_references(request, body)
    raise refuse(400, "unknown_action", f"unknown action {action!r} ({', '.join(ENTITY_ACTIONS)})")


def _entity_type(request: web.Request, body: Mapping[str, Any], required: bool) -> str | None:
    name = _field(body, "entity", str, required=required)
    if name is not None and _registry(request).entity(name) is None:
        raise refuse(400, "unknown_entity_type", f"entity {name!r} is not in the registry")
    return name


def _quoted(value: str) -> str:
    if '"' in value:
        raise refuse(400, "invalid_request", f"filter: a value may not hold a double quote: {value!r}")
    return f'"{value}"'


def _filter_terms(criterion: Mapping[str, Any]) -> list[str]:
    """The search-language filters one criterion may be (any one of them): `key:"value"` per value."""
    field = criterion["field"].removesuffix(".keyword")
    condition = criterion.get("condition", "EQUAL")
    if criterion.get("negated") is True or condition not in ("EQUAL", "IN", "START_WITH"):
        raise refuse(400, "invalid_request", f"filter: {field}: only EQUAL, IN and START_WITH (not negated) are"
                                             " supported in search")
    if not re.fullmatch(r"[A-Za-z][\w.-]*", field):
        raise refuse(400, "invalid_request", f"filter: {field!r} is not a field name")
    terms = []
    for value in _values(criterion):
        key = field
        if field == "customProperties" and "=" in value:  # DataHub's "key=value" of a map
            key, value = value.split("=", 1)
            if not re.fullmatch(r"[A-Za-z][\w.-]*", key):
                raise refuse(400, "invalid_request", f"filter: customProperties key {key!r} is not searchable")
        if condition == "START_WITH":
            if not value or not re.fullmatch(r"[^\s\"*]+", value):
                raise refuse(400, "invalid_request", f"filter: {field}: START_WITH needs one word")
            terms.append(f"{key}:{value}*")
        else:
            terms.append(f"{key}:{_quoted(value)}")
    return terms


def search_queries(text: str, filter_: Any) -> list[str]:
    """Lodestar's search queries that together find what a DataHub search (input and filter) finds."""
    base = "" if text.strip() in ("", "*") else text
    queries: list[str] = []
    for clause in _criteria(filter_):
        options = [_filter_terms(c) for c in clause]
        if any(not terms for terms in options):
            continue  # a criterion without values matches nothing
        for chosen in product(*options):
            queries.append(" ".join([base, *chosen]).strip() or "*")
            if len(queries) > _EXPANSIONS:
                raise refuse(400, "invalid_request", f"filter: more than {_EXPANSIONS} alternatives")
    return list(dict.fromkeys(queries))


def _entity_types(request: web.Request, body: Mapping[str, Any]) -> list[str] | None:
    """`searchAcrossEntities`' `entities`: entity types (none or empty: every type)."""
    names = body.get("entities")
    if names is None or names == []:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise refuse(400, "invalid_request", "entities: must be a list of entity type names")
    unknown = [n for n in names if _registry(request).entity(n) is None]
    if unknown:
        raise refuse(400, "unknown_entity_type", f"entities: {', '.join(map(repr, unknown))} not in the registry")
    return names


async def search(request: web.Request, body: dict[str, Any], types: list[str] | None = None) -> web.Response:
    """`search`: `{"input", "entity", "start", "count", "filter"}` answered from the search index,
    as DataHub's SearchResult (`numEntities`, `entities[].entity`); `searchAcrossEntities` the
    same over the entity `types` it names."""
    entity = _entity_type(request, body, required=False)
    text = _field(body, "input", str, "*")
    start = _bounded(body, "start", 0, 0, MAX_START) or 0
    count = _bounded(body, "count", 10, 0, MAX_COUNT)
    count = 10 if count is None else count
    queries = search_queries(text, body.get("filter"))
    index, within, types = api_of(request).read_models.search, readable_within(request), [entity] if entity else types
    try:
        if len(queries) == 1:
            result = index.query(queries[0], types, start, count, within=within)
            total, hits = result.total, result.hits
        else:  # alternatives: each one's first start + count hits, merged in URN order
            found: dict[str, Any] = {}
            for query in queries:
                for hit in index.query(query, types, 0, min(start + count, MAX_COUNT), sort="urn", within=within).hits:
                    found.setdefault(hit.urn, hit)
            ordered = [found[urn] for urn in sorted(found)]
            total, hits = len(ordered), ordered[start:start + count]
    except ValueError as err:
        raise refuse(400, "invalid_request", str(err)) from None
    entities = [{"entity": hit.urn, "matchedFields": [{"name": m["field"], "value": m["value"]} for m in hit.matches]}
                for hit in hits]
    return web.json_response({"value": {"numEntities": total, "from": start, "pageSize": count, "entities": entities,
                                        "metadata": {"aggregations": []}}})


async def list_urns(request: web.Request, body: dict[str, Any]) -> web.Response:
    """`listUrns`: `{"entity", "start", "count"}`, the entities of a type in URN order (soft-deleted
    ones included, as DataHub lists them), from the search index."""
    entity = _entity_type(request, body, required=True)
    start = _bounded(body, "start", 0, 0, MAX_START) or 0
    count = _bounded(body, "count", 10, 0, MAX_COUNT)
    count = 10 if count is None else count
    result = api_of(request).read_models.search.query("*", [entity] if entity else None, start, count, True,
                                                      "urn", within=readable_within(request))
    return web.json_response({"value": {"entities": [hit.urn for hit in result.hits], "start": start,
                                        "count": len(result.hits), "total": result.total}})


# -- relationships --------------------------------------------------------------------------


def incoming(api: Api, relationships: Relationships, urn: str, types: Iterable[str], within: Expr | None
             ) -> list[tuple[str, str, str]]:
    """(relationship type, entity, aspect) of what points at `urn`: lineage relationships from
    the lineage graph, the others from the search index, confirmed by the stored aspects."""
    types, entity_type = list(types), entity_type_of(urn)
    found: dict[tuple[str, str, str], None] = {}
    lineage = relationships.lineage_names(types, entity_type)
    if lineage:
        for edge in api.read_models.lineage.query(urn, "both", 1).edges:
            if edge.type not in lineage:
                continue
            if relationships.flows_out(edge.via, edge.type):
                if edge.destination == urn:
                    found.setdefault((edge.type, edge.source, edge.via))
            elif edge.source == urn:
                found.setdefault((edge.type, edge.destination, edge.via))
    for key, names in relationships.search_keys(types, entity_type).items():
        for start in range(0, MAX_START, MAX_COUNT):  # every candidate, a page at a time
            hits = api.read_models.search.query(f'{key}:"{urn}"', None, start, MAX_COUNT, sort="urn",
                                                within=within).hits
            for hit in hits:
                rows = api.gms.store.entity(hit.urn)
                for name, target, aspect in relationships.outgoing(((r.aspect, r.value) for r in rows),
                                                                   sorted(names)):
                    if target == urn:
                        found.setdefault((name, hit.urn, aspect))
            if len(hits) < MAX_COUNT:
                break
    return list(found)


async def related_entities(request: web.Request) -> web.Response:
    """`GET /openapi/relationships/v1/?urn=&direction=INCOMING|OUTGOING&relationshipTypes=&start=&count=`."""
    urn = request.query.get("urn", "")
    checked_entity(request, urn)
    require(request, READ, urn)
    direction = request.query.get("direction", "OUTGOING").upper()
    if direction not in ("INCOMING", "OUTGOING"):
        raise refuse(400, "invalid_request", "direction: INCOMING or OUTGOING")
    start = int_param(request, "start", 0, 0, MAX_START) or 0
    count = int_param(request, "count", 200, 1, MAX_COUNT) or 200
    api, relationships = api_of(request), relationships_of(_registry(request))
    asked = list_param(request, "relationshipTypes")
    types = [t for t in asked if t in relationships.by_name] if asked else relationships.names()
    if direction == "OUTGOING":
        rows = api.gms.store.entity(urn)
        found = [(name, target) for name, target, _ in relationships.outgoing(((r.aspect, r.value) for r in rows),
                                                                               types)]
    else:
        unanswerable = relationships.incoming_unanswerable(types, entity_type_of(urn))
        if asked and unanswerable:
            raise refuse(400, "invalid_request", f"relationshipTypes: incoming {', '.join(unanswerable)} cannot be"
                                                 " answered (no lineage edge or searchable field holds them)")
        found = [(name, source) for name, source, _ in await asyncio.to_thread(
            incoming, api, relationships, urn, [t for t in types if t not in unanswerable], readable_within(request))]
    visible = readable(request)
    listed = sorted({pair for pair in found if can_read(visible, pair[1])})
    page = listed[start:start + count]
    return web.json_response({"start": start, "count": len(page), "total": len(listed),
                              "entities": [{"relationshipType": name, "urn": other} for name, other in page]})


# -- deleteReferences -----------------------------------------------------------------------


def _references(api: Api, relationships: Relationships, urn: str, within: Expr | None,
                visible: frozenset[str] | None) -> list[tuple[str, str, str]]:
    unanswerable = relationships.incoming_unanswerable(relationships.names(), entity_type_of(urn))
    types = [t for t in relationships.names() if t not in unanswerable]
    return sorted(r for r in incoming(api, relationships, urn, types, within) if can_read(visible, r[1]))


def _removal(registry: EntityRegistry, relationships: Relationships, row: StoredAspect, urn: str) -> dict[str, Any]:
    """The MCP that removes `urn` from one stored aspect, conditional on its version: an UPSERT
    of the value without it, or a DELETE of the aspect when the value would be invalid."""
    value = row.value
    for field in relationships.by_aspect.get(row.aspect, ()):
        if urn in field.urns(value):
            value = without_references(value, field.path, urn)
    mcp: dict[str, Any] = {"entityUrn": row.urn, "aspectName": row.aspect,
                           "headers": {"If-Version-Match": str(row.version)}}
    try:
        registry.aspects[row.aspect].check(value)
    except (ValueError, KeyError):
        return {**mcp, "changeType": "DELETE"}
    return {**mcp, "changeType": "UPSERT", "aspect": {"value": json.dumps(value), "contentType": "application/json"}}


async def delete_references(request: web.Request, body: dict[str, Any]) -> web.Response:
    """`deleteReferences`: `{"urn", "dryRun"}`. The aspects that refer to the entity (as incoming
    relationships find them), and, unless a dry run, those references removed from each (one
    conditional write per aspect, as the caller)."""
    urn = _field(body, "urn", str, required=True)
    checked_entity(request, urn)
    require(request, READ, urn)
    dry = _field(body, "dryRun", bool, False)
    api, relationships = api_of(request), relationships_of(_registry(request))
    found = await asyncio.to_thread(_references, api, relationships, urn, readable_within(request), readable(request))
    related = [{"relationshipType": name, "entity": entity, "aspect": aspect} for name, entity, aspect in found]
    if not dry and found:
        rows = [api.gms.store.get(entity, aspect) for entity, aspect in dict.fromkeys((e, a) for _, e, a in found)]
        mcps = [_removal(api.gms.registry, relationships, row, urn) for row in rows if row is not None and row.exists]
        parsed: list[Any] = []
        for mcp in mcps:
            try:
                parsed.append(parse_proposal(mcp))
            except ProposalError as err:
                parsed.append(err)
        results = await api.apply(parsed, principal_of(request), {})
        failed = [(m, r.failure) for m, r in zip(mcps, results, strict=True) if r.failure is not None]
        if failed:  # e.g. 403 (no WRITE on a referring entity), 412 (it changed since it was read)
            mcp, failure = failed[0]
            assert failure is not None
            return error(failure.http_status, failure.code,
                         f"{len(failed)} of {len(mcps)} aspects kept their references; {mcp['aspectName']} of"
                         f" {mcp['entityUrn']}: {failure.message}", relatedAspects=related)
    return web.json_response({"value": {"total": len(related), "relatedAspects": related}})


# -- timeline -------------------------------------------------------------------------------


async def get_timeline(request: web.Request) -> web.Response:
    """`GET /openapi/v2/timeline/v1/{urn}?categories=TAG,OWNERSHIP&startTime=&endTime=&raw=`."""
    urn = path_urn(request)
    _, entity = checked_entity(request, urn)
    require(request, READ, urn)
    asked = list_param(request, "categories") or []
    categories, unknown = category_names(asked)
    if unknown or not categories:
        raise refuse(400, "invalid_request", f"categories: {', '.join(unknown) or 'none given'}; supported:"
                                             f" {', '.join(CATEGORIES)} (OWNER for OWNERSHIP)")
    start = int_param(request, "startTime", None, -MAX_MILLIS, MAX_MILLIS)
    end = int_param(request, "endTime", None, -MAX_MILLIS, MAX_MILLIS)
    raw = bool_param(request, "raw")
    store = _store(request)
    histories = {aspect: store.history(urn, aspect) for aspect in aspects_read(categories, entity.aspects)}
    return web.json_response(timeline(urn, histories, categories, start, end, raw))


# -- registry -------------------------------------------------------------------------------


def _aspect_spec(spec: AspectSpec) -> dict[str, Any]:
    annotation = {k: v for k, v in (spec.schema.get("Aspect") or {}).items() if k != "entityAspects"}
    return {"aspectAnnotation": {**annotation, "name": spec.name, "timeseries": spec.is_timeseries,
                                 "autoRender": bool(annotation.get("autoRender", False))},
            "name": spec.name, "kind": spec.kind, "schemaName": spec.schema_name}


def specifications(registry: EntityRegistry) -> Iterator[dict[str, Any]]:
    for name in sorted(registry.entities):
        entity = registry.entities[name]
        yield {"name": name, "keyAspectName": entity.key_aspect, "doc": entity.doc,
               "entityAnnotation": {"name": name, "keyAspect": entity.key_aspect},
               "keyAspectSpec": _aspect_spec(registry.aspects[entity.key_aspect]),
               "aspectSpecs": [_aspect_spec(registry.aspects[a]) for a in entity.aspects]}


async def entity_specifications(request: web.Request) -> web.Response:
    """`GET /openapi/v1/registry/models/entity/specifications?start=&count=`: the registry's entities,
    each with its key aspect and aspects (name, timeseries, schemaVersion), a page at a time."""
    start = int_param(request, "start", 0, 0, MAX_START) or 0
    count = int_param(request, "count", 20, 1, MAX_COUNT) or 20
    elements = list(specifications(_registry(request)))
    page = elements[start:start + count]
    return web.json_response({"start": start, "count": len(page), "total": len(elements), "elements": page})


# -- the routes -----------------------------------------------------------------------------


_PAGING = [query_param("start", kind="integer", minimum=0, maximum=MAX_START),
           query_param("count", kind="integer", minimum=1, maximum=MAX_COUNT)]
_READ_ANSWERS = {"200": response("The answer", OBJECT), "400": response("Invalid parameter"),
                 "403": response("The caller may not read it")}
_RELATIONSHIPS = {"get": {
    "summary": "DataHub's related entities: relationships of a type from (OUTGOING) or to (INCOMING) an entity",
    "parameters": [query_param("urn", required=True), query_param("direction", enum=["INCOMING", "OUTGOING"]),
                   query_param("relationshipTypes", "Repeated, or List(a,b)"), *_PAGING],
    "responses": _READ_ANSWERS}}
OPENAPI_PATHS: dict[str, Any] = {
    "/aspects/{urn}": {"get": {
        "summary": "DataHub Rest.li: one version of an aspect as {\"aspect\": {\"<record name>\": value}, \"version\"}",
        "parameters": [URN, query_param("aspect", required=True),
                       query_param("version", "0 (default): the latest", kind="integer", minimum=0,
                                   maximum=MAX_VERSION)],
        "responses": {**_READ_ANSWERS, "404": response("No such aspect or version")}}},
    "/entitiesV2/{urn}": {"get": {
        "summary": "DataHub Rest.li: the latest version of every aspect (or of aspects=List(a,b)), enveloped",
        "parameters": [URN, query_param("aspects", "List(a,b)")], "responses": _READ_ANSWERS}},
    "/entitiesV2": {"get": {
        "summary": "DataHub Rest.li batch get: ids=List(urn1,urn2), each URN URL-encoded",
        "parameters": [query_param("ids", "List(urn1,urn2)", required=True), query_param("aspects", "List(a,b)")],
        "responses": _READ_ANSWERS}},
    "/openapi/relationships/v1/": _RELATIONSHIPS,  # as DataHub's client asks
    "/openapi/relationships/v1": _RELATIONSHIPS,
    "/openapi/v2/timeline/v1/{urn}": {"get": {
        "summary": "DataHub's timeline: change transactions of the entity's aspect versions, by category",
        "parameters": [URN, query_param("categories", f"Comma-separated: {', '.join(CATEGORIES)}", required=True),
                       query_param("startTime", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                       query_param("endTime", kind="integer", minimum=-MAX_MILLIS, maximum=MAX_MILLIS),
                       query_param("raw", kind="boolean")],
        "responses": {**_READ_ANSWERS, "200": response("The transactions, oldest first", {"type": "array"})}}},
    "/openapi/v1/registry/models/entity/specifications": {"get": {
        "summary": "The registry's entities with their key aspect and aspects, a page at a time",
        "parameters": _PAGING, "responses": {"200": response("One page of entities", OBJECT),
                                             "400": response("Invalid parameter")}}},
}


def add_routes(app: web.Application) -> None:
    app.router.add_get("/aspects/{urn}", get_aspect)
    app.router.add_get("/entitiesV2/{urn}", get_entity)
    app.router.add_get("/entitiesV2", batch_get_entities)
    app.router.add_get("/openapi/relationships/v1/", related_entities)
    app.router.add_get("/openapi/relationships/v1", related_entities)
    app.router.add_get("/openapi/v2/timeline/v1/{urn}", get_timeline)
    app.router.add_get("/openapi/v1/registry/models/entity/specifications", entity_specifications)
