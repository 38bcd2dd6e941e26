"""Metadata tests as DataHub's GraphQL API manages them (managed.graphql): `test` entities with a
`testInfo` aspect, made and changed here (read and listed as entities; an entity's `testResults`
aspect, entities.py, says which it passes and fails). Lodestar stores tests and their results as
written (by these mutations or any writer); it does not run them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graphql import GraphQLError

from ingest.proposal import Proposal
from lodestar.api.graphql.edits import write
from lodestar.api.graphql.entities import Context

DEFINITION_TYPE = "JSON"  # the one kind of test definition


def _test_info(given: Mapping[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = {"name": given["name"], "category": given["category"],
                             "definition": {"type": DEFINITION_TYPE}}
    if given.get("description") is not None:
        value["description"] = given["description"]
    definition = given.get("definition") or {}
    if definition.get("json") is not None:
        value["definition"]["json"] = definition["json"]
    return value


def create_test(ctx: Context, given: Mapping[str, Any]) -> str:
    """A new test (urn:li:test:<id>, a random id when none is given); fails when it exists."""
    urn = f"urn:li:test:{given.get('id') or uuid.uuid4()}"
    write(ctx, Proposal("test", urn, "CREATE_ENTITY", "testInfo", _test_info(given)))
    return urn


def update_test(ctx: Context, urn: str, given: Mapping[str, Any]) -> str:
    """Replaces an existing test's name, category, description and definition."""
    if not urn.startswith("urn:li:test:"):
        raise GraphQLError(f"urn: {urn!r} is not a test URN", extensions={"code": 400})
    if ctx.aspect(urn, "testInfo") is None:
        raise GraphQLError(f"urn: test {urn} does not exist", extensions={"code": 404})
    write(ctx, Proposal("test", urn, "UPSERT", "testInfo", _test_info(given)))
    return urn


ROOT: dict[str, Callable[[Context, Mapping[str, Any]], Any]] = {
    "createTest": lambda ctx, args: create_test(ctx, args["input"]),
    "updateTest": lambda ctx, args: update_test(ctx, args["urn"], args["input"]),
}
