"""EntityChangeEvents derived from an MCL's previous and new values, one test per category."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.subscribe import Change
from mcl_processor.annotations import annotations_of
from mcl_processor.change_events import entity_change_events
from schemas.registry import default_registry
from tests.support.builders import dataset_urn

URN = dataset_urn("orders")
ACTOR = "urn:li:corpuser:jdoe"
STAMP = {"time": 1_700_000_000_123, "actor": ACTOR}


@pytest.fixture(scope="module")
def key_aspects() -> frozenset[str]:
    return annotations_of(default_registry()).key_aspects


def events(key_aspects: frozenset[str], aspect: str, before: Any, after: Any, change_type: str = "UPSERT",
           urn: str = URN) -> list[dict[str, Any]]:
    change = Change("MetadataChangeLog_Versioned_v1", 0, 7, 0, urn.split(":")[2], urn, aspect, change_type,
                    None if change_type == "DELETE" else after, before, None, None, None, STAMP)
    return entity_change_events(change, key_aspects)


def brief(found: list[dict[str, Any]]) -> list[tuple[str, str, str | None, dict[str, Any] | None]]:
    return [(e["category"], e["operation"], e.get("modifier"), e.get("parameters")) for e in found]


def tags(*names: str) -> dict[str, Any]:
    return {"tags": [{"tag": f"urn:li:tag:{name}"} for name in names]}


def test_tag_added_and_removed_carry_the_tag_the_entity_and_the_audit_stamp(key_aspects):
    found = events(key_aspects, "globalTags", tags("PII", "Old"), tags("PII", "Gold"))
    assert brief(found) == [("TAG", "REMOVE", "urn:li:tag:Old", {"tagUrn": "urn:li:tag:Old"}),
                            ("TAG", "ADD", "urn:li:tag:Gold", {"tagUrn": "urn:li:tag:Gold"})]
    assert all(e["entityUrn"] == URN and e["entityType"] == "dataset" and e["auditStamp"] == STAMP
               and e["version"] == 0 for e in found)


def test_the_first_value_adds_everything_and_a_deleted_aspect_removes_everything(key_aspects):
    assert brief(events(key_aspects, "globalTags", None, tags("PII"))) == [
        ("TAG", "ADD", "urn:li:tag:PII", {"tagUrn": "urn:li:tag:PII"})]
    assert brief(events(key_aspects, "globalTags", tags("PII"), None, "DELETE")) == [
        ("TAG", "REMOVE", "urn:li:tag:PII", {"tagUrn": "urn:li:tag:PII"})]


def test_an_unchanged_value_gives_no_event(key_aspects):
    assert events(key_aspects, "globalTags", tags("PII"), tags("PII")) == []
    assert events(key_aspects, "datasetProfile", None, {"rowCount": 3}) == []


def test_lodestars_bookkeeping_entities_give_no_event(key_aspects):
    assert events(key_aspects, "webhookKey", None, {"id": "w1"}, urn="urn:li:webhook:w1") == []
    assert events(key_aspects, "schemaRegistrySubjectKey", None, {"name": "s"},
                  urn="urn:li:schemaRegistrySubject:s") == []


def test_glossary_terms(key_aspects):
    term = "urn:li:glossaryTerm:Finance.Revenue"
    found = events(key_aspects, "glossaryTerms", None, {"terms": [{"urn": term}], "auditStamp": STAMP})
    assert brief(found) == [("GLOSSARY_TERM", "ADD", term, {"termUrn": term})]
    found = events(key_aspects, "glossaryTerms", {"terms": [{"urn": term}], "auditStamp": STAMP},
                   {"terms": [], "auditStamp": STAMP})
    assert brief(found) == [("GLOSSARY_TERM", "REMOVE", term, {"termUrn": term})]


def test_owners_added_removed_with_their_type(key_aspects):
    alice, bob = "urn:li:corpuser:alice", "urn:li:corpuser:bob"
    before = {"owners": [{"owner": alice, "type": "DATAOWNER"}]}
    after = {"owners": [{"owner": bob, "type": "TECHNICAL_OWNER"}]}
    assert brief(events(key_aspects, "ownership", before, after)) == [
        ("OWNER", "REMOVE", alice, {"ownerUrn": alice, "ownerType": "DATAOWNER"}),
        ("OWNER", "ADD", bob, {"ownerUrn": bob, "ownerType": "TECHNICAL_OWNER"})]


def test_domains(key_aspects):
    sales, ops = "urn:li:domain:sales", "urn:li:domain:ops"
    assert brief(events(key_aspects, "domains", {"domains": [sales]}, {"domains": [ops]})) == [
        ("DOMAIN", "REMOVE", sales, {"domainUrn": sales}), ("DOMAIN", "ADD", ops, {"domainUrn": ops})]


def test_documentation_added_modified_removed(key_aspects):
    def props(description: str | None) -> dict[str, Any]:
        return {"customProperties": {}} if description is None else {"description": description,
                                                                     "customProperties": {}}
    assert brief(events(key_aspects, "editableDatasetProperties", None, props("Orders"))) == [
        ("DOCUMENTATION", "ADD", None, {"description": "Orders"})]
    assert brief(events(key_aspects, "datasetProperties", props("Orders"), props("All orders"))) == [
        ("DOCUMENTATION", "MODIFY", None, {"description": "All orders"})]
    assert brief(events(key_aspects, "datasetProperties", props("All orders"), props(None))) == [
        ("DOCUMENTATION", "REMOVE", None, {"description": "All orders"})]


def field(path: str, nullable: bool = False, **extra: Any) -> dict[str, Any]:
    return {"fieldPath": path, "nullable": nullable, "nativeDataType": "int",
            "type": {"type": {"com.linkedin.schema.NumberType": {}}}, **extra}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"schemaName": "orders", "platform": "urn:li:dataPlatform:hive", "version": 0, "hash": "",
            "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}}, "fields": list(fields)}


def test_technical_schema_fields_added_and_removed(key_aspects):
    found = events(key_aspects, "schemaMetadata", schema(field("id"), field("gone", True)),
                   schema(field("id"), field("amount", True)))
    gone, amount = (f"urn:li:schemaField:({URN},{name})" for name in ("gone", "amount"))
    assert brief(found) == [
        ("TECHNICAL_SCHEMA", "REMOVE", gone, {"fieldUrn": gone, "fieldPath": "gone", "nullable": True}),
        ("TECHNICAL_SCHEMA", "ADD", amount, {"fieldUrn": amount, "fieldPath": "amount", "nullable": True})]
    assert {e["entityUrn"] for e in found} == {URN}


def test_a_schema_fields_tags_are_events_of_the_field(key_aspects):
    before = {"editableSchemaFieldInfo": [{"fieldPath": "ssn"}]}
    after = {"editableSchemaFieldInfo": [{"fieldPath": "ssn", "globalTags": tags("PII"),
                                          "description": "Social security number"}]}
    found = events(key_aspects, "editableSchemaMetadata", before, after)
    ssn = f"urn:li:schemaField:({URN},ssn)"
    assert brief(found) == [
        ("TAG", "ADD", "urn:li:tag:PII", {"tagUrn": "urn:li:tag:PII", "fieldPath": "ssn", "parentUrn": URN}),
        ("DOCUMENTATION", "ADD", ssn, {"description": "Social security number", "fieldPath": "ssn",
                                       "parentUrn": URN})]
    assert {(e["entityUrn"], e["entityType"]) for e in found} == {(ssn, "schemaField")}


def test_deprecation_flips(key_aspects):
    deprecated = {"deprecated": True, "note": "use orders_v2", "actor": ACTOR}
    assert brief(events(key_aspects, "deprecation", None, deprecated)) == [
        ("DEPRECATION", "MODIFY", "DEPRECATED", {"status": "DEPRECATED"})]
    assert events(key_aspects, "deprecation", deprecated, {**deprecated, "note": "v3"}) == []
    assert brief(events(key_aspects, "deprecation", deprecated, {**deprecated, "deprecated": False})) == [
        ("DEPRECATION", "MODIFY", "ACTIVE", {"status": "ACTIVE"})]


def test_structured_properties(key_aspects):
    prop = "urn:li:structuredProperty:retention"
    found = events(key_aspects, "structuredProperties", None,
                   {"properties": [{"propertyUrn": prop, "values": [{"double": 30}]}]})
    assert brief(found) == [("STRUCTURED_PROPERTY", "ADD", prop, {"propertyUrn": prop, "propertyValues": "[30]"})]


def test_lifecycle_create_soft_delete_reinstate_hard_delete(key_aspects):
    key = {"platform": "urn:li:dataPlatform:hive", "name": "orders", "origin": "PROD"}
    assert brief(events(key_aspects, "datasetKey", None, key)) == [("LIFECYCLE", "CREATE", None, None)]
    assert events(key_aspects, "datasetKey", key, key) == []
    assert brief(events(key_aspects, "status", {"removed": False}, {"removed": True})) == [
        ("LIFECYCLE", "SOFT_DELETE", None, None)]
    assert brief(events(key_aspects, "status", {"removed": True}, {"removed": False})) == [
        ("LIFECYCLE", "REINSTATE", None, None)]
    assert events(key_aspects, "status", None, {"removed": False}) == []
    assert events(key_aspects, "status", {"removed": True}, None, "DELETE") == []  # deleted with its entity
    assert brief(events(key_aspects, "datasetKey", key, None, "DELETE")) == [
        ("LIFECYCLE", "HARD_DELETE", None, None)]
