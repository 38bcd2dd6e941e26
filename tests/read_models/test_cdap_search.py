"""CDAP's search on the search index (`SearchIndex.select` with `search/cdap.py`): one contract,
passed by the SQLite (FTS5) and the OpenSearch adapter."""

from __future__ import annotations

import orjson

from mcl_processor.search import cdap
from mcl_processor.search.document import Fragment
from tests.contracts.cdap_search import CUSTOMERS, ORDERS, CdapSearchContract, _user
from tests.support.builders import proposal
from tests.support.indexed import Indexed
from tests.support.metadata_fixtures import schema
from tests.support.readmodels import OnOpenSearch, OnSqlite


class TestSqliteCdapSearch(OnSqlite, CdapSearchContract):
    pass


def test_fragments_stored_with_their_terms_among_the_meta_tokens_are_still_found(tmp_path):
    """Fragments stored before CDAP terms had a field of their own (their meta held them) are
    merged into the same documents when a later version touches the entity."""
    harness = Indexed(tmp_path / "data")
    harness.write(proposal(CUSTOMERS, "userScopeMetadata", _user(["pii"], owner="sales-team")))
    conn = harness.models.search.db.writer
    for doc_id, aspect, data in conn.execute("SELECT doc_id, aspect, fragment FROM search_versions").fetchall():
        *fields, terms = Fragment.decode(data)
        old_layout = (*fields[:2], " ".join(filter(None, [fields[2], terms])), *fields[3:])
        conn.execute("UPDATE search_versions SET fragment = ? WHERE doc_id = ? AND aspect = ?",
                     (orjson.dumps(old_layout), doc_id, aspect))
    harness.write(proposal(CUSTOMERS, "datasetProperties", {"name": "customers"}))  # merges the old fragments
    assert CdapSearchContract.found(harness, "owner:sales") == {CUSTOMERS}
    assert CdapSearchContract.found(harness, "tags:pii") == {CUSTOMERS}
    assert CdapSearchContract.found(harness, "customers") == {CUSTOMERS}
    harness.close()


def test_terms_kept_for_repeated_values_follow_each_value(tmp_path):
    """The analysis keeps the terms of values it meets again (a schema field's by its name and
    native type, each character's escape): a field of the same name and another type, or a
    value of other characters, gets terms of its own."""
    harness = Indexed(tmp_path / "data")
    harness.write(proposal(CUSTOMERS, "schemaMetadata", schema(("id", "long"), ("note", "string"))),
                  proposal(CUSTOMERS, "userScopeMetadata", _user([], owner="müller-ß", room="x(1)")),
                  proposal(ORDERS, "schemaMetadata", schema(("id", "string"), ("note", "string"))),
                  proposal(ORDERS, "userScopeMetadata", _user([], owner="muller-s", room="x(2)")))
    found = CdapSearchContract.found
    assert found(harness, "id:long") == {CUSTOMERS}
    assert found(harness, "id:string") == {ORDERS}
    assert found(harness, "note:string") == {CUSTOMERS, ORDERS}
    assert found(harness, "owner:müller") == {CUSTOMERS}
    assert found(harness, "owner:ß") == {CUSTOMERS}
    assert found(harness, "owner:muller") == {ORDERS}
    assert found(harness, "room:x(1)") == {CUSTOMERS}
    assert found(harness, "room:x(*") == {CUSTOMERS, ORDERS}
    harness.close()


def test_schema_terms_read_from_the_kept_ones_are_those_made_afresh():
    """A schema's terms taken from those kept per (field name, native type) are the ones made
    anew; fields of other shapes (no name, a name that is no string, no native type) get theirs."""
    value = {"fields": [{"fieldPath": "order_id", "nativeDataType": "long", "type": {"type": {"NumberType": {}}}},
                        {"fieldPath": "", "nativeDataType": "string"},
                        {"fieldPath": ["a", "b"], "nativeDataType": "string"},
                        {"fieldPath": 7, "nativeDataType": ["x"]},
                        {"nativeDataType": "string"}, {"fieldPath": "note"}]}
    cdap._FIELD_TERMS.clear()
    fresh = cdap.terms("schemaMetadata", value)
    assert cdap._FIELD_TERMS  # kept, and read the second time
    assert cdap.terms("schemaMetadata", value) == fresh
    assert cdap.term("SYSTEM", "schema", "order") in fresh and cdap.term("SYSTEM", "7", "x") not in fresh


class TestOpenSearchCdapSearch(OnOpenSearch, CdapSearchContract):
    pass
