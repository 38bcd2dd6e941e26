"""The root fields of edits.graphql: DataHub's edit mutations. Each is one PATCH proposal (the
keyed array paths of gms/patch.py) applied through GMS as the caller, so it is validated and
authorized as any write: tags and glossary terms of an entity (`globalTags`, `glossaryTerms`) or
of a dataset's field (`editableSchemaMetadata`, with subResourceType DATASET_FIELD), an
entity's or a field's editable description, an owner (`ownership`), a link (`institutionalMemory`);
and `updateDeprecation`, an UPSERT of the whole `deprecation` aspect."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import JSON_PATCH, Proposal
from lodestar.api.graphql.entities import Context, entity_type_of

WRITE_TIMEOUT = 60.0  # seconds a mutation waits for its proposal to be applied
FIELD = "DATASET_FIELD"
SYSTEM_OWNERSHIP = "urn:li:ownershipType:__system__"  # DataHub's built-in ownership types, by name
#: entity type -> (the aspect holding its editable description, that field)
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "dataset": ("editableDatasetProperties", "description"),
    "container": ("editableContainerProperties", "description"),
    "chart": ("editableChartProperties", "description"), "dashboard": ("editableDashboardProperties", "description"),
    "dataFlow": ("editableDataFlowProperties", "description"), "dataJob": ("editableDataJobProperties", "description"),
    "mlModel": ("editableMlModelProperties", "description"),
    "mlModelGroup": ("editableMlModelGroupProperties", "description"),
    "mlFeature": ("editableMlFeatureProperties", "description"),
    "mlFeatureTable": ("editableMlFeatureTableProperties", "description"),
    "mlPrimaryKey": ("editableMlPrimaryKeyProperties", "description"),
    "glossaryTerm": ("glossaryTermInfo", "definition"), "glossaryNode": ("glossaryNodeInfo", "definition"),
    "tag": ("tagProperties", "description"), "domain": ("domainProperties", "description"),
    "corpGroup": ("corpGroupEditableInfo", "description"), "dataProduct": ("dataProductProperties", "description"),
}


def _token(text: str) -> str:
    """A JSON Pointer token."""
    return text.replace("~", "~0").replace("/", "~1")


def _target(given: Mapping[str, Any]) -> tuple[str, str, str]:
    """(resource URN, aspect, path prefix inside it) for an entity's own aspect ("" prefix, the
    aspect named by the caller) or a dataset field's entry of editableSchemaMetadata."""
    urn = given["resourceUrn"]
    if not urn.startswith("urn:li:") or ":" not in urn.removeprefix("urn:li:"):
        raise GraphQLError(f"resourceUrn: {urn!r} is no URN")
    if given.get("subResourceType") is None:
        return urn, "", ""
    field_path = given.get("subResource")
    if not field_path:
        raise GraphQLError(f"subResource: a field path is required with subResourceType {FIELD}")
    if entity_type_of(urn) != "dataset":
        raise GraphQLError(f"resourceUrn: {FIELD} needs a dataset, not {urn!r}")
    return urn, "editableSchemaMetadata", f"/editableSchemaFieldInfo/{_token(field_path)}"


def _apply(ctx: Context, urn: str, aspect: str, ops: list[dict[str, Any]]) -> bool:
    """One PATCH proposal through GMS as the caller."""
    return propose(ctx, Proposal(entity_type_of(urn), urn, "PATCH", aspect, ops, JSON_PATCH))


def propose(ctx: Context, proposal: Proposal) -> bool:
    """One proposal through GMS as the caller; its refusal becomes a GraphQL error."""
    future = asyncio.run_coroutine_threadsafe(ctx.api.apply([proposal], ctx.principal, {}), ctx.loop)
    [result] = future.result(WRITE_TIMEOUT)
    if result.failure is not None:
        raise GraphQLError(f"{result.failure.code}: {result.failure.message}",
                           extensions={"code": result.failure.http_status, "error": result.failure.code})
    return True


def stamp(ctx: Context) -> dict[str, Any]:
    return {"time": int(time.time() * 1000), "actor": principal_urn(ctx.principal)}


def tag(ctx: Context, given: Mapping[str, Any], add: bool) -> bool:
    urn, aspect, prefix = _target(given)
    tag_urn = given["tagUrn"]
    path = f"{prefix}{'/globalTags' if prefix else ''}/tags/{_token(tag_urn)}"
    op = {"op": "add", "path": path, "value": {"tag": tag_urn}} if add else {"op": "remove", "path": path}
    return _apply(ctx, urn, aspect or "globalTags", [op])


def term(ctx: Context, given: Mapping[str, Any], add: bool) -> bool:
    urn, aspect, prefix = _target(given)
    term_urn = given["termUrn"]
    terms = f"{prefix}{'/glossaryTerms' if prefix else ''}"
    path = f"{terms}/terms/{_token(term_urn)}"
    op = {"op": "add", "path": path, "value": {"urn": term_urn}} if add else {"op": "remove", "path": path}
    stamped = {"op": "add", "path": f"{terms}/auditStamp", "value": stamp(ctx)}  # required by glossaryTerms
    return _apply(ctx, urn, aspect or "glossaryTerms", [op, stamped])


def description(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn, aspect, prefix = _target(given)
    if not aspect:
        kind = entity_type_of(urn)
        if kind not in DESCRIPTIONS:
            raise GraphQLError(f"resourceUrn: a {kind} has no editable description")
        aspect, name = DESCRIPTIONS[kind]
        prefix = f"/{name}"
    else:
        prefix += "/description"
    return _apply(ctx, urn, aspect, [{"op": "add", "path": prefix, "value": given["description"]}])


def owner(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn, aspect, _ = _target(given)
    who, kind_urn = given["ownerUrn"], given.get("ownershipTypeUrn")
    if entity_type_of(who) != ("corpGroup" if given["ownerEntityType"] == "CORP_GROUP" else "corpuser"):
        raise GraphQLError(f"ownerUrn: {who!r} is no {given['ownerEntityType']}")
    kind = given.get("type")
    if kind is None and kind_urn:
        kind = kind_urn.removeprefix(SYSTEM_OWNERSHIP).upper() if kind_urn.startswith(SYSTEM_OWNERSHIP) else "CUSTOM"
    kind = kind or "TECHNICAL_OWNER"
    value: dict[str, Any] = {"owner": who, "type": kind}
    if kind_urn:
        value["typeUrn"] = kind_urn
    return _apply(ctx, urn, "ownership", [{"op": "add", "path": f"/owners/{_token(who)}/{kind}", "value": value}])


def link(ctx: Context, given: Mapping[str, Any]) -> bool:
    urn, _, _ = _target(given)
    url = given["linkUrl"]
    element = {"url": url, "description": given["label"], "createStamp": stamp(ctx)}
    op = {"op": "add", "path": f"/elements/{_token(url)}", "value": element}
    return _apply(ctx, urn, "institutionalMemory", [op])


def deprecation(ctx: Context, given: Mapping[str, Any]) -> bool:
    """The entity's whole `deprecation` aspect, by the caller (a note not given is empty)."""
    urn = given["urn"]
    value: dict[str, Any] = {"deprecated": given["deprecated"], "note": given.get("note") or "",
                             "actor": principal_urn(ctx.principal)}
    if given.get("decommissionTime") is not None:
        value["decommissionTime"] = given["decommissionTime"]
    return propose(ctx, Proposal(entity_type_of(urn), urn, "UPSERT", "deprecation", value))


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "addTag": lambda ctx, args: tag(ctx, args["input"], add=True),
    "removeTag": lambda ctx, args: tag(ctx, args["input"], add=False),
    "addTerm": lambda ctx, args: term(ctx, args["input"], add=True),
    "removeTerm": lambda ctx, args: term(ctx, args["input"], add=False),
    "updateDescription": lambda ctx, args: description(ctx, args["input"]),
    "addOwner": lambda ctx, args: owner(ctx, args["input"]),
    "addLink": lambda ctx, args: link(ctx, args["input"]),
    "updateDeprecation": lambda ctx, args: deprecation(ctx, args["input"]),
}
