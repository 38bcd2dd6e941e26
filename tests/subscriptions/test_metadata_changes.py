"""Change records of tags and properties: from the MCLs subscribers read, and from history."""

from __future__ import annotations

import pytest

from ingest import topics
from ingest.subscribe import Subscription
from lodestar.metadata.changes import record_of_change, record_of_mcl
from lodestar.metadata.client import MetadataClient
from schemas.events import default_codec
from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps

FIELD = "default/datasets/customers/field/ssn"
FIELD_URN = f"urn:li:schemaField:({cdap_dataset('default', 'customers')},ssn)"


@pytest.fixture
def client(server) -> MetadataClient:
    assert all(r["status"] == "applied" for r in server.client().propose(
        dataset_mcps("default", "customers", fields=(("ssn", "string"),))))
    return MetadataClient(server.url, server.token)


def _mcl_records(server) -> list[dict]:
    codec = default_codec()
    decoded = (codec.decode(r.value)[1] for r in server.gms.log.read(topics.MCL_VERSIONED))
    return [record for record in map(record_of_mcl, decoded) if record is not None]


def test_an_added_and_a_changed_property(client, server):
    client.set_properties(FIELD, {"owner": "hr"})
    client.set_properties(FIELD, {"owner": "security", "level": "high"})
    added, changed = _mcl_records(server)
    assert added["urn"] == FIELD_URN and added["scope"] == "USER"
    assert added["metadataEntity"] == {"details": {"namespace": "default", "dataset": "customers", "field": "ssn"},
                                       "type": "field"}
    assert added["previous"] == {"properties": {}, "tags": []}
    assert added["changes"] == {"additions": {"properties": {"owner": "hr"}, "tags": []},
                                "deletions": {"properties": {}, "tags": []}}
    assert changed["previous"] == {"properties": {"owner": "hr"}, "tags": []}
    assert changed["updated"]["properties"] == {"owner": "security", "level": "high"}
    assert changed["changes"] == {"additions": {"properties": {"owner": "security", "level": "high"}, "tags": []},
                                  "deletions": {"properties": {"owner": "hr"}, "tags": []}}
    assert changed["updater"] == "urn:li:corpuser:admin" and changed["updateTime"] >= added["updateTime"] > 0


def test_subscribers_get_change_records(client, server):
    client.add_tags(FIELD, "PII")
    client.set_properties(FIELD, {"owner": "hr"})
    records = []
    with Subscription(server.gms.log, "change-records", aspects=["userScopeMetadata"], start="earliest",
                      handle_signals=False) as changes:
        for change in changes:
            records.append(record_of_change(change))
            if len(records) == 2:
                changes.stop()
    assert [(r["changes"]["additions"]["tags"], r["changes"]["additions"]["properties"]) for r in records] == [
        (["PII"], {}), ([], {"owner": "hr"})]
    assert records[0]["metadataEntity"]["details"]["field"] == "ssn"


def test_tags_added_and_removed_per_scope_and_the_same_records_from_history(client, server):
    client.add_tags(FIELD, "PII", "raw")
    client.remove_tags(FIELD, "raw")
    client.add_tags(FIELD, "scanned", scope="SYSTEM")
    from_mcls = _mcl_records(server)
    assert [(r["scope"], r["changes"]["additions"]["tags"], r["changes"]["deletions"]["tags"]) for r in from_mcls] == [
        ("USER", ["PII", "raw"], []), ("USER", [], ["raw"]), ("SYSTEM", ["scanned"], [])]
    from_history = client.changes(FIELD)
    assert sorted(map(str, from_history)) == sorted(map(str, from_mcls))
    assert len(client.rest.call("GET", client.path(FIELD, "changes", scope="system"))) == 1
    assert client.rest.request("POST", client.path(FIELD, "changes"), {})[0] == 405
