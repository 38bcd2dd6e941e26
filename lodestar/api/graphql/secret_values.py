"""DataHub's secrets as its GraphQL API manages them (secret_values.graphql): named values that
ingestion recipes refer to (`${NAME}`). The value is kept in Lodestar's secret store
(lodestar.secrets) under the secret's URN, never as metadata: the `dataHubSecret` entity's
dataHubSecretValue aspect holds the name, the description and, as `value`, the value's
fingerprint, so no MCL, version or replay carries the value. `urn:li:dataHubSecret:<name>`, as
DataHub names them. Every operation needs ADMIN on the instance."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import principal_urn
from ingest.proposal import Proposal
from lodestar.api.graphql.edits import write
from lodestar.api.graphql.entities import Context
from lodestar.api.graphql.listing import page_bounds, require_admin, urns_of_type
from lodestar.secrets import SecretStore
from lodestar.secrets.beside import secret_store_of

SECRET, VALUE = "dataHubSecret", "dataHubSecretValue"
MAX_NAMES = 1000  # secrets one getSecretValues asks for


def _store(ctx: Context) -> SecretStore:
    return secret_store_of(ctx.api.gms.store)


def _urn(name: str) -> str:
    if not name or any(c in name for c in "(),") or name != name.strip():
        raise GraphQLError(f"name: {name!r} is no secret name (not empty, no spaces around it, no '(', ')' or ',')",
                           extensions={"code": 400})
    return f"urn:li:{SECRET}:{name}"


def _value(given: Mapping[str, Any], fingerprint: str, created: Any) -> dict[str, Any]:
    value = {"name": given["name"], "value": fingerprint, "created": created}
    if given.get("description") is not None:
        value["description"] = given["description"]
    return value


def create_secret(ctx: Context, given: Mapping[str, Any]) -> str:
    require_admin(ctx, "createSecret")
    urn = _urn(given["name"])
    if ctx.aspects(urn):
        raise GraphQLError(f"secret {given['name']!r} already exists ({urn})",
                           extensions={"code": 409, "error": "entity_exists"})
    store = _store(ctx)
    fingerprint = store.put(urn, given["value"])
    try:
        write(ctx, Proposal(SECRET, urn, "CREATE_ENTITY", VALUE, _value(
            given, fingerprint, {"time": int(time.time() * 1000), "actor": principal_urn(ctx.principal)})))
    except GraphQLError:
        store.remove(urn)
        raise
    return urn


def update_secret(ctx: Context, given: Mapping[str, Any]) -> str:
    """A new value (and description) of an existing secret; the value it replaces is forgotten."""
    require_admin(ctx, "updateSecret")
    urn = given["urn"]
    current = ctx.aspect(urn, VALUE) if urn.startswith(f"urn:li:{SECRET}:") else None
    if current is None:
        raise GraphQLError(f"urn: {urn!r} is no secret that exists", extensions={"code": 404})
    if _urn(given["name"]) != urn:
        raise GraphQLError(f"name: a secret keeps its name ({current.get('name')!r}); make a new one to rename it",
                           extensions={"code": 400})
    store = _store(ctx)
    fingerprint = store.put(urn, given["value"])
    try:
        write(ctx, Proposal(SECRET, urn, "UPSERT", VALUE, _value(given, fingerprint, current.get("created"))))
    except GraphQLError:
        if fingerprint != current.get("value"):
            store.expire(urn, fingerprint, 0)
        raise
    for old in set(store.valid(urn)) - {fingerprint}:
        store.expire(urn, old, 0)
    return urn


def delete_secret(ctx: Context, urn: str) -> str:
    require_admin(ctx, "deleteSecret")
    if not urn.startswith(f"urn:li:{SECRET}:") or not ctx.aspects(urn):
        raise GraphQLError(f"urn: {urn!r} is no secret that exists", extensions={"code": 404})
    write(ctx, Proposal(SECRET, urn, "DELETE", "dataHubSecretKey"))
    _store(ctx).remove(urn)
    return urn


def list_secrets(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    require_admin(ctx, "listSecrets")
    start, count = page_bounds(given)
    total, urns = urns_of_type(ctx, SECRET, given, start, count)
    secrets = [{"urn": u, "name": value.get("name"), "description": value.get("description")}
               for u in urns if (value := ctx.aspect(u, VALUE)) is not None]
    return {"start": start, "count": len(secrets), "total": total, "secrets": secrets}


def secret_values(ctx: Context, names: list[str]) -> list[dict[str, str]]:
    """The values of the named secrets that exist, in the order asked."""
    require_admin(ctx, "getSecretValues")
    if len(names) > MAX_NAMES:
        raise GraphQLError(f"input.secrets: at most {MAX_NAMES} names", extensions={"code": 400})
    store, found = _store(ctx), []
    for name in dict.fromkeys(names):
        urn = _urn(name)
        fingerprint = (ctx.aspect(urn, VALUE) or {}).get("value")
        value = store.get(urn, fingerprint) if isinstance(fingerprint, str) else None
        if value is not None:
            found.append({"name": name, "value": value})
    return found


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "listSecrets": lambda ctx, args: list_secrets(ctx, args["input"]),
    "getSecretValues": lambda ctx, args: secret_values(ctx, args["input"]["secrets"]),
    "createSecret": lambda ctx, args: create_secret(ctx, args["input"]),
    "updateSecret": lambda ctx, args: update_secret(ctx, args["input"]),
    "deleteSecret": lambda ctx, args: delete_secret(ctx, args["urn"]),
}
