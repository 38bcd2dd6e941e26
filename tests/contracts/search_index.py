"""The search-index port's contract: every adapter (SQLite FTS5, OpenSearch) passes these tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from threading import Thread

import pytest

from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.processor import TOPICS
from mcl_processor.search import cdap
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import Indexed, schema
from tests.support.readmodels import ModelsFactory
from tests.support.upstream_tags_example import (
    DERIVED,
    KEY,
    LOYALTY_RUN,
    PII,
    SEGMENT,
    SPEND_RUN,
    UID,
    loyalty_operations,
    spend_operations,
)

ORDERS = dataset_urn("shop.orders")


ARCHIVE = dataset_urn("shop.orders_archive")


ITEMS = dataset_urn("shop.order_items", platform="mysql")


CUSTOMER = dataset_urn("crm.customer")


CUSTOMERS = dataset_urn("crm.customers")


NOTES = dataset_urn("crm.notes")


CLICKS = dataset_urn("web-shop.events/raw_clicks_v2", platform="kafka")


LEGACY = dataset_urn("shop.orders_legacy")


JOB = "urn:li:dataJob:(urn:li:dataFlow:(spark,shop_etl,PROD),load_orders)"


ACTOR = "urn:li:corpuser:tester"


def build_catalog(data_dir: Path, models: ModelsFactory) -> Indexed:
    harness = Indexed(data_dir, models)
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
        proposal(CUSTOMER, "userScopeMetadata", {"properties": {"steward": "bob", "retention": "30d"}}),
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
    return harness


def urns(catalog: Indexed, query: str, **kwargs) -> list[str]:
    return [hit.urn for hit in catalog.search.query(query, count=100, **kwargs).hits]


class SearchIndexContract:
    """Every search-index adapter passes these. Subclasses say how to build the read models
    (`models_factory`); the catalog is built once per class, through MCLs and the processor."""

    @pytest.fixture(scope="class")
    @classmethod
    def catalog(cls, models_factory: ModelsFactory, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
        harness = build_catalog(tmp_path_factory.mktemp("search") / "data", models_factory)
        yield harness
        harness.close()

    def test_name_matches_rank_above_description_matches_and_exact_names_first(self, catalog):
        assert urns(catalog, "orders") == [ORDERS, JOB, ARCHIVE, NOTES]  # exact name, names (shorter first), text
        assert urns(catalog, "customer")[:2] == [CUSTOMER, CUSTOMERS]  # exact name above the prefix match "customers"
        assert urns(catalog, "order")[:2] == [ITEMS, ORDERS]  # the token "order" in a name beats the prefix in "orders"
        assert urns(catalog, "items order")[0] == ITEMS  # every term in the name first

    def test_names_with_every_term_come_once_and_pages_go_on_past_them(self, catalog):
        ranked = urns(catalog, "orders archive")
        assert ranked[:4] == [ORDERS, ARCHIVE, JOB, NOTES]  # exact name, every term, one term (shorter), text
        assert len(ranked) == len(set(ranked))
        pages = [hit.urn for start in range(0, 6, 2)
                 for hit in catalog.search.query("orders archive", start=start, count=2).hits]
        assert pages == ranked[:6]
        # limited by CDAP terms, as a caller's readable resources limit a search: the tiers come from search_fts
        datasets = cdap.system(cdap.TYPE, "dataset")
        assert urns(catalog, "orders archive", within=datasets) == [u for u in ranked if u != JOB]
        assert [hit.urn for hit in catalog.search.query("part bulk", start=20, count=10).hits] == [
            dataset_urn(f"bulk.part_{i:02d}") for i in range(20, 25)]  # names alike in length: by URN

    def test_free_text_terms_are_or_ed(self, catalog):
        assert set(urns(catalog, "notes customer")) == {NOTES, CUSTOMER, CUSTOMERS, ORDERS}  # ORDERS: customer_id
        assert urns(catalog, "zebra") == []
        assert urns(catalog, "zebra notes") == [NOTES]

    def test_prefix_terms(self, catalog):
        assert set(urns(catalog, "archiv*")) == {ARCHIVE}
        assert {ORDERS, ARCHIVE, ITEMS} <= set(urns(catalog, "ord*"))
        assert urns(catalog, "archiv") == [ARCHIVE]  # a plain term matches as a prefix too, below exact matches

    def test_separators_and_case_do_not_matter(self, catalog):
        for query in ("raw_clicks", "RAW-CLICKS", "raw.clicks", "raw/clicks", "Raw,Clicks", "clicks", "v2", "web shop"):
            assert CLICKS in urns(catalog, query), query
        for query in ("-", "_ . , /", "--- ///", "", "   ", "*-*"):
            assert catalog.search.query(query).total == 0, query

    def test_properties_match_key_value_exactly_or_by_prefix(self, catalog):
        assert urns(catalog, "tier:gold") == [ORDERS]  # the soft-deleted legacy table is left out
        assert urns(catalog, "TIER:Gold") == [ORDERS]
        assert set(urns(catalog, "tier:*")) == {ORDERS, ARCHIVE}
        assert set(urns(catalog, "tier:s*")) == {ARCHIVE}
        assert urns(catalog, "owner-team:sales") == [ORDERS]
        assert urns(catalog, "creation-time:2015") == [ORDERS]
        assert urns(catalog, "tier:gol") == []
        assert urns(catalog, "platform:mysql") == [ITEMS]  # any index field works as a key too
        assert urns(catalog, "jobType:spark") == [JOB]  # a union value {"string": "SPARK"}

    def test_scope_restricts_properties_and_tags(self, catalog):
        assert urns(catalog, "steward:alice", scope="USER") == [ORDERS]
        assert urns(catalog, "steward:alice", scope="SYSTEM") == []
        assert urns(catalog, "creation-time:2015", scope="SYSTEM") == [ORDERS]
        assert urns(catalog, "tags:finance", scope="USER") == [ORDERS]
        assert urns(catalog, "tags:batch", scope="USER") == []
        assert urns(catalog, "tags:pii", scope="USER") == [ORDERS]  # DataHub's globalTags: people add them
        assert urns(catalog, "tags:pii", scope="SYSTEM") == []
        with pytest.raises(ValueError):
            catalog.search.query("x", scope="OTHER")

    def test_hits_carry_their_entitys_tags_with_scopes(self, catalog):
        hit = next(h for h in catalog.search.query("orders").hits if h.urn == ORDERS)
        assert sorted((t["field"], t["value"], t["scope"]) for t in hit.tags) == [
            ("systemTags", "batch", "SYSTEM"), ("tags", "pii", "USER"), ("userTags", "Finance", "USER")]
        assert hit.to_json()["tags"] == hit.tags
        notes = catalog.search.query("fieldTags:sensitive").hits[0]
        assert "sensitive" not in {t["value"] for t in notes.tags}  # a column's tag is no tag of its dataset

    def test_tags_match_entity_tags_but_not_column_tags(self, catalog):
        assert urns(catalog, "tags:pii") == [ORDERS]
        assert urns(catalog, "tags:FINANCE") == [ORDERS]  # a USER scope tag
        assert urns(catalog, "tags:batch") == [ORDERS]  # a SYSTEM scope tag
        assert urns(catalog, "tags:sensitive") == []  # only a column of NOTES carries it
        assert urns(catalog, "fieldTags:sensitive") == [NOTES]
        assert urns(catalog, "tags:pii tier:gold") == [ORDERS]  # filters all apply
        assert urns(catalog, "tags:pii tier:silver") == []

    def test_schema_field_names(self, catalog):
        assert urns(catalog, "schema:customer_id") == [ORDERS]
        assert urns(catalog, "schema:order_ts orders") == [ORDERS]
        assert ORDERS in urns(catalog, "customer_id")
        assert urns(catalog, "schema:email") == [NOTES]
        assert urns(catalog, "schema:nothing") == []
        assert urns(catalog, "schema:customer_order") == []  # both words, not side by side
        assert urns(catalog, "schema:customer_i*") == [ORDERS]  # a prefix's last word may go on

    def test_totals_this_small_are_exact(self, catalog):
        result = catalog.search.query("bulk")
        assert result.total == 25 and not result.total_estimated and result.to_json()["totalEstimated"] is False

    def test_matches_say_which_values_matched(self, catalog):
        hit = catalog.search.query("tier:gold amount").hits[0]
        assert {"field": "tier", "value": "gold"} in hit.matches
        assert {"field": "fieldPaths", "value": "amount"} in hit.matches

    def test_entity_type_filter(self, catalog):
        assert urns(catalog, "orders", types=["dataJob"]) == [JOB]
        assert JOB not in urns(catalog, "orders", types=["dataset"])
        assert urns(catalog, "orders", types=[]) == []

    def test_paging_is_stable_and_complete(self, catalog):
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

    def test_facets_count_entity_types_platforms_and_tags(self, catalog):
        facets = catalog.search.query("orders").facets
        assert facets["entityType"] == [("dataset", 3), ("dataJob", 1)]
        assert dict(facets["tags"]) == {"pii": 1, "Finance": 1, "batch": 1}
        assert dict(catalog.search.query("*").facets["platform"]) == {"hive": 30, "mysql": 1, "kafka": 1}

    def test_metadata_keys_are_a_facet_and_suggested(self, catalog):
        keys = dict(catalog.search.query("*").facets["keys"])
        assert keys == {"steward": 2, "retention": 1, "creation-time": 1}  # USER and SYSTEM properties only
        assert urns(catalog, "retention:*") == [CUSTOMER]
        assert ("retention", "key") in [(s.text, s.kind) for s in catalog.search.autocomplete("ret")]
        assert "tier" not in [s.text for s in catalog.search.autocomplete("ti")]

    def test_soft_deleted_entities_are_hidden_unless_asked_for(self, catalog):
        assert LEGACY not in urns(catalog, "orders_legacy")
        assert urns(catalog, "orders_legacy", include_removed=True)[0] == LEGACY
        assert urns(catalog, "tier:gold", include_removed=True) == [ORDERS, LEGACY]

    def test_autocomplete_names_fields_and_tags(self, catalog):
        suggestions = [(s.text, s.kind) for s in catalog.search.autocomplete("cust")]
        assert ("customer", "name") in suggestions and ("customer_id", "field") in suggestions
        assert ("pii", "tag") in [(s.text, s.kind) for s in catalog.search.autocomplete("pi")]
        assert ("orders_archive", "name") in [(s.text, s.kind) for s in catalog.search.autocomplete("archive")]
        assert "orders_legacy" not in [s.text for s in catalog.search.autocomplete("orders")]
        assert catalog.search.autocomplete("--") == []

    def test_user_input_never_reaches_sql_or_fts_syntax(self, catalog):
        for query in ("'; DROP TABLE search_docs; --", '" OR 1=1 --', 'tier:"gold\' OR \'1\'=\'1"', "NEAR(a b)",
                      "a AND b OR NOT c", "{name}: x", "schema:\"", "^orders", "x:)", '"unclosed'):
            catalog.search.query(query)
            catalog.search.autocomplete(query)
        assert catalog.search.query("orders").total == 4

    def test_bad_sort_is_rejected(self, catalog):
        with pytest.raises(ValueError):
            catalog.search.query("x", sort="rank; DROP TABLE x")

    def test_deletes_and_soft_deletes(self, models_factory, tmp_path):
        harness = deleted_and_written_again(Indexed(tmp_path / "data", models_factory))
        assert urns(harness, "tags:pii", include_removed=True) == []
        assert [s.text for s in harness.search.autocomplete("ord")] == ["orders again", "shop.orders"]
        assert harness.search.urns() == [ORDERS]
        harness.close()

    def test_check_finds_what_the_index_lacks_holds_stale_or_holds_extra(self, models_factory, tmp_path):
        harness = Indexed(tmp_path / "data", models_factory)
        harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}),
                      proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
                      proposal(NOTES, "datasetProperties", {"name": "notes"}))
        assert harness.processor.check(harness.gms.store).ok
        search = harness.search
        search.apply(ChangeBatch(resets=(NOTES,)))  # a lost entity
        search.apply(ChangeBatch(changes=(  # a version the store does not have
            AspectChange(ORDERS, "dataset", "globalTags", 7, {"tags": [{"tag": "urn:li:tag:pii"}]}),
            AspectChange("urn:li:tag:ghost", "tag", "tagProperties", 1, {"name": "ghost"}))))  # an extra entity
        search.apply(ChangeBatch(changes=(AspectChange(ORDERS, "dataset", "datasetProperties", 1, {"name": "other"}),),
                                 replace_equal=True))  # the same version, other content
        report = harness.processor.check(harness.gms.store)
        assert dict(report.counts) == {("search", "missing"): 2, ("search", "stale"): 1, ("search", "content"): 1,
                                       ("search", "extra"): 1}
        found = {(d.kind, d.urn, d.aspect) for d in report.examples}
        assert {("missing", NOTES, "datasetProperties"), ("missing", NOTES, "datasetKey"),
                ("stale", ORDERS, "globalTags"), ("content", ORDERS, "datasetProperties"),
                ("extra", "urn:li:tag:ghost", None)} == found
        assert search.urns() == [ORDERS, "urn:li:tag:ghost"]
        assert search.urns(after=ORDERS, limit=1) == ["urn:li:tag:ghost"]
        harness.processor.restore(harness.gms.store)  # repairs what is missing or damaged, never goes back
        assert dict(harness.processor.check(harness.gms.store).counts) == {("search", "stale"): 1,
                                                                          ("search", "extra"): 1}
        harness.models.clear()
        assert search.urns() == [] and search.query("*").total == 0
        harness.processor.restore(harness.gms.store)
        assert harness.processor.check(harness.gms.store).ok
        assert urns(harness, "orders") == [ORDERS]
        harness.close()

    def test_upstream_tags_find_the_fields_derived_from_a_tagged_field(self, models_factory, tmp_path):
        harness = Indexed(tmp_path / "data", models_factory)
        harness.write(proposal(UID, "globalTags", PII), proposal(SPEND_RUN, "fieldOperations", spend_operations()),
                      proposal(LOYALTY_RUN, "fieldOperations", loyalty_operations()))
        assert urns(harness, "upstreamTags:pii") == urns(harness, "UPSTREAMTAGS:PII") == DERIVED  # transitively
        assert urns(harness, "upstreamTags:p*") == DERIVED == urns(harness, "upstreamTags:pii", types=["schemaField"])
        assert sorted(h.name for h in harness.search.query("upstreamTags:pii").hits) == ["customer_key", "segment"]
        assert urns(harness, "tags:pii") == [UID]  # the tagged field itself is not derived from it
        assert urns(harness, "upstreamTags:pii", scope="USER") == [] and urns(harness, "upstreamTags:other") == []
        assert harness.processor.check(harness.gms.store).ok  # fields known only from lineage are no divergence
        assert UID in harness.search.urns() and KEY not in harness.search.urns()
        harness.write(proposal(UID, "globalTags", change="DELETE"))
        assert urns(harness, "upstreamTags:pii") == []
        harness.write(proposal(UID, "userScopeMetadata", {"tags": ["PII"], "properties": {}}))  # CDAP's field tag
        assert urns(harness, "upstreamTags:pii") == DERIVED
        harness.write(proposal(KEY, "globalTags", {"tags": [{"tag": "urn:li:tag:hashed"}]}))
        assert urns(harness, "upstreamTags:hashed") == [SEGMENT] and urns(harness, "tags:hashed") == [KEY]
        assert urns(harness, "upstreamTags:pii") == DERIVED  # KEY's own document keeps its upstream tags
        harness.write(proposal(LOYALTY_RUN, "fieldOperations", change="DELETE"))  # the lineage goes
        assert urns(harness, "upstreamTags:pii") == [KEY] and urns(harness, "upstreamTags:hashed") == []
        harness.write(proposal(UID, "status", {"removed": True}))  # a soft-deleted field passes on nothing
        assert urns(harness, "upstreamTags:pii", include_removed=True) == []
        assert harness.processor.check(harness.gms.store).ok
        harness.close()

    def test_upstream_tags_do_not_depend_on_order_and_are_restored(self, models_factory, tmp_path):
        harness = Indexed(tmp_path / "data", models_factory)
        harness.write(proposal(LOYALTY_RUN, "fieldOperations", loyalty_operations()))  # downstream lineage first
        harness.write(proposal(UID, "globalTags", PII))  # then the tag, before the hop that reaches it
        assert urns(harness, "upstreamTags:pii") == []
        harness.write(proposal(SPEND_RUN, "fieldOperations", spend_operations()))
        assert urns(harness, "upstreamTags:pii") == DERIVED
        for topic in TOPICS:  # every MCL again, as a replay from offset 0 delivers them
            harness.processor.process(harness.gms.log.read(topic, limit=10_000))
        assert urns(harness, "upstreamTags:pii") == DERIVED
        harness.models.clear()
        assert urns(harness, "upstreamTags:pii") == []
        harness.processor.restore(harness.gms.store, workers=0)
        assert urns(harness, "upstreamTags:pii") == DERIVED
        assert harness.processor.check(harness.gms.store).ok
        harness.close()

    def test_check_finds_upstream_tags_that_differ_from_lineage_and_restore_repairs_them(self, models_factory,
                                                                                        tmp_path):
        harness = Indexed(tmp_path / "data", models_factory)
        harness.write(proposal(UID, "globalTags", PII), proposal(SPEND_RUN, "fieldOperations", spend_operations()))
        ghost = KEY.replace("customer_key", "ghost")  # in no lineage
        harness.search.set_upstream_tags({KEY: set(), ghost: {"pii"}, SEGMENT: {"other"}})
        assert urns(harness, "upstreamTags:*") == [ghost, SEGMENT]
        report = harness.processor.check(harness.gms.store)
        assert dict(report.counts) == {("search", "missing"): 1, ("search", "extra"): 2}
        assert {(d.kind, d.urn, d.aspect) for d in report.examples} == {
            ("missing", KEY, "~upstreamTags"), ("extra", ghost, "~upstreamTags"), ("extra", SEGMENT, "~upstreamTags")}
        harness.processor.restore(harness.gms.store, workers=0)
        assert harness.processor.check(harness.gms.store).ok
        assert urns(harness, "upstreamTags:*") == [KEY]
        harness.close()

    def test_concurrent_writers_lose_no_aspect(self, models_factory, tmp_path):
        """Two writers of one entity (the processor and a restore): each aspect ends at its last version."""
        writers = [models_factory(tmp_path / "data"), models_factory(tmp_path / "data")]

        def write(models, aspect: str, value) -> None:
            for version in range(1, 16):
                models.apply(ChangeBatch(changes=(AspectChange(ORDERS, "dataset", aspect, version, value(version)),)))

        threads = [Thread(target=write, args=(writers[0], "datasetProperties", lambda v: {"name": f"orders {v}"})),
                   Thread(target=write, args=(writers[1], "globalTags",
                                              lambda v: {"tags": [{"tag": f"urn:li:tag:t{v}"}]}))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for models in writers:
            assert [h.name for h in models.search.query("tags:t15").hits] == ["orders 15"]
            assert models.search.query("tags:t14").total == 0
        for models in writers:
            models.close()

    def test_a_staging_index_is_built_beside_the_live_one_and_switched_to_whole(self, models_factory, tmp_path):
        harness = Indexed(tmp_path / "data", models_factory)
        tag = "urn:li:tag:finance"  # an entity type the staging index will hold nothing of
        harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}),
                      proposal(NOTES, "datasetProperties", {"name": "notes"}),
                      proposal(tag, "tagProperties", {"name": "finance"}))
        live = harness.search
        with pytest.raises(ValueError):
            live.staging("Bad-Name", fresh=True)
        staging = live.staging("next", fresh=True)
        staging.apply(ChangeBatch(changes=(
            AspectChange(ORDERS, "dataset", "datasetProperties", 1, {"name": "orders rebuilt"}),
            AspectChange(JOB, "dataJob", "dataJobInfo", 1, {"name": "load_orders", "type": {"string": "SPARK"}}))))
        assert live.building("next") and not live.switched("next")
        assert urns(harness, "*") == [NOTES, ORDERS, tag]  # readers see the live index only
        assert [h.name for h in staging.query("orders").hits] == ["load_orders", "orders rebuilt"]
        assert staging.query("notes").total == 0 and staging.urns() == [JOB, ORDERS]
        live.switch_to("next")
        assert live.switched("next") and not live.building("next")
        assert urns(harness, "*") == [JOB, ORDERS] and urns(harness, "finance") == []  # the staging index, whole
        assert [h.name for h in live.query("orders").hits] == ["load_orders", "orders rebuilt"]
        assert [s.text for s in live.autocomplete("orders r")] == ["orders rebuilt"]
        harness.write(proposal(NOTES, "datasetProperties", {"name": "notes again"}))  # writers use the new index
        assert urns(harness, "notes") == [NOTES]
        again = live.staging("again", fresh=True)  # a second rebuild replaces the first
        again.apply(ChangeBatch(changes=(AspectChange(NOTES, "dataset", "datasetProperties", 3, {"name": "notes"}),)))
        live.switch_to("again")
        assert urns(harness, "*") == [NOTES] and live.urns() == [NOTES]
        harness.close()

    def test_query_text_is_only_ever_searched_as_text(self, catalog):
        assert catalog.search.query('{"match_all":{}}').total == 0
        assert catalog.search.query("\\*").total == 0
        assert urns(catalog, 'a" OR b') == urns(catalog, "a or b") != []
        assert urns(catalog, 'tier:"gold\\" OR 1"') == [] and urns(catalog, "tier:g.*") == []
        assert catalog.search.query("*", types=["*"]).total == 0
        assert catalog.search.query("*", types=["dataset,dataJob"]).total == 0
        assert urns(catalog, "orders", types=["DATAJOB"]) == [JOB]
        assert [s.text for s in catalog.search.autocomplete("o.*")] == [  # no value starts with "o.*"
            "load_orders", "order_items", "order_ts", "orders", "orders_archive", "shop.order_items", "shop.orders",
            "shop.orders_archive"]
        assert catalog.search.autocomplete(".*") == []


def deleted_and_written_again(harness: Indexed) -> Indexed:
    """An entity with a tag whose tags are deleted, then the entity soft-deleted, restored,
    deleted for good and written again."""
    harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders"}),
                  proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}))
    harness.write(proposal(ORDERS, "globalTags", change="DELETE"))  # an aspect: what it contributed goes
    assert urns(harness, "tags:pii") == [] and urns(harness, "orders") == [ORDERS]
    harness.gms.delete_entity(ORDERS, hard=False, actor=ACTOR)
    harness.index()
    assert urns(harness, "orders") == [] and urns(harness, "orders", include_removed=True) == [ORDERS]
    harness.write(proposal(ORDERS, "status", {"removed": False}))
    assert urns(harness, "orders") == [ORDERS]
    harness.gms.delete_entity(ORDERS, hard=True, actor=ACTOR)  # the entity: all of it goes
    harness.index()
    assert harness.search.query("*", include_removed=True).total == 0
    assert harness.search.autocomplete("ord") == []
    harness.write(proposal(ORDERS, "datasetProperties", {"name": "orders again"}))  # versions start over
    assert [h.name for h in harness.search.query("orders").hits] == ["orders again"]
    return harness
