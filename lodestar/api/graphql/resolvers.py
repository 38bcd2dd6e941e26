"""The root fields of the GraphQL schema (schema.graphql): searches, lineage searches, entities
by URN and `createTag`, and the field resolver every other field goes through."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo

import lodestar.api.graphql.assertions as assertions
import lodestar.api.graphql.browse as browse
import lodestar.api.graphql.edits as edits
import lodestar.api.graphql.incidents as incidents
import lodestar.api.graphql.ingestion as ingestion
import lodestar.api.graphql.lineage as lineage
import lodestar.api.graphql.managed as managed
import lodestar.api.graphql.policies as policies
import lodestar.api.graphql.products as products
import lodestar.api.graphql.recommendations as recommendations
import lodestar.api.graphql.relationships as relationships
import lodestar.api.graphql.secret_values as secret_values
import lodestar.api.graphql.tokens as tokens
import lodestar.api.graphql.versioning as versioning
from gms.access import principal_urn
from gms.structured_properties import property_state, stored
from ingest.proposal import Proposal
from lodestar.api.graphql.entities import (
    ENTITY_TYPES,
    Context,
    EntityRef,
    entity_type_of,
    enum_of,
    lodestar_type,
    ref,
    resolve_entity_field,
)
from lodestar.api.graphql.filters import Branch, branches, with_flags
from lodestar.api.graphql.lineage_through import Through
from lodestar.api.graphql.search import Page, Search, Searcher, query_text
from lodestar.api.limits import MAX_COUNT, MAX_START
from mcl_processor.search.cdap import RESOURCE, Expr, any_of

URN_FACETS = {"platform": "dataPlatform", "tags": "tag", "glossaryTerms": "glossaryTerm", "domains": "domain",
              "container": "container"}  # facets of URNs the index keeps as their ids
FACET_NAMES = {"entityType": "_entityType"}
HIDDEN_FACETS = frozenset({"keys"})  # Lodestar's own: the keys of properties maps
GROUPED_INTO = frozenset({"SCHEMA_FIELD", "DATASET"})  # groupingSpec's names for "schema fields as their datasets"


def forbidden(urn: str) -> GraphQLError:
    return GraphQLError(f"forbidden: the caller may not read {urn}", extensions={"code": 403})


# -- inputs ----------------------------------------------------------------------------------

def _types(names: Any) -> frozenset[str] | None:
    return frozenset(lodestar_type(n) for n in names) if names else None


def _count(value: Any, default: int = 10) -> int:
    count = default if value is None else value
    if not 0 <= count <= MAX_COUNT:
        raise GraphQLError(f"count: must be between 0 and {MAX_COUNT}, not {count}")
    return count


def _start(value: Any) -> int:
    start = value or 0
    if not 0 <= start <= MAX_START:
        raise GraphQLError(f"start: must be between 0 and {MAX_START}, not {start}")
    return start


_SORT_FIELDS = {"urn": "urn", "name": "name", "_name": "name", "name.keyword": "name", "_score": "relevance"}


def _sort(sort_input: Mapping[str, Any] | None, default: str) -> str:
    criteria = [c for c in [*((sort_input or {}).get("sortCriteria") or []), (sort_input or {}).get("sortCriterion")]
                if c]
    if not criteria:
        return default
    if len(criteria) > 1:
        raise GraphQLError("sortInput: one sort criterion is supported")
    field, order = criteria[0]["field"], criteria[0]["sortOrder"]
    sort = _SORT_FIELDS.get(field)
    if sort is None:
        raise GraphQLError(f"sortInput: sorting by {field!r} is not supported (urn, name or _score)")
    if sort == "relevance":
        return sort
    return sort if order == "ASCENDING" else f"-{sort}"


def _check_flags(flags: Mapping[str, Any]) -> None:
    if flags.get("fetchExtraFields"):
        raise GraphQLError("searchFlags.fetchExtraFields is not supported by Lodestar")
    grouping = (flags.get("groupingSpec") or {}).get("groupingCriteria")
    if grouping:
        raise GraphQLError("searchFlags.groupingSpec is supported in lineage searches only")


def _within(ctx: Context) -> Expr | None:
    return None if ctx.readable is None else any_of(RESOURCE, sorted(ctx.readable))


def _searcher(ctx: Context, given: Mapping[str, Any], types: Any, default_sort: str) -> Searcher:
    flags = given.get("searchFlags") or {}
    _check_flags(flags)
    if given.get("viewUrn"):
        raise GraphQLError("viewUrn: views are not supported by Lodestar")
    index = ctx.api.read_models.search
    found = with_flags(branches(given.get("orFilters"), given.get("filters"), index.annotations,
                                property_state=_property_state(ctx)),
                       flags.get("includeSoftDeleted"))
    wanted = _types(types)
    if wanted is not None:
        found = [b for b in (x.and_(Branch(types=wanted)) for x in found) if b is not None]
    sort = _sort(given.get("sortInput"), default_sort)
    if sort == "relevance" and len(found) > 1:
        sort = "urn"  # alternatives are merged in URN order
    search = Search(query_text(given.get("query")), found, _within(ctx), sort)
    return Searcher(index, search, skip_facets=bool(flags.get("skipAggregates")))


def _max_values(given: Mapping[str, Any]) -> int | None:
    return (given.get("searchFlags") or {}).get("maxAggValues")


# -- answers ---------------------------------------------------------------------------------

def _hits(page: Page) -> list[dict[str, Any]]:
    return [{"entity": EntityRef(h.urn), "insights": [], "extraProperties": [],
             "matchedFields": [{"name": m.get("field", ""), "value": m.get("value", "")} for m in h.matches]}
            for h in page.hits]


def _facets(ctx: Context, counted: Callable[[], dict[str, list[tuple[str, int]]]],
             max_values: int | None) -> Callable[[], list[dict[str, Any]]]:
    def facets() -> list[dict[str, Any]]:
        out = []
        for name, values in counted().items():
            if name in HIDDEN_FACETS:
                continue
            shown = values if max_values is None else values[:max(0, max_values)]
            out.append({"field": FACET_NAMES.get(name, name), "displayName": name, "entity": None,
                        "showInDefaults": True, "aggregations": [_aggregation(ctx, name, v, c) for v, c in shown]})
        return out
    return facets


def _aggregation(ctx: Context, facet: str, value: str, count: int) -> dict[str, Any]:
    if facet == "entityType":
        shown = enum_of(value) if value in ENTITY_TYPES else value.upper()
        return {"value": shown, "count": count, "displayName": value, "entity": None}
    if facet in URN_FACETS and not value.startswith("urn:li:"):
        value = f"urn:li:{URN_FACETS[facet]}:{value}"
    elif facet == "owners" and not value.startswith("urn:li:"):
        group = f"urn:li:corpGroup:{value}"
        value = group if ctx.aspects(group) else f"urn:li:corpuser:{value}"
    return {"value": value, "count": count, "displayName": None, "entity": ref(value)}


def search_across_entities(ctx: Context, given: Mapping[str, Any], types: Any = None) -> dict[str, Any]:
    searcher = _searcher(ctx, given, given.get("types") if types is None else types, "relevance")
    start, count = _start(given.get("start")), _count(given.get("count"))
    page = searcher.page(start, count)
    return {"start": start, "count": len(page.hits), "total": page.total, "searchResults": _hits(page),
            "facets": _facets(ctx, page.facets, _max_values(given))}


def scroll_across_entities(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    searcher = _searcher(ctx, given, given.get("types"), "urn")
    page = searcher.scroll(given.get("scrollId"), _count(given.get("count")))
    return {"nextScrollId": page.next_cursor, "count": len(page.hits), "total": page.total,
            "searchResults": _hits(page), "facets": _facets(ctx, page.facets, _max_values(given))}


def _property_state(ctx: Context) -> Callable[[str], str]:
    """Whether a structured property is live, soft-deleted or absent, read from the aspect store."""
    lookup = stored(ctx.api.gms.store)
    return lambda urn: property_state(lookup, urn)


def _lineage_nodes(ctx: Context, given: Mapping[str, Any]) -> tuple[list[lineage.Node], str]:
    urn = given.get("urn")
    if not urn:
        raise GraphQLError("urn: the entity whose lineage to search is required")
    if not ctx.may_read(urn):
        raise forbidden(urn)
    flags, lineage_flags = given.get("searchFlags") or {}, given.get("lineageFlags") or {}
    for name in ("startTimeMillis", "endTimeMillis"):
        if given.get(name) is not None or lineage_flags.get(name) is not None:
            raise GraphQLError(f"{name}: lineage in a time window is not supported by Lodestar's lineage graph")
    if lineage_flags.get("ignoreAsHops"):
        raise GraphQLError("lineageFlags.ignoreAsHops is not supported by Lodestar")
    if flags.get("fetchExtraFields"):
        raise GraphQLError("searchFlags.fetchExtraFields is not supported by Lodestar")
    criteria = (flags.get("groupingSpec") or {}).get("groupingCriteria") or []
    for c in criteria:  # the SDK names the grouping SCHEMA_FIELD -> SCHEMA_FIELD, DataHub's UI SCHEMA_FIELD -> DATASET
        if c.get("groupingEntityType") not in GROUPED_INTO or c.get("baseEntityType") not in (None, "SCHEMA_FIELD"):
            raise GraphQLError("searchFlags.groupingSpec: only the grouping of SCHEMA_FIELD into its dataset is"
                               " supported (groupingEntityType SCHEMA_FIELD or DATASET)")
    index = ctx.api.read_models.search
    found = with_flags(branches(given.get("orFilters"), given.get("filters"), index.annotations, lineage=True,
                                property_state=_property_state(ctx)),
                       flags.get("includeSoftDeleted"))
    direction = given["direction"].lower()
    graph = ctx.api.read_models.lineage
    nodes = lineage.walk(graph, urn, direction, lineage.max_hops(found), ctx.readable, bool(criteria),
                         Through(graph, ctx.aspect, ctx.may_read))
    nodes = lineage.kept(nodes, found, given.get("query"), index, _within(ctx), _types(given.get("types")))
    key = json.dumps([urn, direction, query_text(given.get("query")), bool(criteria), sorted(given.get("types") or []),
                      [[list(b.terms), sorted(b.types or []), b.removed, sorted(b.urns or []),
                        sorted(b.degrees or [])] for b in found]], sort_keys=True)
    return nodes, hashlib.sha256(key.encode()).hexdigest()[:16]


def search_across_lineage(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    nodes, _ = _lineage_nodes(ctx, given)
    start, count = _start(given.get("start")), _count(given.get("count"))
    shown = nodes[start:start + count]
    return {"start": start, "count": len(shown), "total": len(nodes), "searchResults": lineage.results(shown),
            "facets": _lineage_facets(ctx, given, nodes)}


def scroll_across_lineage(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    nodes, key = _lineage_nodes(ctx, given)
    count = _count(given.get("count"))
    offset = _lineage_offset(given.get("scrollId"), key)
    shown = nodes[offset:offset + count]
    end = offset + len(shown)
    cursor = None
    if shown and end < len(nodes):
        cursor = base64.urlsafe_b64encode(json.dumps({"k": key, "o": end}).encode()).decode().rstrip("=")
    return {"nextScrollId": cursor, "count": len(shown), "total": len(nodes), "searchResults": lineage.results(shown),
            "facets": _lineage_facets(ctx, given, nodes)}


def _lineage_offset(cursor: str | None, key: str) -> int:
    if not cursor:
        return 0
    try:
        found = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if found["k"] == key and isinstance(found["o"], int) and found["o"] >= 0:
            return found["o"]
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        pass
    raise GraphQLError("scrollId: not a scroll position of this lineage search (pass back the nextScrollId of the"
                       " same input)")


def _lineage_facets(ctx: Context, given: Mapping[str, Any], nodes: list[lineage.Node]
                    ) -> Callable[[], list[dict[str, Any]]]:
    if (given.get("searchFlags") or {}).get("skipAggregates"):
        return lambda: []
    return _facets(ctx, lambda: lineage.facets(nodes), _max_values(given))


# -- entities --------------------------------------------------------------------------------

def entity(ctx: Context, urn: str, expected: str | None = None) -> EntityRef | None:
    kind = entity_type_of(urn)
    if expected is not None and kind != expected:
        raise GraphQLError(f"urn: {urn!r} is not a {expected} URN")
    if kind not in ENTITY_TYPES:
        raise GraphQLError(f"urn: entity type {kind!r} of {urn!r} is not served by Lodestar's GraphQL API")
    if not ctx.may_read(urn):
        raise forbidden(urn)
    return EntityRef(urn) if ctx.aspects(urn) else None


def entities(ctx: Context, urns: list[str]) -> list[EntityRef | None]:
    """Each URN's entity; null for one with nothing stored, of a type not served or not readable."""
    return [EntityRef(u) if ref(u) is not None and ctx.aspects(u) else None for u in urns]


def create_tag(ctx: Context, given: Mapping[str, Any]) -> str:
    tag_id = given.get("id") or str(uuid.uuid4())
    urn = f"urn:li:tag:{tag_id}"
    properties = {"name": given["name"]}
    if given.get("description") is not None:
        properties["description"] = given["description"]
    try:
        edits.write(ctx, Proposal("tag", urn, "CREATE_ENTITY", "tagProperties", properties))
    except GraphQLError as err:
        if (err.extensions or {}).get("error") == "entity_exists":
            raise GraphQLError(f"tag {urn} already exists", extensions=err.extensions) from None
        raise
    owner = {"owner": principal_urn(ctx.principal), "type": "TECHNICAL_OWNER"}
    edits.write(ctx, Proposal("tag", urn, "UPSERT", "ownership", {"owners": [owner]}))
    return urn


def container_entities(r: EntityRef, ctx: Context, input: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The entities whose `container` aspect names this container, searched as searchAcrossEntities."""
    given = dict(input or {})
    given["filters"] = [*(given.get("filters") or []), {"field": "container", "values": [r.urn]}]
    return search_across_entities(ctx, {**given, "query": given.get("query") or "*"})


def list_of(ctx: Context, given: Mapping[str, Any], entity_type: str, listed: str) -> dict[str, Any]:
    """One page of the entities of a type (listDomains, listTests, ...): {start, count, total, <listed>}."""
    found = search_across_entities(ctx, {"query": given.get("query") or "*", "start": given.get("start"),
                                         "count": given.get("count"), "types": [entity_type],
                                         "searchFlags": {"skipAggregates": True}})
    return {"start": found["start"], "count": found["count"], "total": found["total"],
            listed: [hit["entity"] for hit in found["searchResults"]]}


# entity fields answered by a search, or by other modules than entities.py
SEARCHES: dict[tuple[str, str], Callable[..., Any]] = {
    ("Container", "entities"): container_entities,
    ("Dataset", "assertions"): lambda r, ctx, **args: assertions.assertions_of(r, ctx, search_across_entities, **args),
    ("Assertion", "runEvents"): assertions.run_events,
    ("Assertion", "info"): assertions.assertion_info,
    ("Dataset", "incidents"): lambda r, ctx, **args: incidents.incidents_of(r, ctx, search_across_entities, **args),
    ("VersionSet", "versionsSearch"): lambda r, ctx, input: versioning.versions_search(r, ctx, input,
                                                                                        search_across_entities),
}


def _typed(entity_type: str) -> Callable[[Context, Mapping[str, Any]], EntityRef | None]:
    return lambda ctx, args: entity(ctx, args["urn"], entity_type)


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "searchAcrossEntities": lambda ctx, args: search_across_entities(ctx, args["input"]),
    "scrollAcrossEntities": lambda ctx, args: scroll_across_entities(ctx, args["input"]),
    "search": lambda ctx, args: search_across_entities(ctx, args["input"], [args["input"]["type"]]),
    "searchAcrossLineage": lambda ctx, args: search_across_lineage(ctx, args["input"]),
    "scrollAcrossLineage": lambda ctx, args: scroll_across_lineage(ctx, args["input"]),
    "browse": lambda ctx, args: browse.browse(ctx, args["input"], search_across_entities),
    "entity": lambda ctx, args: entity(ctx, args["urn"]),
    "entities": lambda ctx, args: entities(ctx, args["urns"]),
    "createTag": lambda ctx, args: create_tag(ctx, args["input"]),
    **tokens.ROOT,
    **edits.ROOT,
    "listDomains": lambda ctx, args: list_of(ctx, args["input"], "DOMAIN", "domains"),
    "listTests": lambda ctx, args: list_of(ctx, args["input"], "TEST", "tests"),
    "listGroups": lambda ctx, args: list_of(ctx, args["input"], "CORP_GROUP", "groups"),
    "listGlobalViews": lambda ctx, args: managed.list_views(ctx, args["input"], "GLOBAL", False,
                                                            search_across_entities),
    "listMyViews": lambda ctx, args: managed.list_views(ctx, args["input"], args["input"].get("viewType"), True,
                                                        search_across_entities),
    **managed.ROOT,
    **products.ROOT,
    **incidents.ROOT,
    **ingestion.ROOT,
    **secret_values.ROOT,
    **assertions.ROOT,
    "listRecommendations": lambda ctx, args: recommendations.list_recommendations(ctx, args["input"],
                                                                                  search_across_entities),
    **policies.ROOT,
    **{field: _typed(name) for field, name in {
        "dataset": "dataset", "dataJob": "dataJob", "dataFlow": "dataFlow", "chart": "chart", "dashboard": "dashboard",
        "container": "container", "corpUser": "corpuser", "corpGroup": "corpGroup", "tag": "tag",
        "glossaryTerm": "glossaryTerm", "glossaryNode": "glossaryNode", "domain": "domain",
        "dataPlatform": "dataPlatform", "dataProduct": "dataProduct", "mlModel": "mlModel",
        "mlModelGroup": "mlModelGroup", "mlFeature": "mlFeature", "mlFeatureTable": "mlFeatureTable",
        "mlPrimaryKey": "mlPrimaryKey", "test": "test", "versionSet": "versionSet"}.items()},
}


def resolve(source: Any, info: GraphQLResolveInfo, **args: Any) -> Any:
    """Every field: a root field by ROOT, an entity's by entities.py, anything else from the
    dict that holds it (a callable value is computed only when the field is asked for, given
    the field's arguments)."""
    if info.parent_type.name in ("Query", "Mutation"):
        fn = ROOT.get(info.field_name)
        if fn is None:
            raise GraphQLError(f"{info.parent_type.name}.{info.field_name} is not served by Lodestar")
        return fn(info.context, args)
    if isinstance(source, EntityRef):
        if info.parent_type.name == "Incident" and info.field_name not in ("urn", "type"):
            return incidents.incident_field(source, info.context, info.field_name)
        if (searched := SEARCHES.get((info.parent_type.name, info.field_name))) is not None:
            return searched(source, info.context, **args)
        if info.field_name == "relationships":
            return relationships.relationships(source, info.context, args["input"])
        return resolve_entity_field(source, info.context, info.parent_type.name, info.field_name, args)
    value = source.get(info.field_name) if isinstance(source, Mapping) else getattr(source, info.field_name, None)
    return value(**args) if callable(value) else value
