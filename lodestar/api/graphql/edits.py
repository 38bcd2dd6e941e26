"""Edits of an entity as DataHub's GraphQL mutations (edits.graphql): tags, glossary terms,
owners, links and descriptions, on an entity or on one field of a dataset's schema; deprecation;
domains (made, and an entity put in one); a group's edited properties.

Each edit of a list is one keyed JSON Patch of one aspect (gms/patch.py keys the arrays of
globalTags, glossaryTerms, ownership, institutionalMemory and editableSchemaMetadata), applied
through GMS as the caller, so GMS's authorization, validation and change log apply as to any write; adding
what is there or removing what is not changes nothing. The entity edited and the tag, term or
owner named must exist (a 404 error naming it otherwise)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import Proposal
from lodestar.api.graphql.entities import EDITABLE_PROPERTIES, Context, EntityRef, entity_type_of

WRITE_TIMEOUT = 60.0  # seconds a mutation waits for its proposal to be applied
SCHEMA_FIELD = "DATASET_FIELD"  # the one sub-resource type: a field of a dataset's schema
# entity type -> (aspect, field) of its description, for types without edited properties
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "glossaryTerm": ("glossaryTermInfo", "definition"),
    "glossaryNode": ("glossaryNodeInfo", "definition"),
    "tag": ("tagProperties", "description"),
    "domain": ("domainProperties", "description"),
    "dataProduct": ("dataProductProperties", "description"),
}
OWNER_TYPES = {"CORP_USER": "corpuser", "CORP_GROUP": "corpGroup"}
SYSTEM_OWNERSHIP_TYPE = "urn:li:ownershipType:__system__"  # + a lower-case OwnershipType


def write(ctx: Context, proposal: Proposal) -> None:
    """Applies one proposal through GMS as the caller (the writer thread, its authorization);
    a refusal is a GraphQLError with GMS's code and status."""
    future = asyncio.run_coroutine_threadsafe(ctx.api.apply([proposal], ctx.principal, {}), ctx.loop)
    [result] = future.result(WRITE_TIMEOUT)
    ctx.forget(proposal.entity_urn)
    failure = result.failure
    if failure is not None:
        raise GraphQLError(f"{failure.code}: {failure.message}",
                           extensions={"code": failure.http_status, "error": failure.code})


def pointer(*segments: str) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


def stamp(ctx: Context) -> dict[str, Any]:
    """An audit stamp: now, by the caller."""
    return {"time": int(time.time() * 1000), "actor": principal_urn(ctx.principal)}


def existing(ctx: Context, urn: Any, what: str, kinds: tuple[str, ...] | None = None) -> str:
    if not isinstance(urn, str) or not urn.startswith("urn:li:"):
        raise GraphQLError(f"{what}: {urn!r} is not a URN", extensions={"code": 400})
    if kinds is not None and entity_type_of(urn) not in kinds:
        raise GraphQLError(f"{what}: {urn!r} is not a {' or '.join(kinds)} URN", extensions={"code": 400})
    if not ctx.may_read(urn):
        raise GraphQLError(f"forbidden: the caller may not read {urn}", extensions={"code": 403})
    if not ctx.aspects(urn):
        raise GraphQLError(f"{what}: {urn} does not exist", extensions={"code": 404})
    return urn


def _target(ctx: Context, given: Mapping[str, Any]) -> tuple[str, str | None]:
    """The entity edited and, for a schema field, its field path."""
    urn = existing(ctx, given.get("resourceUrn"), "resourceUrn")
    sub_type, sub = given.get("subResourceType"), given.get("subResource")
    if sub_type is None and sub is None:
        return urn, None
    if sub_type != SCHEMA_FIELD or not sub:
        raise GraphQLError("subResource and subResourceType: a schema field is edited with both, subResourceType"
                           f" {SCHEMA_FIELD}", extensions={"code": 400})
    if entity_type_of(urn) != "dataset":
        raise GraphQLError(f"resourceUrn: {urn} has no schema fields (a dataset URN is needed)",
                           extensions={"code": 400})
    return urn, sub


def _patch(ctx: Context, urn: str, aspect: str, ops: list[dict[str, Any]]) -> bool:
    write(ctx, Proposal(entity_type_of(urn), urn, "PATCH", aspect, ops))
    return True


def _label(ctx: Context, given: Mapping[str, Any], add: bool, label_field: str, kind: str) -> bool:
    """Adds or removes a tag (globalTags) or glossary term (glossaryTerms), of the entity or of
    a schema field (its editableSchemaMetadata entry)."""
    urn, field_path = _target(ctx, given)
    label = given.get(label_field)
    if add:
        existing(ctx, label, label_field, (kind,))
    aspect, array, key = ("globalTags", "tags", "tag") if kind == "tag" else ("glossaryTerms", "terms", "urn")
    where: tuple[str, ...] = () if field_path is None else ("editableSchemaFieldInfo", field_path, aspect)
    path = pointer(*where, array, str(label))
    ops: list[dict[str, Any]] = [{"op": "add", "path": path, "value": {key: label}} if add
                                 else {"op": "remove", "path": path}]
    if kind == "glossaryTerm":  # glossaryTerms records who changed it last
        ops.append({"op": "add", "path": pointer(*where, "auditStamp"), "value": stamp(ctx)})
    return _patch(ctx, urn, aspect if field_path is None else "editableSchemaMetadata", ops)


def update_description(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn, field_path = _target(ctx, given)
    text = given.get("description")
    if field_path is not None:
        path = pointer("editableSchemaFieldInfo", field_path, "description")
        return _patch(ctx, urn, "editableSchemaMetadata", [{"op": "add", "path": path, "value": text}])
    kind = entity_type_of(urn)
    found = (EDITABLE_PROPERTIES[kind], "description") if kind in EDITABLE_PROPERTIES else DESCRIPTIONS.get(kind)
    if found is None:
        raise GraphQLError(f"resourceUrn: the description of a {entity_type_of(urn)} is not edited here",
                           extensions={"code": 400})
    aspect, field = found
    return _patch(ctx, urn, aspect, [{"op": "add", "path": pointer(field), "value": text}])


def add_owner(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn = existing(ctx, given.get("resourceUrn"), "resourceUrn")
    owner = existing(ctx, given.get("ownerUrn"), "ownerUrn", (OWNER_TYPES[given["ownerEntityType"]],))
    type_urn = given.get("ownershipTypeUrn")
    kind = given.get("type")
    if kind is None:
        named = str(type_urn or "").removeprefix(SYSTEM_OWNERSHIP_TYPE)
        kind = named.upper() if type_urn and named != type_urn else "CUSTOM" if type_urn else "TECHNICAL_OWNER"
    entry: dict[str, Any] = {"owner": owner, "type": kind}
    if type_urn:
        entry["typeUrn"] = type_urn
    return _patch(ctx, urn, "ownership", [{"op": "add", "path": pointer("owners", owner, kind), "value": entry}])


def add_link(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn = existing(ctx, given.get("resourceUrn"), "resourceUrn")
    link = {"url": given["linkUrl"], "description": given["label"], "createStamp": stamp(ctx)}
    return _patch(ctx, urn, "institutionalMemory",
                  [{"op": "add", "path": pointer("elements", given["linkUrl"]), "value": link}])


def remove_link(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn = existing(ctx, given.get("resourceUrn"), "resourceUrn")
    return _patch(ctx, urn, "institutionalMemory", [{"op": "remove", "path": pointer("elements", given["linkUrl"])}])


def update_deprecation(ctx: Context, given: Mapping[str, Any]) -> bool:
    """Marks an entity deprecated or not, the caller as who said so (the whole aspect is written)."""
    urn = existing(ctx, given.get("urn"), "urn")
    value: dict[str, Any] = {"deprecated": given["deprecated"], "note": given.get("note") or "",
                             "actor": principal_urn(ctx.principal)}
    if given.get("decommissionTime") is not None:
        value["decommissionTime"] = given["decommissionTime"]
    write(ctx, Proposal(entity_type_of(urn), urn, "UPSERT", "deprecation", value))
    return True


def create_domain(ctx: Context, given: Mapping[str, Any]) -> str:
    """A new domain (urn:li:domain:<id>, a random id when none is given); fails when it exists."""
    urn = f"urn:li:domain:{given.get('id') or uuid.uuid4()}"
    value = {"name": given["name"], "created": stamp(ctx)}
    if given.get("description") is not None:
        value["description"] = given["description"]
    if given.get("parentDomain"):
        value["parentDomain"] = existing(ctx, given["parentDomain"], "parentDomain", ("domain",))
    write(ctx, Proposal("domain", urn, "CREATE_ENTITY", "domainProperties", value))
    owner = {"owner": principal_urn(ctx.principal), "type": "TECHNICAL_OWNER"}  # its creator owns it
    write(ctx, Proposal("domain", urn, "UPSERT", "ownership", {"owners": [owner]}))
    return urn


def set_domain(ctx: Context, entity_urn: Any, domain_urn: Any) -> bool:
    """Puts an entity in one domain (none when domain_urn is None)."""
    urn = existing(ctx, entity_urn, "entityUrn")
    domains = [] if domain_urn is None else [existing(ctx, domain_urn, "domainUrn", ("domain",))]
    write(ctx, Proposal(entity_type_of(urn), urn, "UPSERT", "domains", {"domains": domains}))
    return True


def update_group(ctx: Context, urn: str, given: Mapping[str, Any]) -> EntityRef:
    """Sets what is given of a group's edited description, Slack channel, email and picture."""
    existing(ctx, urn, "urn", ("corpGroup",))
    ops = [{"op": "add", "path": pointer(name), "value": given[name]}
           for name in ("description", "slack", "email", "pictureLink") if given.get(name) is not None]
    if ops:
        write(ctx, Proposal("corpGroup", urn, "PATCH", "corpGroupEditableInfo", ops))
    return EntityRef(urn)


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "addTag": lambda ctx, args: _label(ctx, args["input"], True, "tagUrn", "tag"),
    "removeTag": lambda ctx, args: _label(ctx, args["input"], False, "tagUrn", "tag"),
    "addTerm": lambda ctx, args: _label(ctx, args["input"], True, "termUrn", "glossaryTerm"),
    "removeTerm": lambda ctx, args: _label(ctx, args["input"], False, "termUrn", "glossaryTerm"),
    "updateDescription": lambda ctx, args: update_description(ctx, args["input"]),
    "addOwner": lambda ctx, args: add_owner(ctx, args["input"]),
    "addLink": lambda ctx, args: add_link(ctx, args["input"]),
    "removeLink": lambda ctx, args: remove_link(ctx, args["input"]),
    "updateDeprecation": lambda ctx, args: update_deprecation(ctx, args["input"]),
    "createDomain": lambda ctx, args: create_domain(ctx, args["input"]),
    "setDomain": lambda ctx, args: set_domain(ctx, args["entityUrn"], args["domainUrn"]),
    "unsetDomain": lambda ctx, args: set_domain(ctx, args["entityUrn"], None),
    "updateCorpGroupProperties": lambda ctx, args: update_group(ctx, args["urn"], args["input"]),
}
