"""`relationships(input: {types, direction, start, count})` of an entity: the relationships the
aspect schemas annotate, answered as DataHub's relationships route answers them
(lodestar/api/datahub_relationships.py; OUTGOING from the entity's stored aspects, INCOMING from
the lineage graph and the search index), holding only what the caller may read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import can_read
from lodestar.api.datahub_reads import incoming
from lodestar.api.datahub_relationships import relationships_of
from lodestar.api.graphql.entities import Context, EntityRef, entity_type_of, ref
from lodestar.api.limits import MAX_COUNT, MAX_START
from mcl_processor.search.cdap import RESOURCE, any_of


def relationships(r: EntityRef, ctx: Context, given: Mapping[str, Any]) -> dict[str, Any] | None:
    if not ctx.may_read(r.urn):
        return None
    known = relationships_of(ctx.api.gms.registry)
    types = [t for t in given["types"] if t in known.by_name]
    direction = given["direction"]
    start, count = given.get("start") or 0, given.get("count")
    count = 100 if count is None else count
    if not 0 <= start <= MAX_START or not 0 <= count <= MAX_COUNT:
        raise GraphQLError(f"relationships: start from 0 to {MAX_START}, count from 0 to {MAX_COUNT}")
    if direction == "OUTGOING":
        rows = ((row.aspect, row.value) for row in ctx.api.gms.store.entity(r.urn) if row.exists)
        found = [(name, other) for name, other, _ in known.outgoing(rows, types)]
    else:
        unanswerable = known.incoming_unanswerable(types, entity_type_of(r.urn))
        if unanswerable:
            raise GraphQLError(f"relationships: incoming {', '.join(unanswerable)} cannot be answered (no lineage"
                               " edge or searchable field holds them)")
        within = None if ctx.readable is None else any_of(RESOURCE, sorted(ctx.readable))
        found = [(name, other) for name, other, _ in incoming(ctx.api, known, r.urn, types, within)]
    listed = sorted({pair for pair in found if can_read(ctx.readable, pair[1]) and ref(pair[1]) is not None})
    page = listed[start:start + count]
    return {"start": start, "count": len(page), "total": len(listed),
            "relationships": [{"type": name, "direction": direction, "entity": EntityRef(other)}
                              for name, other in page]}
