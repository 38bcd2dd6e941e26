"""DataHub's policies (policies.graphql) over Lodestar's access control.

Lodestar decides access by its grants (gms/access): READ, WRITE or ADMIN of a principal on a
resource. `listPolicies` shows each principal's grant on a resource as a policy that is not
editable (`urn:li:accessGrants:<name>` with the resource: PLATFORM on the instance, else METADATA
of that resource; its privileges Lodestar's). The DataHub policies that `createPolicy` and
`updatePolicy` write are `dataHubPolicy` entities (`dataHubPolicyInfo`, access-controlled like
the grants), listed as editable; Lodestar does not enforce them, so they grant nothing. Every
operation needs ADMIN on the instance, and writes go through GMS as the caller."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import GraphQLError

import lodestar.api.graphql.edits as edits
from gms.access import PRIVILEGES, grants_urn
from gms.access.admin import AccessAdmin
from gms.errors import ProposalFailed
from ingest.proposal import Proposal
from lodestar.api.graphql.entities import Context
from lodestar.api.limits import MAX_COUNT
from schemas.metadata_entity import INSTANCE

POLICY, INFO, KEY = "dataHubPolicy", "dataHubPolicyInfo", "dataHubPolicyKey"
MAX_LISTED = 10_000  # grants and stored policies one listing reads
FILTERED = {"state": "state", "type": "type", "editable": "editable"}


def _require_admin(ctx: Context) -> None:
    try:
        AccessAdmin(ctx.api.gms).require_admin(ctx.principal)
    except ProposalFailed as failure:
        raise GraphQLError(f"forbidden: {failure.message.replace('principals, tokens and grants', 'policies')}",
                           extensions={"code": 403, "type": "UNAUTHORIZED"}) from None


def _urns(ctx: Context, entity_type: str) -> list[str]:
    found = ctx.api.read_models.search.query("*", [entity_type], 0, MAX_LISTED, True, "urn")
    return [hit.urn for hit in found.hits]


def _grant_policies(ctx: Context) -> Iterator[dict[str, Any]]:
    for principal in _urns(ctx, "corpuser"):
        urn = grants_urn(principal)
        for resource, held in sorted(ctx.api.gms.access.grants(principal).items()):
            on_instance = resource == INSTANCE
            privileges = [p for p in PRIVILEGES if p in held]
            yield {"urn": urn, "type": "PLATFORM" if on_instance else "METADATA",
                   "name": f"{principal.removeprefix('urn:li:corpuser:')}: {' '.join(privileges)} on {resource}",
                   "state": "ACTIVE", "description": "Lodestar's grant (change it with /v1/access/grants)",
                   "resources": {"type": None, "allResources": on_instance,
                                 "resources": None if on_instance else [resource], "filter": None},
                   "privileges": privileges, "editable": False,
                   "actors": {"users": [principal], "groups": None, "roles": None, "resourceOwners": False,
                              "resourceOwnersTypes": None, "allUsers": False, "allGroups": False}}


def _stored_policies(ctx: Context) -> Iterator[dict[str, Any]]:
    for urn in _urns(ctx, POLICY):
        row = ctx.api.gms.store.get(urn, INFO)
        if row is not None and row.exists:
            yield _policy(urn, row.value)


def _policy(urn: str, info: Mapping[str, Any]) -> dict[str, Any]:
    resources = info.get("resources") or {}
    criteria = ((resources.get("filter") or {}).get("criteria")) or []
    actors = info.get("actors") or {}
    return {"urn": urn, "type": info.get("type"), "name": info.get("displayName"), "state": info.get("state"),
            "description": info.get("description"), "privileges": info.get("privileges") or [],
            "editable": info.get("editable", True),
            "resources": {"type": resources.get("type"), "allResources": resources.get("allResources", False),
                          "resources": resources.get("resources"),
                          "filter": {"criteria": [{"field": c["field"], "condition": c.get("condition", "EQUALS"),
                                                   "values": [{"value": v} for v in c.get("values", [])]}
                                                  for c in criteria]} if criteria else None},
            "actors": {"users": actors.get("users"), "groups": actors.get("groups"), "roles": actors.get("roles"),
                       "resourceOwners": actors.get("resourceOwners", False),
                       "resourceOwnersTypes": actors.get("resourceOwnersTypes"),
                       "allUsers": actors.get("allUsers", False), "allGroups": actors.get("allGroups", False)}}


def _matches(policy: Mapping[str, Any], given: Mapping[str, Any]) -> bool:
    """Whether a policy holds for the query text (in its name or description) and any of the orFilters."""
    text = (given.get("query") or "*").strip().lower()
    if text not in ("", "*") and not any(text in (policy.get(f) or "").lower() for f in ("name", "description")):
        return False
    groups = [g.get("and") or [] for g in given.get("orFilters") or []]
    return not groups or any(all(_holds(policy, rule) for rule in group) for group in groups)


def _holds(policy: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    field = rule.get("field")
    if field not in FILTERED or (rule.get("condition") or "EQUAL") != "EQUAL":
        raise GraphQLError(f"filter on {field!r}: policies are filtered on {', '.join(FILTERED)} with EQUAL only",
                           extensions={"code": 400})
    values = [str(v).lower() for v in rule.get("values") or ([rule["value"]] if rule.get("value") else [])]
    held = str(policy[FILTERED[field]]).lower()
    return (held in values) != bool(rule.get("negated"))


def list_policies(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    _require_admin(ctx)
    start, count = max(0, int(given.get("start") or 0)), min(MAX_COUNT, max(0, int(given.get("count") or 20)))
    found = [p for p in (*_grant_policies(ctx), *_stored_policies(ctx)) if _matches(p, given)]
    page = found[start:start + count]
    return {"start": start, "count": len(page), "total": len(found), "policies": page}


def _info(given: Mapping[str, Any]) -> dict[str, Any]:
    """A PolicyUpdateInput as a dataHubPolicyInfo value."""
    resources = given.get("resources")
    actors = given["actors"]
    info: dict[str, Any] = {
        "displayName": given["name"], "description": given.get("description") or "", "type": given["type"],
        "state": given["state"],
        "privileges": list(given["privileges"]), "editable": True, "lastUpdatedTimestamp": int(time.time() * 1000),
        "actors": {"resourceOwners": actors["resourceOwners"], "allUsers": actors["allUsers"],
                   "allGroups": actors["allGroups"],
                   **{k: list(actors[k]) for k in ("users", "groups", "roles", "resourceOwnersTypes")
                      if actors.get(k) is not None}}}
    if resources is not None:
        criteria = (resources.get("filter") or {}).get("criteria") or []
        info["resources"] = {
            "allResources": bool(resources.get("allResources")),
            **{k: resources[k] for k in ("type", "resources") if resources.get(k) is not None},
            **({"filter": {"criteria": [{"field": c["field"], "values": list(c["values"]),
                                         "condition": c.get("condition") or "EQUALS"} for c in criteria]}}
               if criteria else {})}
    return info


def _stored(ctx: Context, urn: str) -> str:
    if not urn.startswith(f"urn:li:{POLICY}:"):
        raise GraphQLError(f"urn: {urn!r} is no DataHub policy (urn:li:{POLICY}:<id>); Lodestar's grants are changed"
                           " with /v1/access/grants", extensions={"code": 400})
    return urn


def create_policy(ctx: Context, given: Mapping[str, Any]) -> str:
    _require_admin(ctx)
    urn = f"urn:li:{POLICY}:{uuid.uuid4()}"
    edits.write(ctx, Proposal(POLICY, urn, "UPSERT", INFO, _info(given)))
    return urn


def update_policy(ctx: Context, urn: str, given: Mapping[str, Any]) -> str:
    _require_admin(ctx)
    edits.write(ctx, Proposal(POLICY, _stored(ctx, urn), "UPSERT", INFO, _info(given)))
    return urn


def delete_policy(ctx: Context, urn: str) -> str:
    _require_admin(ctx)
    row = ctx.api.gms.store.get(_stored(ctx, urn), INFO)
    if row is None or not row.exists:
        raise GraphQLError(f"policy {urn} not found", extensions={"code": 404})
    edits.write(ctx, Proposal(POLICY, urn, "DELETE", KEY))  # the entity goes (its history stays)
    return urn


ROOT = {
    "listPolicies": lambda ctx, args: list_policies(ctx, args["input"]),
    "createPolicy": lambda ctx, args: create_policy(ctx, args["input"]),
    "updatePolicy": lambda ctx, args: update_policy(ctx, args["urn"], args["input"]),
    "deletePolicy": lambda ctx, args: delete_policy(ctx, args["urn"]),
}
