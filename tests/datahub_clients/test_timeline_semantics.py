"""DataHub's timeline semantics as `datahub timeline` and DataHub's SDK read them from Lodestar:
the aspects of one request form one transaction, versions start at 0.0.0, a renamed schema
field is one change, a link listed twice is two."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from datahub.metadata.schema_classes import (
    AuditStampClass,
    DatasetSnapshotClass,
    InstitutionalMemoryClass,
    InstitutionalMemoryMetadataClass,
    MetadataChangeEventClass,
    NumberTypeClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
)

from tests.datahub_clients.test_reads_sdk import ORDERS, emit, get, owners, tags
from tests.support.graphql import graph as client_of

STAMP = AuditStampClass(time=0, actor="urn:li:corpuser:editor")


@pytest.fixture
def graph(server):
    client = client_of(server, server.token)
    yield client
    client.close()


def links(*pairs: tuple[str, str]) -> InstitutionalMemoryClass:
    return InstitutionalMemoryClass(elements=[
        InstitutionalMemoryMetadataClass(url=url, description=text, createStamp=STAMP) for url, text in pairs])


def ledger(*fields: tuple[str, str, str | None]) -> SchemaMetadataClass:
    """A schema of (path, native type, description) fields."""
    return SchemaMetadataClass(
        schemaName="ledger", platform="urn:li:dataPlatform:hive", version=0, hash="",
        platformSchema=OtherSchemaClass(rawSchema=""),
        fields=[SchemaFieldClass(fieldPath=path, type=SchemaFieldDataTypeClass(NumberTypeClass()),
                                 nativeDataType=native, description=text) for path, native, text in fields])


def timeline(server, *categories: str) -> list[dict]:
    answer = get(server, f"/openapi/v2/timeline/v1/{quote(ORDERS, safe='')}?categories={','.join(categories)}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_aspects_of_one_snapshot_are_one_transaction_and_versions_start_at_zero(server, graph):
    snapshot = DatasetSnapshotClass(urn=ORDERS, aspects=[owners("ann", "bob"), links(("https://wiki/orders", "Wiki"))])
    graph.emit_mce(MetadataChangeEventClass(proposedSnapshot=snapshot))
    emit(graph, ORDERS, tags("sales"))
    emit(graph, ORDERS, owners("ann"))
    answer = timeline(server, "OWNER", "DOCUMENTATION", "TAG")
    assert [(len(t["changeEvents"]), t["semVerChange"], t["semVer"]) for t in answer] == [
        (3, "MINOR", "0.0.0-computed"), (1, "MINOR", "0.1.0-computed"), (1, "MINOR", "0.2.0-computed")]
    assert {e["category"] for e in answer[0]["changeEvents"]} == {"OWNERSHIP", "DOCUMENTATION"}


def test_a_renamed_field_is_one_minor_change_a_retyped_one_major(server, graph):
    emit(graph, ORDERS, ledger(("amount", "decimal", "what was paid"), ("note", "string", None)))
    emit(graph, ORDERS, ledger(("paid", "decimal", "what was paid"), ("note", "string", None)))
    emit(graph, ORDERS, ledger(("paid", "decimal", "what was paid"), ("comment", "string", None)))
    first, renamed, replaced = timeline(server, "TECHNICAL_SCHEMA")
    assert [e["operation"] for e in first["changeEvents"]] == ["ADD", "ADD"]
    assert [(e["operation"], e["semVerChange"]) for e in renamed["changeEvents"]] == [("MODIFY", "MINOR")]
    assert "'amount'" in renamed["changeEvents"][0]["description"] and "'paid'" in renamed["changeEvents"][0][
        "description"]
    assert renamed["semVer"] == "0.1.0-computed"  # a field without a description is not taken as renamed:
    assert sorted(e["operation"] for e in replaced["changeEvents"]) == ["ADD", "REMOVE"]
    assert (replaced["semVerChange"], replaced["semVer"]) == ("MAJOR", "1.0.0-computed")


def test_a_link_listed_twice_is_two_changes_and_a_reworded_link_a_patch(server, graph):
    emit(graph, ORDERS, links(("https://wiki/orders", "Wiki")))
    emit(graph, ORDERS, links(("https://wiki/orders", "The wiki"), ("https://runbook", "Runbook"),
                              ("https://runbook", "Runbook")))
    emit(graph, ORDERS, links(("https://wiki/orders", "The wiki page"), ("https://runbook", "Runbook"),
                              ("https://runbook", "Runbook")))
    first, added, reworded = timeline(server, "DOCUMENTATION")
    assert sorted(e["operation"] for e in added["changeEvents"]) == ["ADD", "ADD", "MODIFY"]
    assert (added["semVerChange"], added["semVer"]) == ("MINOR", "0.1.0-computed")
    assert [(e["operation"], e["semVerChange"]) for e in reworded["changeEvents"]] == [("MODIFY", "PATCH")]
    assert reworded["semVer"] == "0.1.1-computed"
