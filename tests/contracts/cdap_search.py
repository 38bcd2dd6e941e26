"""CDAP's search query language, the same on every search adapter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lodestar.api.metadata_search import Search, conditions
from mcl_processor.search.cdap import EVERYTHING, HIDDEN, parse, system, value_tokens
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import Indexed
from tests.support.metadata_fixtures import cdap_dataset, schema
from tests.support.readmodels import ModelsFactory

CUSTOMERS, ORDERS, STAGING = (cdap_dataset("default", n) for n in ("customers", "orders", "_staging"))


CLICKS, LEADS = cdap_dataset("default", "clicks"), cdap_dataset("sales", "leads")


FIELD = f"urn:li:schemaField:({CUSTOMERS},myField)"


FILE = f"urn:li:customEntity:({CUSTOMERS},file,file=part01)"


APP = "urn:li:dataFlow:(cdap,Shop,default)"


PROGRAM = f"urn:li:dataJob:({APP},loader)"


HIVE = dataset_urn("shop.orders")


HIDDEN_OUT = system(HIDDEN, "true")


def _user(tags: list[str], **properties: str):
    return {"tags": tags, "properties": properties}


def build(harness: Indexed) -> None:
    harness.write(
        proposal(CUSTOMERS, "datasetProperties", {"name": "customers", "description": "All our buyers",
                                                  "customProperties": {"ttl": "3600"}}),
        proposal(CUSTOMERS, "schemaMetadata", schema(("empname", '["null","string"]'), ("age", "int"),
                                                     ("zip_code", "long"))),
        proposal(CUSTOMERS, "userScopeMetadata", _user(["pii", "finance_data"], owner="sales-team", region="us,eu")),
        proposal(ORDERS, "datasetProperties", {"name": "orders"}),
        proposal(ORDERS, "schemaMetadata", schema(("id", "long"))),
        proposal(ORDERS, "userScopeMetadata", _user(["finance"], owner="ops", path="/data/in (2020)",
                                                    emails="a@x.com, b@y.org", where="s3://bucket/t;v=2")),
        proposal(STAGING, "datasetProperties", {"name": "_staging"}),
        proposal(STAGING, "userScopeMetadata", _user(["finance"])),
        proposal(CLICKS, "datasetProperties", {"name": "clicks"}),
        proposal(CLICKS, "subTypes", {"typeNames": ["Stream"]}),
        proposal(CLICKS, "userScopeMetadata", _user(["raw"])),
        proposal(LEADS, "datasetProperties", {"name": "leads"}),
        proposal(LEADS, "userScopeMetadata", _user(["finance"])),
        proposal(FIELD, "userScopeMetadata", _user(["pii"])),
        proposal(FILE, "userScopeMetadata", _user(["raw-file"])),
        proposal(APP, "dataFlowInfo", {"name": "Shop"}),
        proposal(APP, "userScopeMetadata", _user([], owner="web")),
        proposal(PROGRAM, "dataJobInfo", {"name": "loader", "type": {"string": "mapreduce"}}),
        proposal(HIVE, "datasetProperties", {"name": "orders"}),
        proposal(HIVE, "userScopeMetadata", _user(["finance"])),
        proposal(HIVE, "systemScopeMetadata", _user(["checked"], source="import")),
    )


class CdapSearchContract:
    @pytest.fixture(scope="class")
    @classmethod
    def catalog(cls, models_factory: ModelsFactory, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
        harness = Indexed(tmp_path_factory.mktemp("cdap") / "data", models_factory)
        build(harness)
        yield harness
        harness.close()

    @staticmethod
    def found(catalog: Indexed, query: str, scope: str | None = None, hidden: bool = False) -> set[str]:
        result = catalog.search.select(parse(query, scope), None if hidden else HIDDEN_OUT, 0, 100)
        assert result.total == len(result.hits)
        return {hit.urn for hit in result.hits}

    def test_a_term_matches_whole_tokens_and_a_star_prefixes(self, catalog):
        assert self.found(catalog, "finance") == {CUSTOMERS, ORDERS, LEADS, HIVE}  # finance_data: finance, data
        assert self.found(catalog, "FINANCE") == self.found(catalog, "finance")
        assert self.found(catalog, "financ") == set()
        assert self.found(catalog, "financ*") == {CUSTOMERS, ORDERS, LEADS, HIVE}
        assert self.found(catalog, "data") == {CUSTOMERS}

    def test_terms_are_or_ed(self, catalog):
        assert self.found(catalog, "pii raw") == {CUSTOMERS, FIELD, CLICKS, FILE}
        assert self.found(catalog, "pii zebra") == {CUSTOMERS, FIELD}

    def test_key_value_forms(self, catalog):
        assert self.found(catalog, "owner:sales") == {CUSTOMERS}  # sales-team: sales, team
        assert self.found(catalog, "owner:sales-team") == {CUSTOMERS}
        assert self.found(catalog, "owner:sal") == set()
        assert self.found(catalog, "owner:sal*") == {CUSTOMERS}
        assert self.found(catalog, "OWNER:OPS") == {ORDERS}
        assert self.found(catalog, "owner:*") == {CUSTOMERS, ORDERS, APP}
        assert self.found(catalog, "region:eu") == {CUSTOMERS}  # "us,eu": us, eu
        assert self.found(catalog, "properties:region") == {CUSTOMERS}
        assert self.found(catalog, "tags:pii") == {CUSTOMERS, FIELD}
        assert self.found(catalog, "tags:fin*") == {CUSTOMERS, ORDERS, LEADS, HIVE}
        assert self.found(catalog, "tags:raw") == {CLICKS, FILE}

    def test_schema_fields_and_their_types(self, catalog):
        assert self.found(catalog, "empname") == {CUSTOMERS}
        assert self.found(catalog, "empname:STRING") == {CUSTOMERS}  # ["null","string"]: STRING
        assert self.found(catalog, "age:int") == {CUSTOMERS}
        assert self.found(catalog, "age:long") == set()
        assert self.found(catalog, "schema:*") == {CUSTOMERS, ORDERS}
        assert self.found(catalog, "schema:zip_code") == {CUSTOMERS}
        assert self.found(catalog, "schema:emp*") == {CUSTOMERS}

    def test_entity_type_and_name(self, catalog):
        assert self.found(catalog, "field:myFie*") == {FIELD}
        assert self.found(catalog, "field:myfield") == {FIELD}
        assert self.found(catalog, "dataset:customers") == {CUSTOMERS}
        assert self.found(catalog, "stream:clicks") == {CLICKS}
        assert self.found(catalog, "application:shop") == {APP}
        assert self.found(catalog, "program:loader") == {PROGRAM}
        assert self.found(catalog, "file:part01") == {FILE}
        assert self.found(catalog, "dataset:orders") == {ORDERS}
        assert self.found(catalog, "dataset:shop.orders") == {HIVE}  # outside CDAP: the name in its URN

    def test_everything_nothing_and_separators(self, catalog):
        everything = self.found(catalog, "*", hidden=True)
        assert {CUSTOMERS, ORDERS, STAGING, CLICKS, LEADS, FIELD, FILE, APP, PROGRAM, HIVE} <= everything
        assert STAGING not in self.found(catalog, "*")
        for query in ("-_,", ":", " ", "-:* _"):
            assert value_tokens(query.strip("*")) == [] or query == "-:* _"
            assert self.found(catalog, query) == set(), query

    def test_values_with_special_characters_split_at_separators_only(self, catalog):
        assert self.found(catalog, "path:/data/in") == {ORDERS}
        assert self.found(catalog, "path:(2020)") == {ORDERS}
        assert self.found(catalog, "path:/dat*") == {ORDERS}
        assert self.found(catalog, "path:data") == set()  # '/' splits nothing: /data/in is one token
        assert self.found(catalog, "path:2020") == set()
        assert self.found(catalog, "emails:a@x.com") == {ORDERS}  # ", " splits the list
        assert self.found(catalog, "emails:B@Y.ORG") == {ORDERS}
        assert self.found(catalog, "emails:a@x*") == {ORDERS}
        assert self.found(catalog, "a@x.com") == {ORDERS}
        assert self.found(catalog, "emails:x.com") == set()
        assert self.found(catalog, "where:s3") == {ORDERS}  # ':' splits: s3, //bucket/t;v=2
        assert self.found(catalog, "where://bucket/t;v=2") == {ORDERS}
        assert self.found(catalog, "where:s3://bucket*") == {ORDERS}  # both tokens, the last a prefix
        assert self.found(catalog, "where:bucket") == set()

    def test_derived_system_properties(self, catalog):
        assert self.found(catalog, "ttl:3600") == {CUSTOMERS}
        assert self.found(catalog, "ttl:36*") == {CUSTOMERS}
        assert self.found(catalog, "ttl:36") == set()
        assert self.found(catalog, "properties:ttl") == {CUSTOMERS}
        assert self.found(catalog, "ttl:*") == {CUSTOMERS}
        assert self.found(catalog, "3600", "SYSTEM") == {CUSTOMERS}
        assert self.found(catalog, "ttl:3600", "USER") == set()
        assert self.found(catalog, "type:stream") == {CLICKS}
        assert self.found(catalog, "type:file") == {FILE}
        assert self.found(catalog, "type:program") == {PROGRAM}
        assert {CUSTOMERS, ORDERS, CLICKS, HIVE} <= self.found(catalog, "type:dataset")
        assert FIELD not in self.found(catalog, "type:dataset")
        assert {CUSTOMERS, ORDERS, CLICKS, LEADS, FIELD, FILE, APP, PROGRAM, HIVE} <= self.found(
            catalog, "properties:type")
        assert self.found(catalog, "description:buyers") == {CUSTOMERS}
        assert self.found(catalog, "entity-name:customers") == {CUSTOMERS}

    def test_scopes(self, catalog):
        assert self.found(catalog, "pii", "USER") == {CUSTOMERS, FIELD}
        assert self.found(catalog, "pii", "SYSTEM") == set()
        assert self.found(catalog, "checked", "SYSTEM") == {HIVE}
        assert self.found(catalog, "source:import", "USER") == set()
        assert self.found(catalog, "customers", "USER") == set()
        assert self.found(catalog, "customers", "SYSTEM") == {CUSTOMERS}

    def test_hidden_entities(self, catalog):
        assert STAGING in self.found(catalog, "finance", hidden=True)
        assert STAGING not in self.found(catalog, "finance")
        assert self.found(catalog, "staging", hidden=True) == {STAGING}

    def test_targets_namespaces_and_what_a_reader_may_read(self, catalog):
        def run(query: str, readable=None, **options) -> tuple[int, list[str]]:
            search = Search(query, options.get("targets", ()), options.get("namespaces", ()), None, None, 0, 100, 0,
                            False)
            result = catalog.search.select(*conditions(search, readable), 0, 100)
            return result.total, [h.urn for h in result.hits]

        assert set(run("finance", targets=("dataset",))[1]) == {CUSTOMERS, ORDERS, LEADS, HIVE}
        assert set(run("*", targets=("stream", "field"))[1]) == {CLICKS, FIELD}
        assert set(run("finance", namespaces=("sales",))[1]) == {LEADS}
        assert run("finance", frozenset({"urn:li:container:sales"})) == (1, [LEADS])
        assert run("finance", frozenset()) == (0, [])
        assert set(run("pii", frozenset({CUSTOMERS}))[1]) == {CUSTOMERS, FIELD}  # a field with its dataset
        assert run("raw", frozenset({CUSTOMERS})) == (1, [FILE])

    def test_sort_by_name_and_pages(self, catalog):
        expr = parse("finance")
        names = [h.name for h in catalog.search.select(expr, HIDDEN_OUT, 0, 10, "name").hits]
        assert names == sorted(names, key=str.lower) and len(names) == 4
        desc = [h.urn for h in catalog.search.select(expr, HIDDEN_OUT, 0, 10, "-name").hits]
        asc = [h.urn for h in catalog.search.select(expr, HIDDEN_OUT, 0, 10, "name").hits]
        assert [catalog_name(catalog, u) for u in desc] == sorted((catalog_name(catalog, u) for u in asc),
                                                                  key=str.lower, reverse=True)
        paged = [h.urn for start in (0, 2) for h in catalog.search.select(expr, HIDDEN_OUT, start, 2, "urn").hits]
        assert paged == sorted(asc)
        assert catalog.search.select(expr, HIDDEN_OUT, 3, 2).total == 4
        assert catalog.search.select(EVERYTHING, None, 0, 0).total >= 10


def catalog_name(catalog: Indexed, urn: str) -> str:
    return next(h.name for h in catalog.search.select(EVERYTHING, None, 0, 100).hits if h.urn == urn)
