"""The root fields of access.graphql: personal access tokens and invitations, answered by
gms/access/accounts.py (writes on the writer thread, as the caller)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from gms.access import authenticates, token_hash
from gms.access.accounts import AccountError, Accounts
from gms.errors import ProposalFailed
from lodestar.api.graphql.entities import Context, EntityRef
from lodestar.api.graphql.search import query_text
from lodestar.api.limits import MAX_COUNT
from mcl_processor.search.cdap import RESOURCE, any_of

WRITE_TIMEOUT = 60.0
HOUR_MS = 3600 * 1000
DURATIONS: dict[str, int | None] = {
    "ONE_HOUR": HOUR_MS, "ONE_DAY": 24 * HOUR_MS, "ONE_WEEK": 7 * 24 * HOUR_MS, "ONE_MONTH": 30 * 24 * HOUR_MS,
    "THREE_MONTHS": 90 * 24 * HOUR_MS, "SIX_MONTHS": 180 * 24 * HOUR_MS, "ONE_YEAR": 365 * 24 * HOUR_MS,
    "NO_EXPIRY": None}
LISTED_KINDS = (None, "PERSONAL")  # sessions and invitations are no access tokens to manage
FILTER_FIELDS = {"ownerUrn": "createdBy", "actorUrn": "principal", "name": "name"}
PLATFORM_PRIVILEGES = ("viewAnalytics", "managePolicies", "manageIdentities", "manageUserCredentials",
                       "manageTokens", "manageIngestion", "manageSecrets", "manageDomains", "manageGlossaries",
                       "manageTags", "createDomains", "createTags")
SCAN_PAGE = 1000
MAX_TOKENS_LISTED = 10_000


def _call(ctx: Context, fn: Callable[..., Any], *args: Any) -> Any:
    """Runs an Accounts call on the writer thread; its refusals become GraphQL errors."""
    future = asyncio.run_coroutine_threadsafe(ctx.api.run(fn, *args), ctx.loop)
    try:
        return future.result(WRITE_TIMEOUT)
    except AccountError as err:
        raise GraphQLError(str(err), extensions={"code": err.status}) from None
    except ProposalFailed as failure:
        raise GraphQLError(f"{failure.code}: {failure.message}", extensions={"code": failure.http_status}) from None


def _metadata(token_id: str, info: Mapping[str, Any]) -> dict[str, Any]:
    return {"urn": f"urn:li:accessToken:{token_id}", "id": token_id, "name": info.get("name") or "",
            "description": info.get("description"), "actorUrn": info["principal"],
            "ownerUrn": info.get("createdBy") or info["principal"], "createdAt": info.get("createdAt") or 0,
            "expiresAt": info.get("expiresAt")}


def create_access_token(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    accounts = Accounts(ctx.api.gms)
    made = _call(ctx, accounts.create_token, ctx.principal, given["actorUrn"], given["name"],
                 given.get("description"), DURATIONS[given["duration"]])
    return {"accessToken": made["token"], "metadata": _metadata(made["id"], made)}


def get_access_token(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    if given["actorUrn"] != ctx.principal:
        raise GraphQLError(f"getAccessToken makes tokens for the caller only ({ctx.principal}); an admin makes"
                           " them for others with createAccessToken", extensions={"code": 403})
    accounts = Accounts(ctx.api.gms)
    made = _call(ctx, accounts.create_token, ctx.principal, ctx.principal, None, None, DURATIONS[given["duration"]],
                 "GENERATED")
    return {"accessToken": made["token"], "metadata": _metadata(made["id"], made)}


def me(ctx: Context) -> dict[str, Any]:
    admin = Accounts(ctx.api.gms).is_admin(ctx.principal)
    privileges = {name: admin for name in PLATFORM_PRIVILEGES}
    return {"corpUser": EntityRef(ctx.principal), "platformPrivileges": {**privileges,
                                                                         "generatePersonalAccessTokens": True}}


def revoke_access_token(ctx: Context, token_id: str) -> bool:
    _call(ctx, Accounts(ctx.api.gms).revoke_token, ctx.principal, token_id)
    return True


def access_token_metadata(ctx: Context, token: str) -> dict[str, Any]:
    token_id = token_hash(token)
    info = Accounts(ctx.api.gms).visible(ctx.principal, token_id)
    if info is None:
        raise GraphQLError("no such token", extensions={"code": 404})
    return _metadata(token_id, info)


def _matches(info: Mapping[str, Any], filters: list[Mapping[str, Any]]) -> bool:
    for given in filters:
        stored = FILTER_FIELDS.get(given["field"])
        if stored is None:
            raise GraphQLError(f"filters: {given['field']!r} is no token field (ownerUrn, actorUrn, name)")
        if given.get("condition") not in (None, "EQUAL"):
            raise GraphQLError(f"filters: only EQUAL conditions are supported on tokens, not {given['condition']}")
        values = [*(given.get("values") or []), *([given["value"]] if given.get("value") is not None else [])]
        value = info.get(stored) or (info["principal"] if stored == "createdBy" else None)
        if (value in values) == bool(given.get("negated")):
            return False
    return True


def list_access_tokens(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    start, count = given.get("start") or 0, 20 if given.get("count") is None else given["count"]
    if not 0 <= count <= MAX_COUNT or start < 0:
        raise GraphQLError(f"start must be at least 0 and count between 0 and {MAX_COUNT}")
    accounts = Accounts(ctx.api.gms)
    admin = accounts.is_admin(ctx.principal)
    filters = list(given.get("filters") or [])
    found = []
    for token_id, info in _live_tokens(ctx):
        if info.get("kind") not in LISTED_KINDS or not _matches(info, filters):
            continue
        if admin or ctx.principal in (info["principal"], info.get("createdBy")):
            found.append(_metadata(token_id, info))
    found.sort(key=lambda m: (-m["createdAt"], m["id"]))
    shown = found[start:start + count]
    return {"start": start, "count": len(shown), "total": len(found), "tokens": shown}


def _live_tokens(ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    """Every token the search index knows of, with its current info, if it still works."""
    index, store = ctx.api.read_models.search, ctx.api.gms.store
    out = []
    for start in range(0, MAX_TOKENS_LISTED, SCAN_PAGE):
        page = index.query("*", types=["accessToken"], start=start, count=SCAN_PAGE, sort="urn")
        for hit in page.hits:
            row = store.get(hit.urn, "accessTokenInfo")
            if row is not None and row.exists and authenticates(row.value):
                out.append((hit.urn.removeprefix("urn:li:accessToken:"), row.value))
        if len(page.hits) < SCAN_PAGE:
            break
    return out


def list_users(ctx: Context, given: Mapping[str, Any]) -> dict[str, Any]:
    start, count = given.get("start") or 0, 20 if given.get("count") is None else given["count"]
    if not 0 <= count <= MAX_COUNT or start < 0:
        raise GraphQLError(f"start must be at least 0 and count between 0 and {MAX_COUNT}")
    within = None if ctx.readable is None else any_of(RESOURCE, sorted(ctx.readable))
    page = ctx.api.read_models.search.query(query_text(given.get("query")), types=["corpuser"], start=start,
                                            count=count, sort="urn", within=within)
    users = [EntityRef(hit.urn) for hit in page.hits]
    return {"start": start, "count": len(users), "total": page.total, "users": users}


def remove_user(ctx: Context, urn: str) -> bool:
    tokens = [token_id for token_id, info in _live_tokens(ctx) if info["principal"] == urn]
    return _call(ctx, Accounts(ctx.api.gms).remove_user, ctx.principal, urn, tokens)


def reset_token(ctx: Context, given: Mapping[str, Any]) -> dict[str, str]:
    return {"resetToken": _call(ctx, Accounts(ctx.api.gms).create_reset_token, ctx.principal, given["userUrn"])}


def invite(ctx: Context) -> dict[str, str]:
    return {"inviteToken": _call(ctx, Accounts(ctx.api.gms).create_invite, ctx.principal)}


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "createAccessToken": lambda ctx, args: create_access_token(ctx, args["input"]),
    "revokeAccessToken": lambda ctx, args: revoke_access_token(ctx, args["tokenId"]),
    "listAccessTokens": lambda ctx, args: list_access_tokens(ctx, args["input"]),
    "getAccessTokenMetadata": lambda ctx, args: access_token_metadata(ctx, args["token"]),
    "getInviteToken": lambda ctx, args: invite(ctx),
    "createInviteToken": lambda ctx, args: invite(ctx),
    "listUsers": lambda ctx, args: list_users(ctx, args["input"]),
    "getAccessToken": lambda ctx, args: get_access_token(ctx, args["input"]),
    "me": lambda ctx, args: me(ctx),
    "removeUser": lambda ctx, args: remove_user(ctx, args["urn"]),
    "createNativeUserResetToken": lambda ctx, args: reset_token(ctx, args["input"]),
}
