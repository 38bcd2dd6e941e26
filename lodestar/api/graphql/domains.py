"""The root fields of domains.graphql: DataHub's domains listed (a search of domain entities),
created (its `domainProperties`, the caller its owner) and set on or taken off an entity (its
`domains` aspect); each write a proposal through GMS as the caller (edits.propose)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import Proposal
from lodestar.api.graphql.edits import propose, stamp
from lodestar.api.graphql.entities import Context, entity_type_of

Search = Callable[[Context, Mapping[str, Any], Any], dict[str, Any]]


def list_domains(ctx: Context, given: Mapping[str, Any], search: Search) -> dict[str, Any]:
    found = search(ctx, {"query": given.get("query") or "*", "start": given.get("start"),
                         "count": given.get("count"), "sortInput": {"sortCriterion": {"field": "urn",
                                                                                       "sortOrder": "ASCENDING"}}},
                   ["DOMAIN"])
    return {"start": found["start"], "count": found["count"], "total": found["total"],
            "domains": [hit["entity"] for hit in found["searchResults"]]}


def create_domain(ctx: Context, given: Mapping[str, Any]) -> str:
    urn = f"urn:li:domain:{given.get('id') or uuid.uuid4()}"
    properties: dict[str, Any] = {"name": given["name"], "created": stamp(ctx)}
    for name in ("description", "parentDomain"):
        if given.get(name) is not None:
            properties[name] = given[name]
    try:
        propose(ctx, Proposal("domain", urn, "CREATE_ENTITY", "domainProperties", properties))
    except GraphQLError as err:
        if (err.extensions or {}).get("error") == "entity_exists":
            raise GraphQLError(f"domain {urn} already exists", extensions=err.extensions) from None
        raise
    owner = {"owner": principal_urn(ctx.principal), "type": "TECHNICAL_OWNER"}
    propose(ctx, Proposal("domain", urn, "UPSERT", "ownership", {"owners": [owner]}))
    return urn


def set_domain(ctx: Context, entity_urn: str, domain_urn: str | None) -> bool:
    if domain_urn is not None and (entity_type_of(domain_urn) != "domain" or not ctx.aspects(domain_urn)):
        raise GraphQLError(f"domainUrn: no domain {domain_urn} exists")
    domains = [domain_urn] if domain_urn else []
    return propose(ctx, Proposal(entity_type_of(entity_urn), entity_urn, "UPSERT", "domains", {"domains": domains}))


def root(search: Search) -> dict[str, Callable[[Context, Mapping[str, Any]], Any]]:
    """The root fields, listing with `search` (the resolvers' searchAcrossEntities)."""
    return {
        "listDomains": lambda ctx, args: list_domains(ctx, args["input"], search),
        "createDomain": lambda ctx, args: create_domain(ctx, args["input"]),
        "setDomain": lambda ctx, args: set_domain(ctx, args["entityUrn"], args["domainUrn"]),
        "unsetDomain": lambda ctx, args: set_domain(ctx, args["entityUrn"], None),
    }
