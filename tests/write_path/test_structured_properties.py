"""Structured property values checked against their definitions, and definitions changed only
in ways that keep assigned values valid, as DataHub's GMS checks them."""

from __future__ import annotations

import pytest

from gms.service import Gms
from ingest.proposal import parse_proposal
from tests.support.builders import mcp

TABLE = "urn:li:dataset:(urn:li:dataPlatform:postgres,crm.accounts,PROD)"
TIER = "urn:li:structuredProperty:io.acme.tier"
REVIEWED = "urn:li:structuredProperty:io.acme.reviewedOn"
SCORE = "urn:li:structuredProperty:io.acme.score"


def _definition(kind: str, cardinality: str = "SINGLE", allowed: list | None = None) -> dict:
    value = {"qualifiedName": "io.acme.p", "valueType": f"urn:li:dataType:datahub.{kind}", "cardinality": cardinality,
             "entityTypes": ["urn:li:entityType:datahub.dataset"]}
    if allowed is not None:
        value["allowedValues"] = [{"value": {"string": a} if isinstance(a, str) else {"double": a}} for a in allowed]
    return value


def _apply(gms: Gms, urn: str, aspect: str, value: dict):
    (result,) = gms.apply([parse_proposal(mcp(urn, aspect, value))], "urn:li:corpuser:alice")
    return result


def _assign(gms: Gms, prop: str, *values):
    return _apply(gms, TABLE, "structuredProperties", {"properties": [{"propertyUrn": prop, "values": list(values)}]})


@pytest.fixture
def defined(gms: Gms) -> Gms:
    for urn, definition in ((TIER, _definition("string", "MULTIPLE", ["gold", "silver"])),
                            (REVIEWED, _definition("date")), (SCORE, _definition("number"))):
        assert _apply(gms, urn, "propertyDefinition", definition).status == "applied"
    return gms


@pytest.mark.parametrize(("prop", "values"), [
    (TIER, [{"string": "gold"}, {"string": "silver"}]),
    (REVIEWED, [{"string": "2024-05-01"}]),
    (SCORE, [{"double": 0.75}]),
])
def test_values_that_fit_their_definition_are_stored(defined: Gms, prop, values):
    assert _assign(defined, prop, *values).status == "applied"


@pytest.mark.parametrize(("prop", "values", "problem"), [
    (TIER, [{"string": "bronze"}], "'bronze' is not among the allowed values"),
    (TIER, [{"double": 1.0}], "is a double"),
    (SCORE, [{"string": "high"}], "is a string"),
    (SCORE, [{"double": 1.0}, {"double": 2.0}], "takes one value (cardinality SINGLE), not 2"),
    (REVIEWED, [{"string": "last tuesday"}], "is no date"),
    ("urn:li:structuredProperty:io.acme.never", [{"string": "x"}], "is not defined"),
])
def test_values_that_do_not_fit_are_refused_and_nothing_is_stored(defined: Gms, prop, values, problem):
    result = _assign(defined, prop, *values)
    assert result.status == "failed" and result.failure.http_status == 400 and problem in result.failure.message
    assert defined.store.get(TABLE, "structuredProperties") is None


def test_a_soft_deleted_property_takes_no_values_and_its_definition_does_not_change(defined: Gms):
    assert _apply(defined, SCORE, "status", {"removed": True}).status == "applied"
    assert "soft-deleted" in _assign(defined, SCORE, {"double": 1.0}).failure.message
    assert "soft-deleted" in _apply(defined, SCORE, "propertyDefinition",
                                    _definition("number", "MULTIPLE")).failure.message


@pytest.mark.parametrize(("change", "problem"), [
    (_definition("number", "MULTIPLE", ["gold", "silver"]), "value type stays"),
    (_definition("string", "SINGLE", ["gold", "silver"]), "MULTIPLE to SINGLE"),
    (_definition("string", "MULTIPLE", ["gold"]), "only added, not removed (silver)"),
])
def test_a_definition_changes_only_in_ways_that_keep_values_valid(defined: Gms, change, problem):
    result = _apply(defined, TIER, "propertyDefinition", change)
    assert result.status == "failed" and problem in result.failure.message


def test_a_definition_may_add_allowed_values_and_widen_cardinality(defined: Gms):
    wider = _definition("string", "MULTIPLE", ["gold", "silver", "bronze"])
    assert _apply(defined, TIER, "propertyDefinition", wider).status == "applied"
    assert _assign(defined, TIER, {"string": "bronze"}).status == "applied"
    assert _apply(defined, SCORE, "propertyDefinition", _definition("number", "MULTIPLE")).status == "applied"


def test_values_carried_over_unchanged_are_not_judged_again_and_a_deleted_property_loses_its_values(defined: Gms):
    both = {"properties": [{"propertyUrn": TIER, "values": [{"string": "gold"}]},
                           {"propertyUrn": SCORE, "values": [{"double": 0.5}]}]}
    assert _apply(defined, TABLE, "structuredProperties", both).status == "applied"
    assert _apply(defined, SCORE, "status", {"removed": True}).status == "applied"
    defined.delete_entity(TIER, True, "urn:li:corpuser:alice")
    again = {"properties": [*both["properties"], {"propertyUrn": REVIEWED, "values": [{"string": "2024-05-01"}]}]}
    assert _apply(defined, TABLE, "structuredProperties", again).status == "applied"  # TIER and SCORE unchanged
    stored = defined.store.get(TABLE, "structuredProperties").value
    assert [a["propertyUrn"] for a in stored["properties"]] == [SCORE, REVIEWED]  # the deleted TIER's value dropped
    changed = {"properties": [{"propertyUrn": SCORE, "values": [{"double": 0.9}]}]}
    assert "soft-deleted" in _apply(defined, TABLE, "structuredProperties", changed).failure.message
