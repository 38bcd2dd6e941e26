"""Search over real MCLs: ranking, the query language, facets, paging, autocomplete, deletes."""

from __future__ import annotations

import sqlite3

import pytest

from mcl_processor.search import sqlite as search_sqlite
from mcl_processor.sqlite_db import FILE_NAME
from tests.builders import dataset_urn, proposal
from tests.test_mcl_processor import Indexed, schema

ORDERS = dataset_urn("shop.orders")
ARCHIVE = dataset_urn("shop.orders_archive")
ITEMS = dataset_urn("shop.order_items", platform="mysql")
CUSTOMER = dataset_urn("crm.customer")
CUSTOMERS = dataset_urn("crm.customers")
NOTES = dataset_urn("crm.notes")
CLICKS = dataset_urn("web-shop.events/raw_clicks_v2", platform="kafka")
LEGACY = dataset_urn("shop.orders_legacy")
JOB = "urn:li:dataJob:(urn:li:dataFlow:(spark,shop_etl,PROD),load_orders)"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    harness = Indexed(tmp_path_factory.mktemp("search") / "data")
    harness.write(
        proposal(ORDERS, "datasetProperties", {"name": "orders", "description": "Every order placed in the web shop",
                                               "customProperties": {"tier": "gold", "owner-team": "sales"}}),
        proposal(ORDERS, "schemaMetadata", schema("orders", "customer_id", "order_ts", "amount")),
        proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
        proposal(ORDERS, "userScopeMetadata", {"tags": ["Finance"], "properties": {"steward": "alice"}}),
        proposal(ORDERS, "systemScopeMetadata", {"tags": ["batch"], "properties": {"creation-time": "2015"}}),
        proposal(ARCHIVE, "datasetProperties", {"name": "orders_archive", "description": "Orders before 2020",
                                                "customProperties": {"tier": "silver"}}),
        proposal(ITEMS, "datasetProperties", {"name": "order_items", "description": "Lines of each order"}),
        proposal(CUSTOMER, "datasetProperties", {"name": "customer", "description": "One row per customer"}),
        proposal(CUSTOMERS, "datasetProperties", {"name": "customers", "description": "A view over customer"}),
        proposal(NOTES, "datasetProperties", {"name": "notes", "description": "Support notes about orders"}),
        proposal(NOTES, "schemaMetadata", {**schema("notes", "email", "text"), "fields": [
            {"fieldPath": "email", "nativeDataType": "string", "type": {"type": {"com.linkedin.schema.StringType": {}}},
             "globalTags": {"tags": [{"tag": "urn:li:tag:sensitive"}]}}]}),
        proposal(CLICKS, "datasetProperties", {"name": "web-shop.events/raw_clicks,v2"}),
        proposal(LEGACY, "datasetProperties", {"name": "orders_legacy", "customProperties": {"tier": "gold"}}),
        proposal(LEGACY, "status", {"removed": True}),
        proposal(JOB, "dataJobInfo", {"name": "load_orders", "type": {"string": "SPARK"},
                                      "description": "Loads orders nightly"}),
        *[proposal(dataset_urn(f"bulk.part_{i:02d}"), "datasetProperties", {"name": f"bulk part {i:02d}"})
          for i in range(25)],
    )
    yield harness
    harness.close()


def urns(catalog: Indexed, query: str, **kwargs) -> list[str]:
    return [hit.urn for hit in catalog.search.query(query, count=100, **kwargs).hits]


def test_name_matches_rank_above_description_matches_and_exact_names_first(catalog):
    assert urns(catalog, "orders") == [ORDERS, JOB, ARCHIVE, NOTES]  # exact name, names (shorter first), text
    assert urns(catalog, "customer")[:2] == [CUSTOMER, CUSTOMERS]  # exact name above the prefix match "customers"
    assert urns(catalog, "order")[:2] == [ITEMS, ORDERS]  # the token "order" in a name beats the prefix in "orders"
    assert urns(catalog, "items order")[0] == ITEMS  # every term in the name first


def test_free_text_terms_are_or_ed(catalog):
    assert set(urns(catalog, "notes customer")) == {NOTES, CUSTOMER, CUSTOMERS, ORDERS}  # ORDERS: customer_id
    assert urns(catalog, "zebra") == []
    assert urns(catalog, "zebra notes") == [NOTES]


def test_prefix_terms(catalog):
    assert set(urns(catalog, "archiv*")) == {ARCHIVE}
    assert {ORDERS, ARCHIVE, ITEMS} <= set(urns(catalog, "ord*"))
    assert urns(catalog, "archiv") == [ARCHIVE]  # a plain term matches as a prefix too, below exact matches


def test_separators_and_case_do_not_matter(catalog):
    for query in ("raw_clicks", "RAW-CLICKS", "raw.clicks", "raw/clicks", "Raw,Clicks", "clicks", "v2", "web shop"):
        assert CLICKS in urns(catalog, query), query
    for query in ("-", "_ . , /", "--- ///", "", "   ", "*-*"):
        assert catalog.search.query(query).total == 0, query


def test_properties_match_key_value_exactly_or_by_prefix(catalog):
    assert urns(catalog, "tier:gold") == [ORDERS]  # the soft-deleted legacy table is left out
    assert urns(catalog, "TIER:Gold") == [ORDERS]
    assert set(urns(catalog, "tier:*")) == {ORDERS, ARCHIVE}
    assert set(urns(catalog, "tier:s*")) == {ARCHIVE}
    assert urns(catalog, "owner-team:sales") == [ORDERS]
    assert urns(catalog, "creation-time:2015") == [ORDERS]
    assert urns(catalog, "tier:gol") == []
    assert urns(catalog, "platform:mysql") == [ITEMS]  # any index field works as a key too
    assert urns(catalog, "jobType:spark") == [JOB]  # a union value {"string": "SPARK"}


def test_scope_restricts_properties_and_tags(catalog):
    assert urns(catalog, "steward:alice", scope="USER") == [ORDERS]
    assert urns(catalog, "steward:alice", scope="SYSTEM") == []
    assert urns(catalog, "creation-time:2015", scope="SYSTEM") == [ORDERS]
    assert urns(catalog, "tags:finance", scope="USER") == [ORDERS]
    assert urns(catalog, "tags:batch", scope="USER") == []
    with pytest.raises(ValueError):
        catalog.search.query("x", scope="OTHER")


def test_tags_match_entity_tags_but_not_column_tags(catalog):
    assert urns(catalog, "tags:pii") == [ORDERS]
    assert urns(catalog, "tags:FINANCE") == [ORDERS]  # a USER scope tag
    assert urns(catalog, "tags:batch") == [ORDERS]  # a SYSTEM scope tag
    assert urns(catalog, "tags:sensitive") == []  # only a column of NOTES carries it
    assert urns(catalog, "fieldTags:sensitive") == [NOTES]
    assert urns(catalog, "tags:pii tier:gold") == [ORDERS]  # filters all apply
    assert urns(catalog, "tags:pii tier:silver") == []


def test_schema_field_names(catalog):
    assert urns(catalog, "schema:customer_id") == [ORDERS]
    assert urns(catalog, "schema:order_ts orders") == [ORDERS]
    assert ORDERS in urns(catalog, "customer_id")
    assert urns(catalog, "schema:email") == [NOTES]
    assert urns(catalog, "schema:nothing") == []


def test_matches_say_which_values_matched(catalog):
    hit = catalog.search.query("tier:gold amount").hits[0]
    assert {"field": "tier", "value": "gold"} in hit.matches
    assert {"field": "fieldPaths", "value": "amount"} in hit.matches


def test_entity_type_filter(catalog):
    assert urns(catalog, "orders", types=["dataJob"]) == [JOB]
    assert JOB not in urns(catalog, "orders", types=["dataset"])
    assert urns(catalog, "orders", types=[]) == []


def test_paging_is_stable_and_complete(catalog):
    everything = urns(catalog, "bulk")
    assert len(everything) == 25
    pages = [catalog.search.query("bulk", start=start, count=10) for start in (0, 10, 20, 30)]
    assert [len(p.hits) for p in pages] == [10, 10, 5, 0]
    assert {p.total for p in pages} == {25}
    assert [h.urn for p in pages for h in p.hits] == everything == sorted(everything)  # equal scores: by URN
    by_urn = [h.urn for start in range(0, 40, 7) for h in catalog.search.query("*", start=start, count=7).hits]
    assert by_urn == sorted(by_urn) and len(by_urn) == len(set(by_urn)) == catalog.search.query("*").total
    names = [h.name for h in catalog.search.query("bulk", sort="-name", count=3).hits]
    assert names == ["bulk part 24", "bulk part 23", "bulk part 22"]


@pytest.mark.parametrize("walk_set_limit", [0, 1000])  # probe the index per batch, or fetch every hit first
def test_urn_order_of_many_hits_comes_from_walking_the_urn_index(catalog, monkeypatch, walk_set_limit):
    expected = sorted(urns(catalog, "*"))
    monkeypatch.setattr(search_sqlite, "SORT_LIMIT", 2)
    monkeypatch.setattr(search_sqlite, "WALK_SET_LIMIT", walk_set_limit)
    walked = [h.urn for start in range(0, 40, 6) for h in catalog.search.query("*", start=start, count=6).hits]
    assert walked == expected
    assert [h.urn for h in catalog.search.query("*", sort="-urn", count=5).hits] == expected[::-1][:5]
    assert urns(catalog, "bulk*", sort="urn") == sorted(urns(catalog, "bulk"))


@pytest.mark.parametrize("sort_limit", [0, 2000])  # walk the (name length, urn) index, or sort the hits
def test_big_tiers_order_by_the_shorter_name(catalog, monkeypatch, sort_limit):
    monkeypatch.setattr(search_sqlite, "RANK_LIMIT", 0)
    monkeypatch.setattr(search_sqlite, "SORT_LIMIT", sort_limit)
    assert urns(catalog, "orders") == [ORDERS, JOB, ARCHIVE, NOTES]
    assert urns(catalog, "bulk") == sorted(urns(catalog, "bulk"))
    assert [h.urn for h in catalog.search.query("orders", start=2, count=2).hits] == [ARCHIVE, NOTES]


def test_facets_count_entity_types_platforms_and_tags(catalog):
    facets = catalog.search.query("orders").facets
    assert facets["entityType"] == [("dataset", 3), ("dataJob", 1)]
    assert dict(facets["tags"]) == {"pii": 1, "Finance": 1, "batch": 1}
    assert dict(catalog.search.query("*").facets["platform"]) == {"hive": 30, "mysql": 1, "kafka": 1}


def test_soft_deleted_entities_are_hidden_unless_asked_for(catalog):
    assert LEGACY not in urns(catalog, "orders_legacy")
    assert urns(catalog, "orders_legacy", include_removed=True)[0] == LEGACY
    assert urns(catalog, "tier:gold", include_removed=True) == [ORDERS, LEGACY]


def test_autocomplete_names_fields_and_tags(catalog):
    suggestions = [(s.text, s.kind) for s in catalog.search.autocomplete("cust")]
    assert ("customer", "name") in suggestions and ("customer_id", "field") in suggestions
    assert ("pii", "tag") in [(s.text, s.kind) for s in catalog.search.autocomplete("pi")]
    assert ("orders_archive", "name") in [(s.text, s.kind) for s in catalog.search.autocomplete("archive")]
    assert "orders_legacy" not in [s.text for s in catalog.search.autocomplete("orders")]
    assert catalog.search.autocomplete("--") == []


def test_user_input_never_reaches_sql_or_fts_syntax(catalog):
    for query in ("'; DROP TABLE search_docs; --", '" OR 1=1 --', 'tier:"gold\' OR \'1\'=\'1"', "NEAR(a b)",
                  "a AND b OR NOT c", "{name}: x", "schema:\"", "^orders", "x:)", '"unclosed'):
        catalog.search.query(query)
        catalog.search.autocomplete(query)
    assert catalog.search.query("orders").total == 4


def test_bad_sort_is_rejected(catalog):
    with pytest.raises(ValueError):
        catalog.search.query("x", sort="rank; DROP TABLE x")


def test_deletes_and_soft_deletes(tmp_path):
    harness = Indexed(tmp_path / "data")
    harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}),
                  proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}))
    harness.write(proposal(ORDERS, "globalTags", change="DELETE"))  # an aspect: what it contributed goes
    assert urns(harness, "tags:pii") == [] and urns(harness, "orders") == [ORDERS]
    harness.gms.delete_entity(ORDERS, hard=False, actor="urn:li:corpuser:tester")
    harness.index()
    assert urns(harness, "orders") == [] and urns(harness, "orders", include_removed=True) == [ORDERS]
    harness.write(proposal(ORDERS, "status", {"removed": False}))
    assert urns(harness, "orders") == [ORDERS]
    harness.gms.delete_entity(ORDERS, hard=True, actor="urn:li:corpuser:tester")  # the entity: all of it goes
    harness.index()
    assert harness.search.query("*", include_removed=True).total == 0
    assert harness.search.autocomplete("ord") == []
    harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders again"}))  # versions start over
    assert [h.name for h in harness.search.query("orders").hits] == ["orders again"]
    db = sqlite3.connect(harness.data_dir / FILE_NAME)  # nothing of the deleted entity is left behind
    assert db.execute("SELECT count(*) FROM search_properties").fetchone()[0] == 0
    assert {row[0] for row in db.execute("SELECT value FROM search_suggestions")} == {"orders again", "shop.orders"}
    db.close()
    harness.close()
