"""The search-index contract, over real MCLs: ranking, the query language, facets, paging,
autocomplete, deletes, the consistency check.

`SearchIndexContract` holds the tests every adapter passes; each subclass only says how to
build the read models. `TestSqliteSearchInternals` tests the SQLite adapter's own strategies.
"""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Iterator

import orjson
import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from mcl_processor.annotations import Annotations
from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.opensearch import indices as opensearch_indices
from mcl_processor.readmodels_db import FILE_NAME
from mcl_processor.search import sqlite as sqlite_search
from mcl_processor.search import sqlite_query
from mcl_processor.search.document import (
    SMALL_VALUE,
    SUGGESTED_BYTES,
    Analyzer,
    Fragment,
    pair_tokens,
    suggested,
    suggestion_prefix,
    suggestion_token,
)
from mcl_processor.search.opensearch import AnalysisPreparer
from mcl_processor.search.opensearch_mapping import index_body
from mcl_processor.search.sqlite_rows import DocumentPreparer
from schemas.registry import default_registry
from tests.contracts.search_index import (
    ARCHIVE,
    ITEMS,
    JOB,
    NOTES,
    ORDERS,
    SearchIndexContract,
    build_catalog,
    deleted_and_written_again,
    urns,
)
from tests.support.backends import unique_name
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import Indexed, schema
from tests.support.readmodels import OnOpenSearch, OnSqlite, sqlite_models


class TestSqliteSearchIndex(OnSqlite, SearchIndexContract):
    pass


class TestOpenSearchSearchIndex(OnOpenSearch, SearchIndexContract):
    def test_small_bulk_requests_and_pages_past_the_result_window(self, models_factory, tmp_path, monkeypatch):
        monkeypatch.setattr(opensearch_indices, "BULK_BYTES", 2000)  # a request every few documents
        harness = build_catalog(tmp_path / "data", models_factory)
        everything = urns(harness, "*", include_removed=True)
        ranked = urns(harness, "bulk part orders", include_removed=True)
        monkeypatch.setattr(opensearch_indices, "RESULT_WINDOW", 7)  # deeper pages continue with search_after
        for query, expected in (("*", everything), ("bulk part orders", ranked)):
            paged = [h.urn for start in range(0, 40, 6)
                     for h in harness.search.query(query, start=start, count=6, include_removed=True).hits]
            assert paged == expected, query
        result = harness.search.query("*", start=30, count=5, include_removed=True)
        assert result.total == len(everything) == 34 and [h.urn for h in result.hits] == everything[30:]
        assert harness.search.urns(limit=100) == sorted(everything)
        harness.close()

    def test_an_index_made_before_a_new_facet_gets_its_field(self, opensearch_url):
        client = OpenSearch(opensearch_url)
        full = index_body(Annotations(default_registry()), "dataset")
        older = copy.deepcopy(full)
        del older["mappings"]["properties"]["facets"]["properties"]["keys"]
        prefix = unique_name("facets")
        try:
            opensearch_indices.IndexFamily(client, prefix, "search", lambda key: older).ensure(["dataset"])
            opensearch_indices.IndexFamily(client, prefix, "search", lambda key: full).ensure(["dataset"])
            mapping = client.indices.get_mapping(index=f"{prefix}_search_dataset")[f"{prefix}_search_dataset"]
            assert mapping["mappings"]["properties"]["facets"]["properties"]["keys"] == {"type": "keyword"}
        finally:
            client.indices.delete(index=f"{prefix}_search_*")

    def test_a_search_that_finds_a_shard_gone_fails_whole_and_runs_again(self, opensearch_url):
        prefix = unique_name("shards")
        placed, unplaced = f"{prefix}_search_a", f"{prefix}_search_b"
        nowhere = {"index.routing.allocation.require._name": "nowhere"}  # its shard on no node: unreadable

        class PlacingAfterAFailure(OpenSearch):
            """A client whose failed search lets the shard be placed before the next try (as a
            switch has moved the names by the time a search fails)."""
            searches = 0

            def search(self, *args, **kwargs):
                self.searches += 1
                try:
                    return super().search(*args, **kwargs)
                except TransportError:
                    if place:
                        self.indices.put_settings(index=unplaced, body={"index.routing.allocation.require._name": None})
                        self.cluster.health(index=unplaced, params={"wait_for_status": "green"})
                    raise

        client = PlacingAfterAFailure(opensearch_url)
        client.indices.create(index=placed, body={"settings": {"number_of_replicas": 0}})
        client.index(index=placed, body={"n": 1}, params={"refresh": "true"})
        client.indices.create(index=unplaced, body={"settings": {"number_of_replicas": 0, **nowhere}},
                              params={"wait_for_active_shards": "0"})
        try:
            place = False
            with pytest.raises(TransportError) as failed:  # never the hits of the shards that answered
                opensearch_indices.search(client, f"{prefix}_search_*", {"query": {"match_all": {}}})
            assert failed.value.status_code == 503
            assert client.searches == len(opensearch_indices.SEARCH_RETRY_PAUSES) + 1
            place, client.searches = True, 0
            found = opensearch_indices.search(client, f"{prefix}_search_*", {"query": {"match_all": {}}})
            assert found["hits"]["total"]["value"] == 1 and client.searches == 2
            with pytest.raises(TransportError) as refused:  # a bad query is not run again
                opensearch_indices.search(client, placed, {"query": {"regexp": {"n": {"value": "["}}}})
            assert refused.value.status_code == 400 and client.searches == 3
        finally:
            client.indices.delete(index=f"{prefix}_search_*")

    def test_queries_beyond_what_opensearch_compiles_are_refused(self, catalog):
        assert catalog.search.query(" ".join(f"w{i}*" for i in range(48))).total == 0
        with pytest.raises(ValueError, match="at most 48 words"):
            catalog.search.query(" ".join(f"w{i}" for i in range(49)))
        with pytest.raises(ValueError, match="at most 900 bytes"):
            catalog.search.query(f"tier:{'g' * 1000}*")
        assert catalog.search.autocomplete("o" * 1000) == []


class TestSqliteSearchInternals(OnSqlite):
    """The SQLite adapter's strategies for many hits, and its tables."""

    @pytest.fixture(scope="class")
    @classmethod
    def catalog(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
        harness = build_catalog(tmp_path_factory.mktemp("search") / "data", sqlite_models)
        yield harness
        harness.close()

    @pytest.mark.parametrize("walk_set_limit", [0, 1000])  # probe the index per batch, or fetch every hit first
    def test_urn_order_of_many_hits_comes_from_walking_the_urn_index(self, catalog, monkeypatch, walk_set_limit):
        expected = sorted(urns(catalog, "*"))
        monkeypatch.setattr(sqlite_query, "SORT_LIMIT", 2)
        monkeypatch.setattr(sqlite_query, "WALK_SET_LIMIT", walk_set_limit)
        walked = [h.urn for start in range(0, 40, 6) for h in catalog.search.query("*", start=start, count=6).hits]
        assert walked == expected
        assert [h.urn for h in catalog.search.query("*", sort="-urn", count=5).hits] == expected[::-1][:5]
        assert urns(catalog, "bulk*", sort="urn") == sorted(urns(catalog, "bulk"))

    def test_documents_merged_by_the_preparer_are_used_only_where_the_writer_would_merge_the_same(
            self, tmp_path, monkeypatch):
        first, second, third = (dataset_urn(f"shop.{name}") for name in ("orders", "items", "notes"))
        values = {"datasetProperties": {"name": "orders", "description": "Orders of the shop"},
                  "schemaMetadata": schema("orders", "order_id", "customer_name"),
                  "globalTags": {"tags": [{"tag": "urn:li:tag:pii"}]}}
        # `first` in two runs (its second run's document lacks the first run's parts), the others in one
        order = [(first, "datasetProperties"), (first, "schemaMetadata"), (second, "globalTags"),
                 (second, "datasetProperties"), (first, "globalTags"), (third, "schemaMetadata")]

        def indexed(data_dir, prepared: bool) -> tuple[dict[str, list], int]:
            models = sqlite_models(data_dir)
            preparer = models.preparer()
            items = [(aspect, orjson.dumps(values[aspect]).decode(), None) for _, aspect in order]
            made = preparer(items, [(urn, "dataset") for urn, _ in order]) if prepared else [None] * len(order)
            merges = []
            monkeypatch.setattr(sqlite_search, "document_rows", lambda *args: merges.append(args) or rows_of(*args))
            models.apply(ChangeBatch((), tuple(AspectChange(urn, "dataset", aspect, 1, values[aspect], prepared=p)
                                               for (urn, aspect), p in zip(order, made, strict=True))))
            tables = {t: sorted(models.db.reader().execute(f"SELECT rowid, * FROM {t}").fetchall())
                      for t in ("search_docs", "search_fts", "search_names", "search_terms")}
            tables["search_properties"] = sorted(models.db.reader().execute("SELECT * FROM search_properties"))
            models.close()
            return tables, len(merges)

        rows_of = sqlite_search.document_rows
        merged_here, merges_here = indexed(tmp_path / "here", prepared=False)
        merged_ahead, merges_ahead = indexed(tmp_path / "ahead", prepared=True)
        assert merged_ahead == merged_here and len(merged_here["search_fts"]) == 3
        assert len(merged_here["search_properties"]) == 2  # the tag of `first` and of `second`
        assert (merges_here, merges_ahead) == (3, 1)  # only `first`'s document is merged by the writer

    def test_many_hits_of_property_filters_are_told_apart_in_the_property_table(self, tmp_path, monkeypatch):
        harness = Indexed(tmp_path / "data")
        written = [dataset_urn(f"shop.t{i:02d}") for i in range(30)]
        harness.write(*[proposal(urn, "datasetProperties", {"name": f"t{i:02d}", "customProperties": {
            "team": f"team-{i % 3}", "tier": ["gold", "silver"][i % 2]}}) for i, urn in enumerate(written)],
            *[proposal(urn, "status", {"removed": True}) for urn in written[:6]],
            *[proposal(urn, "userScopeMetadata", {"properties": {"steward": "alice"}}) for urn in written[::4]],
            *[proposal(urn, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}) for urn in written[::2]])
        searches = [("team:team-1", {}), ("team:team-1", {"include_removed": True}), ("team:team-* tier:gold", {}),
                    ("steward:alice", {"scope": "USER"}), ("steward:alice", {"scope": "SYSTEM"}),
                    ("team:team-2", {"types": ["DATASET"]}), ("team:team-2", {"types": ["dataJob"]}),
                    ("tier:gold tier:silver", {}), ("tags:pii", {}), ("name:t07", {})]

        def walked(query, kwargs):
            return [h.urn for start in range(0, 30, 4) for h in harness.search.query(query, start=start, count=4,
                                                                                    **kwargs).hits]
        expected = {query + repr(kwargs): walked(query, kwargs) for query, kwargs in searches}  # few hits: sorted
        assert len(expected["team:team-1{}"]) == 8 and expected["steward:alice{'scope': 'SYSTEM'}"] == []
        probed: list[list[int]] = []
        matching = sqlite_query._PropertyProbe.matching

        def counted(probe, conn, ids):
            probed.append(ids)
            return matching(probe, conn, ids)
        monkeypatch.setattr(sqlite_query._PropertyProbe, "matching", counted)
        monkeypatch.setattr(sqlite_query, "SORT_LIMIT", 0)
        for walk_set_limit in (1000, 0):  # the walk fetches every hit first, or probes each batch of documents
            monkeypatch.setattr(sqlite_query, "WALK_SET_LIMIT", walk_set_limit)
            assert {query + repr(kwargs): walked(query, kwargs) for query, kwargs in searches} == expected
            assert bool(probed) == (walk_set_limit == 0)
        probed.clear()
        for query in ("tags:pii", "name:t07", "tier:silver t07"):  # keys of fields, or free text: FTS5 tells
            assert harness.search.query(query, sort="urn").hits
        assert probed == []
        harness.close()

    def test_big_name_tiers_of_free_text_order_by_the_shorter_name(self, catalog, monkeypatch):
        monkeypatch.setattr(sqlite_query, "RANK_LIMIT", 0)  # every tier is big: none is ranked by bm25
        assert urns(catalog, "orders") == [ORDERS, JOB, ARCHIVE, NOTES]
        assert urns(catalog, "bulk") == sorted(urns(catalog, "bulk"))
        assert [h.urn for h in catalog.search.query("orders", start=2, count=2).hits] == [ARCHIVE, NOTES]

    def test_other_big_tiers_come_in_index_order(self, tmp_path, monkeypatch):
        harness = Indexed(tmp_path / "data")
        written = [dataset_urn(f"shop.{name}") for name in ("eeee_x", "ddd_x", "cc_x", "b_x")]  # longest name first
        harness.write(*[proposal(urn, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}) for urn in written])
        assert urns(harness, "tags:pii x") == written[::-1]  # a small tier: by the shorter name
        monkeypatch.setattr(sqlite_query, "RANK_LIMIT", 2)
        assert urns(harness, "tags:pii x") == written  # a big one: as first indexed, read up to the page only
        assert [h.urn for h in harness.search.query("tags:pii x", start=1, count=2).hits] == written[1:3]
        harness.close()

    def test_totals_past_the_limit_are_estimated(self, catalog, monkeypatch):
        monkeypatch.setattr(sqlite_query, "TOTAL_LIMIT", 10)
        for sort in ("relevance", "urn"):  # counted beside the ranking, and not
            broad = catalog.search.query("bulk", sort=sort)
            assert broad.total > 10 and broad.total_estimated and broad.to_json()["totalEstimated"] is True
            few = catalog.search.query("orders", sort=sort)
            assert few.total == 4 and not few.total_estimated
        assert len(urns(catalog, "bulk")) == 25  # every hit is still found

    def test_long_prefixes_match_as_the_words_they_start(self, catalog, monkeypatch):
        queries = ("bulk*", "orde*", "archiv*", '"bulk part*"', "schema:custom*", "zebr*", "bulk")
        expanded = {query: urns(catalog, query) for query in queries}
        monkeypatch.setattr(sqlite_query, "EXPAND_WORDS", 0)  # every prefix as FTS5's own prefix query
        assert {query: urns(catalog, query) for query in queries} == expanded
        assert len(expanded["bulk*"]) == 25 and {ORDERS, ARCHIVE, ITEMS} <= set(expanded["orde*"])

    def test_suggestion_tokens_sort_and_start_as_their_values_do(self):
        values = [("ab", "tag"), ("ab", "field"), ("abc", "field"), ("ab c", "name"), ("ab0", "key"), ("é", "name"),
                  ("a", "key"), ("ab_", "field"), ("b", "field")]
        tokens = [suggestion_token(lvalue, kind) for lvalue, kind in values]
        assert all(token and token.isalnum() and token.islower() for token in tokens)  # one FTS5 token, as folded
        assert sorted(tokens) == [suggestion_token(lvalue, kind) for lvalue, kind in sorted(values)]
        assert [suggested(token) for token in tokens] == values
        assert [suggested(t) for t in tokens if t.startswith(suggestion_prefix("ab"))] == \
            [v for v in values if v[0].startswith("ab")]
        assert suggestion_token("x" * SUGGESTED_BYTES, "name") and suggestion_token("é" * 4001, "name") is None

    def test_schema_word_pairs_are_found_as_the_index_folds_their_letters(self, tmp_path):
        harness = Indexed(tmp_path / "data")
        cafe, plain = dataset_urn("shop.cafe"), dataset_urn("shop.plain")
        harness.write(proposal(cafe, "schemaMetadata", schema("cafe", "Café_Crème.prix", "über_id")),
                      proposal(plain, "schemaMetadata", schema("plain", "cafe_id")))
        assert urns(harness, "schema:cafe_creme") == [cafe]  # diacritics dropped on both sides
        assert urns(harness, "schema:CAFÉ_crème_prix") == [cafe]
        assert urns(harness, "schema:uber_id") == [cafe]
        assert urns(harness, "schema:cafe_id") == [plain]
        assert urns(harness, "schema:creme_cafe") == []
        harness.close()

    def test_an_index_made_before_the_lexicon_gets_its_words_and_no_pair_lookups(self, tmp_path):
        harness = build_catalog(tmp_path / "data", sqlite_models)
        harness.models.close()
        db = sqlite3.connect(harness.data_dir / FILE_NAME)
        for rowid, schema_text, meta in db.execute("SELECT rowid, schema, meta FROM search_fts").fetchall():
            pairs = set(pair_tokens(schema_text))  # documents indexed before they had their pairs' tokens
            db.execute("UPDATE search_fts SET meta = ? WHERE rowid = ?",
                       (" ".join(token for token in meta.split() if token not in pairs), rowid))
        db.execute("DROP TABLE search_lexicon")
        db.commit()
        harness.reopen_models()
        assert urns(harness, "archiv*") == [ARCHIVE] and len(urns(harness, "bulk*")) == 25
        assert urns(harness, "schema:customer_id") == [ORDERS]  # by the words' positions: no pairs to look up
        db.execute("INSERT INTO search_lexicon (words) VALUES (?)", (sqlite_query.PAIRS_MARK,))
        db.commit()
        assert urns(harness, "schema:customer_id") == []  # looking the pairs up there would miss it
        db.close()
        harness.close()

    def test_an_index_made_with_suggestion_rows_has_them_moved_at_its_opening(self, tmp_path):
        harness = build_catalog(tmp_path / "data", sqlite_models)
        prefixes = ("cust", "pi", "orders", "ret", "shop.o")
        suggestions = {prefix: harness.search.autocomplete(prefix) for prefix in prefixes}
        assert all(suggestions.values())
        harness.models.close()
        db = sqlite3.connect(harness.data_dir / FILE_NAME)  # the layout before: a row per suggested value
        db.execute("CREATE TABLE search_suggestions (lvalue TEXT NOT NULL, kind TEXT NOT NULL,"
                   " doc_id INTEGER NOT NULL, aspect TEXT NOT NULL, value TEXT NOT NULL,"
                   " PRIMARY KEY (lvalue, kind, doc_id, aspect)) WITHOUT ROWID")
        for doc_id, aspect, data in db.execute("SELECT doc_id, aspect, fragment FROM search_versions"
                                               " WHERE fragment IS NOT NULL").fetchall():
            db.executemany("INSERT INTO search_suggestions VALUES (?, ?, ?, ?, ?)",
                           [(lvalue, kind, doc_id, aspect, value) for lvalue, kind, value in
                            Fragment.decode(data).suggestions])
        db.execute("DROP TABLE search_suggest")
        db.commit()
        harness.reopen_models()
        assert {prefix: harness.search.autocomplete(prefix) for prefix in prefixes} == suggestions
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'search_suggestions'").fetchone()[0] == 0
        db.close()
        harness.close()

    def test_facets_of_more_hits_than_the_sample_are_counted_on_it_and_scaled(self, catalog, monkeypatch):
        monkeypatch.setattr(sqlite_query, "FACET_SAMPLE", 5)
        for sort in ("relevance", "urn"):  # ranked (total and sample read beside the ranking), and not
            result = catalog.search.query("bulk", sort=sort)
            assert result.total == 25 and result.facets_sampled
            assert result.facets["platform"] == [("hive", 25)]  # 5 of a sample of 5, scaled to 25 hits
            few = catalog.search.query("orders", sort=sort)
            assert few.total == 4 and not few.facets_sampled and few.facets["entityType"] == [("dataset", 3),
                                                                                               ("dataJob", 1)]

    def test_deleted_entities_leave_no_rows_behind(self, tmp_path):
        harness = deleted_and_written_again(Indexed(tmp_path / "data"))
        db = sqlite3.connect(harness.data_dir / FILE_NAME)
        assert db.execute("SELECT count(*) FROM search_properties").fetchone()[0] == 0
        db.execute("CREATE VIRTUAL TABLE temp.suggested USING fts5vocab(main, search_suggest, row)")
        assert {suggested(row[0]) for row in db.execute("SELECT term FROM temp.suggested")} \
            == {("orders again", "name"), ("shop.orders", "name")}
        db.close()
        harness.close()


@pytest.mark.parametrize("preparer_class", [DocumentPreparer, AnalysisPreparer])
def test_a_preparer_analyses_a_small_value_once_and_a_large_one_each_time(preparer_class, monkeypatch):
    annotations = Annotations(default_registry())
    preparer = preparer_class({name: annotations.by_aspect[name] for name in ("globalTags", "schemaMetadata")})
    analysed: list[str] = []
    analyse = Analyzer._parts
    monkeypatch.setattr(Analyzer, "_parts", lambda self, value: analysed.append(self.annotations.aspect)
                        or analyse(self, value))
    small = orjson.dumps({"tags": [{"tag": "urn:li:tag:pii"}]}).decode()
    large = orjson.dumps(schema("orders", *(f"column_{i}" for i in range(20)))).decode()
    assert len(small) <= SMALL_VALUE < len(large)
    items = [("globalTags", small, None), ("schemaMetadata", large, None)] * 3
    made = preparer(items)
    assert analysed == ["globalTags", "schemaMetadata", "schemaMetadata", "schemaMetadata"]
    analysers = preparer.analyzers()
    assert made == [preparer.encode(analysers[aspect], orjson.loads(value)) for aspect, value, _ in items]
    assert preparer([("globalTags", None, None), ("status", small, None)]) == [None, None]  # deleted; not searched
