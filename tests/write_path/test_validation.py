"""Every rejection names the problem and the field, and stores nothing."""

from __future__ import annotations

import json

import pytest

from gms.service import Gms, Limits
from gms.validation import canonical_json
from ingest import topics
from ingest.proposal import ProposalError, parse_proposal
from tests.support.builders import dataset_urn, mcp, properties

URN = dataset_urn("sales.orders")
SCHEMA = {
    "schemaName": "orders", "platform": "urn:li:dataPlatform:hive", "version": 0, "hash": "",
    "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
    "fields": [{"fieldPath": "id", "nativeDataType": "bigint",
                "type": {"type": {"com.linkedin.schema.NumberType": {}}}}],
}


def rejected(gms: Gms, item: dict) -> tuple[str, str]:
    try:
        parsed = parse_proposal(item)
    except ProposalError as err:
        parsed = err
    (result,) = gms.apply([parsed], "urn:li:corpuser:alice")
    assert result.status == "failed"
    assert gms.store.entity(URN) == [] and gms.store.pending_outbox() == []
    assert gms.log.read(topics.MCL_VERSIONED) == []
    return result.failure.code, result.failure.message


CASES = [
    ("unknown entity type",
     {**mcp(URN, "status", {"removed": False}), "entityType": "spaceship"},
     "unknown_entity_type", "entityType: unknown entity type 'spaceship'"),
    ("unknown aspect", mcp(URN, "flavour", {"x": 1}), "unknown_aspect", "aspectName: unknown aspect 'flavour'"),
    ("aspect of another entity", mcp(URN, "corpUserInfo", {"active": True}),
     "aspect_not_in_entity", "aspectName: aspect 'corpUserInfo' does not belong to entity 'dataset'"),
    ("malformed urn", mcp("urn:li:dataset:(urn:li:dataPlatform:hive,orders", "status", {"removed": False}),
     "invalid_urn", "tuple id is not closed"),
    ("urn with too few parts", mcp("urn:li:dataset:(urn:li:dataPlatform:hive,orders)", "status", {"removed": False}),
     "invalid_urn", "a dataset URN has 3 part(s) (platform, name, origin), found 2"),
    ("urn of another entity type",
     {**mcp("urn:li:corpuser:bob", "status", {"removed": False}), "entityType": "dataset"},
     "invalid_urn", "is a corpuser URN, not a dataset URN"),
    ("urn part of the wrong type", mcp("urn:li:dataset:(urn:li:tag:hive,orders,PROD)", "status", {"removed": False}),
     "invalid_urn", "platform must be a dataPlatform URN"),
    ("unknown environment", mcp("urn:li:dataset:(urn:li:dataPlatform:hive,orders,MARS)", "status", {"removed": 0}),
     "invalid_urn", "origin 'MARS' is not one of"),
    ("missing required field", mcp(URN, "schemaMetadata", {k: v for k, v in SCHEMA.items() if k != "hash"}),
     "invalid_aspect", "aspect schemaMetadata: field 'hash': required field is missing"),
    ("nested missing field", mcp(URN, "schemaMetadata", {**SCHEMA, "fields": [{"fieldPath": "id", "type": {
        "type": {"com.linkedin.schema.NumberType": {}}}}]}),
     "invalid_aspect", "field 'fields[0].nativeDataType': required field is missing"),
    ("wrong type", mcp(URN, "status", {"removed": "yes"}),
     "invalid_aspect", "aspect status: field 'removed': expected a boolean, got the string 'yes'"),
    ("wrong optional string type", mcp(URN, "datasetProperties", {"description": 5}),
     "invalid_aspect", "aspect datasetProperties: field 'description': expected a string, got the number 5"),
    ("required string null", mcp(URN, "schemaMetadata", {**SCHEMA, "fields": [{
        "fieldPath": None, "nativeDataType": "x", "type": {"type": {"com.linkedin.schema.NumberType": {}}}}]}),
     "invalid_aspect", "field 'fields[0].fieldPath': expected a string, got null"),
    ("unknown field set to null", mcp(URN, "datasetProperties", {"descripton": None}),
     "invalid_aspect", "aspect datasetProperties: field 'descripton': unknown field"),
    ("wrong map value type", mcp(URN, "datasetProperties", {"customProperties": {"rows": 12}}),
     "invalid_aspect", "field 'customProperties.rows': expected a string, got the number 12"),
    ("unknown enum symbol", mcp(URN, "upstreamLineage", {"upstreams": [
        {"dataset": dataset_urn("a"), "type": "TELEPORTED", "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"}}]}),
     "invalid_aspect", "field 'upstreams[0].type': 'TELEPORTED' is not one of COPY, TRANSFORMED, VIEW"),
    ("unknown union branch", mcp(URN, "schemaMetadata", {**SCHEMA, "fields": [{
        "fieldPath": "id", "nativeDataType": "x", "type": {"type": {"com.linkedin.schema.WeirdType": {}}}}]}),
     "invalid_aspect", "field 'fields[0].type.type': expected one of com.linkedin.schema."),
    ("urn field of the wrong entity", mcp(URN, "upstreamLineage", {"upstreams": [
        {"dataset": "urn:li:corpuser:x", "type": "COPY", "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"}}]}),
     "invalid_aspect", "field 'upstreams[0].dataset': URN 'urn:li:corpuser:x' is a corpuser, expected dataset"),
    ("header of a number", {**mcp(URN, "status", {"removed": False}), "headers": {"If-Version-Match": 1}},
     "invalid_proposal", "headers: must be an object of string values"),
    ("unknown field", mcp(URN, "datasetProperties", {"descripton": "typo"}),
     "invalid_aspect", "aspect datasetProperties: field 'descripton': unknown field"),
    ("aspect value not JSON",
     {**mcp(URN, "status"), "aspect": {"value": "{not json", "contentType": "application/json"}},
     "invalid_proposal", "aspect.value: is not valid JSON"),
    ("unknown change type", mcp(URN, "status", {"removed": False}, change="MERGE"),
     "unknown_change_type", "changeType: unknown change type 'MERGE'"),
    ("missing aspect", mcp(URN, "status", None), "invalid_proposal", "aspect: is required for UPSERT"),
    ("missing urn", {k: v for k, v in mcp(URN, "status", {"removed": False}).items() if k != "entityUrn"},
     "invalid_proposal", "entityUrn: is required"),
    ("key aspect not matching the urn", mcp(URN, "datasetKey", {
        "platform": "urn:li:dataPlatform:hive", "name": "other", "origin": "PROD"}),
     "invalid_aspect", "key aspect datasetKey does not match the URN"),
    ("timeseries aspect deleted", mcp("urn:li:dataProcessInstance:r1", "dataProcessInstanceRunEvent", change="DELETE"),
     "unsupported_change_type", "accepts UPSERT only"),
    ("bad system metadata", mcp(URN, "status", {"removed": False}, systemMetadata={"lastObserved": "today"}),
     "invalid_system_metadata", "systemMetadata: field 'lastObserved'"),
    ("patch that is not a patch", mcp(URN, "status", {"removed": True}, change="PATCH"),
     "invalid_patch", "a PATCH value must be a JSON Patch array"),
]


@pytest.mark.parametrize(("label", "item", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_rejection(gms: Gms, label, item, code, message):
    got_code, got_message = rejected(gms, item)
    assert got_code == code
    assert message in got_message


def test_oversized_aspect_is_rejected(tmp_path):
    gms = Gms.embedded(tmp_path, Limits(max_aspect_bytes=1000))
    value = properties("x" * 2000)
    code, message = rejected(gms, mcp(URN, "datasetProperties", value))
    assert code == "too_large"
    size = len(canonical_json(value).encode())
    assert size > 2000
    assert message == f"aspect: value of datasetProperties is {size} bytes, over the limit of 1000"
    gms.close()


def test_the_size_limit_counts_utf8_bytes_not_characters(tmp_path):
    gms = Gms.embedded(tmp_path, Limits(max_aspect_bytes=1000))
    value = properties("\u00e9" * 600)  # 600 characters, 1,200 bytes
    code, message = rejected(gms, mcp(URN, "datasetProperties", value))
    size = len(canonical_json(value).encode())
    assert code == "too_large" and len(canonical_json(value)) < 1000 < size
    assert message == f"aspect: value of datasetProperties is {size} bytes, over the limit of 1000"
    gms.close()


def test_datahub_union_and_file_forms_are_accepted(gms: Gms):
    item = {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "schemaMetadata",
            "aspect": {"json": {**SCHEMA, "platformSchema": {
                "com.linkedin.pegasus2avro.schema.OtherSchema": {"rawSchema": "x"}}}}}
    (result,) = gms.apply([parse_proposal(item)], "urn:li:corpuser:alice")
    assert result.status == "applied"
    assert json.loads(gms.store.get(URN, "schemaMetadata").value_json)["fields"][0]["fieldPath"] == "id"


def test_optional_fields_may_be_null(gms: Gms):
    item = mcp(URN, "datasetProperties", {"name": "orders", "description": None, "qualifiedName": None})
    (result,) = gms.apply([parse_proposal(item)], "urn:li:corpuser:alice")
    assert result.status == "applied", result.failure
