"""What DataHub's GMS does on write beyond storing the value, done the same way: a timeseries
point makes its entity exist, `ownership.ownerTypes` is derived from the owners, and a record a
patch creates gets the audit stamp it needs."""

from __future__ import annotations

import json

from datahub.metadata.schema_classes import GlossaryTermAssociationClass
from datahub.specific.dataset import DatasetPatchBuilder

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


def test_a_patch_fills_the_audit_stamp_of_a_record_it_creates(gms: Gms):
    builder = DatasetPatchBuilder(TABLE)
    builder.for_field("visitor_id").add_term(GlossaryTermAssociationClass("urn:li:glossaryTerm:PersonalData"))
    items = [mcp.to_obj() for mcp in builder.build()]
    results = gms.apply([parse_proposal(item) for item in items], "urn:li:corpuser:alice")
    assert [r.status for r in results] == ["applied"], [r.failure for r in results]
    field = json.loads(gms.store.get(TABLE, "editableSchemaMetadata").value_json)["editableSchemaFieldInfo"][0]
    terms = field["glossaryTerms"]
    assert terms["terms"] == [{"urn": "urn:li:glossaryTerm:PersonalData"}]
    assert terms["auditStamp"]["actor"] == "urn:li:corpuser:alice" and terms["auditStamp"]["time"] > 0


def test_an_upsert_without_its_audit_stamp_is_still_refused(gms: Gms):
    (result,) = gms.apply([parse_proposal(mcp(TABLE, "glossaryTerms", {"terms": []}))], "urn:li:corpuser:alice")
    assert result.status == "failed" and "auditStamp" in result.failure.message
