"""What DataHub's GMS does on write beyond storing the value, done the same way: a timeseries
point makes its entity exist, and `ownership.ownerTypes` is derived from the owners."""

from __future__ import annotations

import json

from gms.service import Gms
from ingest import topics
from ingest.proposal import parse_proposal
from tests.support.builders import mcp

TABLE = "urn:li:dataset:(urn:li:dataPlatform:snowflake,analytics.visits,PROD)"


def _apply(gms: Gms, *items: dict):
    results = gms.apply([parse_proposal(item) for item in items], "urn:li:corpuser:alice")
    assert all(r.status == "applied" for r in results), [r.failure for r in results]


def test_a_timeseries_point_alone_makes_its_entity_exist(gms: Gms):
    _apply(gms, mcp(TABLE, "datasetProfile", {"timestampMillis": 1_700_000_000_000, "rowCount": 42}))
    key = gms.store.get(TABLE, "datasetKey")
    assert key is not None and key.exists
    assert key.value == {"platform": "urn:li:dataPlatform:snowflake", "name": "analytics.visits", "origin": "PROD"}
    assert len(gms.log.read(topics.MCL_VERSIONED)) == 1  # the key's MCL
    _apply(gms, mcp(TABLE, "datasetProfile", {"timestampMillis": 1_700_000_060_000, "rowCount": 43}))
    assert gms.store.get(TABLE, "datasetKey").version == 1  # made once
    assert len(gms.log.read(topics.MCL_TIMESERIES)) == 2


def _ownership(gms: Gms) -> dict:
    return json.loads(gms.store.get(TABLE, "ownership").value_json)


def test_owner_types_are_derived_from_the_owners(gms: Gms):
    owners = [{"owner": "urn:li:corpuser:ann", "type": "TECHNICAL_OWNER"},
              {"owner": "urn:li:corpGroup:finance", "type": "BUSINESS_OWNER"},
              {"owner": "urn:li:corpuser:bo", "type": "CUSTOM", "typeUrn": "urn:li:ownershipType:steward"},
              {"owner": "urn:li:corpuser:cy", "type": "TECHNICAL_OWNER"}]
    stale = {"urn:li:ownershipType:gone": ["urn:li:corpuser:nobody"]}  # what a client sends is recomputed
    _apply(gms, mcp(TABLE, "ownership", {"owners": owners, "ownerTypes": stale,
                                         "lastModified": {"time": 0, "actor": "urn:li:corpuser:unknown"}}))
    assert _ownership(gms)["ownerTypes"] == {
        "urn:li:ownershipType:__system__technical_owner": ["urn:li:corpuser:ann", "urn:li:corpuser:cy"],
        "urn:li:ownershipType:__system__business_owner": ["urn:li:corpGroup:finance"],
        "urn:li:ownershipType:steward": ["urn:li:corpuser:bo"]}
    patch = [{"op": "remove", "path": "/owners/urn:li:corpuser:ann/TECHNICAL_OWNER"}]
    _apply(gms, mcp(TABLE, "ownership", patch, change="PATCH"))
    assert _ownership(gms)["ownerTypes"]["urn:li:ownershipType:__system__technical_owner"] == ["urn:li:corpuser:cy"]
