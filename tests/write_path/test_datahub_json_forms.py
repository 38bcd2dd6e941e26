"""Aspect values in the JSON forms DataHub's SDK sends and DataHub's GMS accepts, checked
against the Avro schema of the pinned acryl-datahub: each acceptance beside the refusals
DataHub makes of the same aspect."""

from __future__ import annotations

import json

import pytest

from gms.service import Gms
from ingest.proposal import parse_proposal
from schemas.jsonform import _aliased_union_members
from schemas.registry import default_registry
from tests.support.builders import mcp

MODEL = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,churn-predictor,PROD)"


def _apply(gms: Gms, urn: str, aspect: str, value: dict):
    (result,) = gms.apply([parse_proposal(mcp(urn, aspect, value))], "urn:li:corpuser:alice")
    return result


@pytest.mark.parametrize("cost", [
    {"costCode": "finance-7"},  # the Pegasus form: the member set, no discriminator (the SDK's)
    {"costId": 12.5},
    {"fieldDiscriminator": "costCode", "costCode": "finance-7"},  # the Avro form
])
def test_a_union_with_aliases_is_accepted_in_either_form(gms: Gms, cost):
    result = _apply(gms, MODEL, "cost", {"costType": "ORG_COST_TYPE", "cost": cost})
    assert result.status == "applied", result.failure
    assert json.loads(gms.store.get(MODEL, "cost").value_json)["cost"] == cost


@pytest.mark.parametrize(("cost", "problem"), [
    ({}, "field 'cost': a union of costId, costCode: exactly one of them must be set, not 0"),
    ({"costId": 1.0, "costCode": "finance-7"}, "exactly one of them must be set, not 2"),
    ({"costCode": None}, "exactly one of them must be set, not 0"),
    ({"costName": "x"}, "field 'cost.costName': unknown field"),
    ({"costId": "twelve"}, "field 'cost.costId': expected a number"),
    ({"fieldDiscriminator": "costName", "costCode": "x"}, "field 'cost.fieldDiscriminator': 'costName' is not one of"),
])
def test_a_union_with_aliases_still_refuses_what_its_schema_refuses(gms: Gms, cost, problem):
    result = _apply(gms, MODEL, "cost", {"costType": "ORG_COST_TYPE", "cost": cost})
    assert result.status == "failed" and problem in result.failure.message
    assert gms.store.get(MODEL, "cost") is None


def test_only_rest_li_translations_of_aliased_unions_are_read_as_such():
    registry = default_registry()
    found = set()
    for spec in registry.aspects.values():
        for name, schema in spec.named.items():
            if isinstance(schema, dict) and schema.get("type") == "record" and \
                    _aliased_union_members(schema, spec.named, name.rpartition(".")[0]) is not None:
                found.add(name)
    assert found == {"com.linkedin.common.CostCost"}
