"""Data products as DataHub's GraphQL API manages them (products.graphql): made in a domain,
renamed, given assets, listed by asset and deleted, each change one proposal through GMS as the
caller. A data product's assets are the `assets` of its dataProductProperties aspect."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from ingest.proposal import Proposal
from lodestar.api.graphql.edits import existing, pointer, write
from lodestar.api.graphql.entities import Context, EntityRef
from lodestar.api.limits import MAX_COUNT

PRODUCT = "dataProduct"


def create_data_product(ctx: Context, given: Mapping[str, Any]) -> EntityRef:
    """A new data product (urn:li:dataProduct:<id>, a random id when none is given) in a domain."""
    domain = existing(ctx, given["domainUrn"], "domainUrn", ("domain",))
    urn = f"urn:li:dataProduct:{given.get('id') or uuid.uuid4()}"
    properties = {k: v for k, v in given["properties"].items() if k in ("name", "description") and v is not None}
    write(ctx, Proposal(PRODUCT, urn, "CREATE_ENTITY", "dataProductProperties", properties))
    write(ctx, Proposal(PRODUCT, urn, "UPSERT", "domains", {"domains": [domain]}))
    return EntityRef(urn)


def update_data_product(ctx: Context, urn: str, given: Mapping[str, Any]) -> EntityRef:
    """Changes what is given of a data product's name and description."""
    existing(ctx, urn, "urn", (PRODUCT,))
    ops = [{"op": "add", "path": pointer(name), "value": given[name]} for name in ("name", "description")
           if given.get(name) is not None]
    if ops:
        write(ctx, Proposal(PRODUCT, urn, "PATCH", "dataProductProperties", ops))
    return EntityRef(urn)


def batch_set_data_product(ctx: Context, given: Mapping[str, Any]) -> bool:
    """Adds entities to a data product's assets (those already in it stay once)."""
    urn = existing(ctx, given.get("dataProductUrn"), "dataProductUrn", (PRODUCT,))
    assets = [existing(ctx, u, "resourceUrns") for u in given["resourceUrns"]]
    ops = [{"op": "add", "path": pointer("assets", asset), "value": {"destinationUrn": asset}} for asset in assets]
    write(ctx, Proposal(PRODUCT, urn, "PATCH", "dataProductProperties", ops))
    return True


def delete_data_product(ctx: Context, urn: str) -> bool:
    existing(ctx, urn, "urn", (PRODUCT,))
    write(ctx, Proposal(PRODUCT, urn, "DELETE", "dataProductKey"))
    return True


def list_assets(ctx: Context, urn: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """One page of a data product's assets the caller may read, in the product's order."""
    existing(ctx, urn, "urn", (PRODUCT,))
    if (given.get("query") or "*") != "*":
        raise GraphQLError("input.query: listDataProductAssets lists every asset ('*'); search them with"
                           " searchAcrossEntities", extensions={"code": 400})
    assets = [a["destinationUrn"] for a in (ctx.aspect(urn, "dataProductProperties") or {}).get("assets") or []
              if isinstance(a, dict) and isinstance(a.get("destinationUrn"), str)]
    shown = [u for u in assets if ctx.may_read(u) and ctx.aspects(u)]
    start, count = given.get("start") or 0, 10 if given.get("count") is None else given["count"]
    if start < 0 or not 0 <= count <= MAX_COUNT:
        raise GraphQLError(f"input: start must be at least 0 and count between 0 and {MAX_COUNT}",
                           extensions={"code": 400})
    page = shown[start:start + count]
    return {"start": start, "count": len(page), "total": len(shown), "facets": [],
            "searchResults": [{"entity": EntityRef(u), "insights": [], "matchedFields": [], "extraProperties": []}
                              for u in page]}


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "createDataProduct": lambda ctx, args: create_data_product(ctx, args["input"]),
    "updateDataProduct": lambda ctx, args: update_data_product(ctx, args["urn"], args["input"]),
    "batchSetDataProduct": lambda ctx, args: batch_set_data_product(ctx, args["input"]),
    "deleteDataProduct": lambda ctx, args: delete_data_product(ctx, args["urn"]),
    "listDataProductAssets": lambda ctx, args: list_assets(ctx, args["urn"], args["input"]),
}
