"""DataHub's clients, unmodified, searching Lodestar through `POST /api/graphql`:
`DataHubGraph.get_urns_by_filter` (scrollAcrossEntities) with entity types, platform, env,
container, tags and status, the SDK v2 `DataHubClient.search`, the `datahub search` CLI
(searchAcrossEntities with its bundled fragments and facets), entity queries by URN, and
`create_tag`. Every answer is checked against what Lodestar's own API says (/v1/search,
/v1/entities) as well as against the data written."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
import requests
from datahub.emitter.mce_builder import make_data_job_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DataHubGraph
from datahub.ingestion.graph.filters import RemovedStatusFilter
from datahub.metadata.schema_classes import (
    AuditStampClass,
    BrowsePathEntryClass,
    BrowsePathsV2Class,
    ChangeAuditStampsClass,
    ChartInfoClass,
    ContainerClass,
    ContainerPropertiesClass,
    CorpGroupInfoClass,
    CorpUserInfoClass,
    DataFlowInfoClass,
    DataJobInfoClass,
    DataPlatformInstanceClass,
    DatasetPropertiesClass,
    DomainPropertiesClass,
    DomainsClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    OtherSchemaClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
    StringTypeClass,
    SubTypesClass,
    TagAssociationClass,
    TagPropertiesClass,
)
from datahub.sdk.main_client import DataHubClient
from datahub.sdk.search_filters import FilterDsl as F

from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn
from tests.support.graphql import (
    datahub_cli,
    emit,
    graph,
    live_server,
    native_search,
    post_graphql,
    wait_indexed,
)
from tests.support.server import TOKEN, LiveServer

ORDERS = dataset_urn("shop.orders")
CUSTOMERS = dataset_urn("shop.customers")
RAW = dataset_urn("shop.raw", "mysql", "DEV")
OLD = dataset_urn("shop.old", "hive", "DEV")  # soft-deleted
BULK = [dataset_urn(f"bulk.t{i:02d}", "postgres") for i in range(23)]
DB, SALES = "urn:li:container:db", "urn:li:container:sales"
FLOW = "urn:li:dataFlow:(airflow,nightly,prod)"
JOB = make_data_job_urn("airflow", "nightly", "load", cluster="prod")
CHART = "urn:li:chart:(looker,revenue)"
PII, GOLD = "urn:li:tag:pii", "urn:li:tag:gold"
TERM, DOMAIN = "urn:li:glossaryTerm:Revenue", "urn:li:domain:sales"
JDOE, ANALYSTS = "urn:li:corpuser:jdoe", "urn:li:corpGroup:analysts"
LIVE_DATASETS = {ORDERS, CUSTOMERS, RAW, *BULK}
STAMP = AuditStampClass(time=0, actor="urn:li:corpuser:admin")


def tags(*urns: str) -> GlobalTagsClass:
    return GlobalTagsClass(tags=[TagAssociationClass(tag=u) for u in urns])


def path(*urns: str) -> BrowsePathsV2Class:
    return BrowsePathsV2Class(path=[BrowsePathEntryClass(id=u, urn=u) for u in urns])


def field(name: str) -> SchemaFieldClass:
    return SchemaFieldClass(fieldPath=name, type=SchemaFieldDataTypeClass(StringTypeClass()), nativeDataType="varchar")


def catalog() -> list[MetadataChangeProposalWrapper]:
    aspects = [
        (ORDERS, DatasetPropertiesClass(name="orders", description="Every order", customProperties={"team": "sales"})),
        (ORDERS, tags(PII)),
        (ORDERS, GlossaryTermsClass(terms=[GlossaryTermAssociationClass(TERM)], auditStamp=STAMP)),
        (ORDERS, OwnershipClass(owners=[OwnerClass(JDOE, OwnershipTypeClass.DATAOWNER),
                                        OwnerClass(ANALYSTS, OwnershipTypeClass.TECHNICAL_OWNER)])),
        (ORDERS, DomainsClass(domains=[DOMAIN])),
        (ORDERS, ContainerClass(container=SALES)),
        (ORDERS, path(DB, SALES)),
        (ORDERS, SubTypesClass(typeNames=["Table"])),
        (ORDERS, SchemaMetadataClass(schemaName="orders", platform="urn:li:dataPlatform:hive", version=0, hash="",
                                     platformSchema=OtherSchemaClass(rawSchema=""),
                                     fields=[field("id"), field("amount")])),
        (CUSTOMERS, DatasetPropertiesClass(description="Who buys")),
        (CUSTOMERS, tags(GOLD)),
        (CUSTOMERS, ContainerClass(container=SALES)),  # no browse path: found by its container aspect
        (RAW, DatasetPropertiesClass(description="raw orders")),
        (OLD, DatasetPropertiesClass(description="gone")),
        (OLD, StatusClass(removed=True)),
        *((urn, DatasetPropertiesClass(description=f"bulk table {i}")) for i, urn in enumerate(BULK)),
        (DB, ContainerPropertiesClass(name="db", env="PROD")),
        (DB, DataPlatformInstanceClass(platform="urn:li:dataPlatform:hive")),
        (DB, SubTypesClass(typeNames=["Database"])),
        (SALES, ContainerPropertiesClass(name="sales", customProperties={"env": "PROD"})),
        (SALES, ContainerClass(container=DB)),
        (SALES, path(DB)),
        (FLOW, DataFlowInfoClass(name="nightly", env="PROD")),
        (JOB, DataJobInfoClass(name="load", type="COMMAND")),
        (CHART, ChartInfoClass(title="Revenue", description="Revenue by day", lastModified=ChangeAuditStampsClass())),
        (PII, TagPropertiesClass(name="PII", description="personal data")),
        (JDOE, CorpUserInfoClass(active=True, displayName="Jane Doe", email="jdoe@example.com")),
        (ANALYSTS, CorpGroupInfoClass(admins=[], members=[], groups=[], displayName="Analysts")),
        (TERM, GlossaryTermInfoClass(definition="money in", termSource="INTERNAL", name="Revenue")),
        (DOMAIN, DomainPropertiesClass(name="Sales")),
    ]
    return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in aspects]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_server(tmp_path_factory.mktemp("graphql-search") / "data") as live:
        emit(live, catalog())
        yield live


@pytest.fixture
def client(server: LiveServer):
    connected = graph(server)
    yield connected
    connected.close()


def native_urns(server: LiveServer, query: str, types: str = "", include_removed: bool = False) -> set[str]:
    found = native_search(server, query=query, types=types, count=1000, includeRemoved=str(include_removed).lower())
    assert found["total"] == len(found["results"])
    return {hit["urn"] for hit in found["results"]}


def test_get_urns_by_filter_by_entity_types(server, client: DataHubGraph):
    datasets = list(client.get_urns_by_filter(entity_types=["dataset"]))
    assert set(datasets) == LIVE_DATASETS
    assert len(datasets) == len(set(datasets))
    assert set(datasets) == native_urns(server, "*", "dataset")
    assert set(client.get_urns_by_filter(entity_types=["dataJob", "dataFlow"])) == {JOB, FLOW}
    assert set(client.get_urns_by_filter(entity_types=["container"])) == {DB, SALES} == native_urns(
        server, "*", "container")


def test_get_urns_by_filter_by_platform(server, client: DataHubGraph):
    hive = set(client.get_urns_by_filter(platform="hive"))
    assert hive == {ORDERS, CUSTOMERS, DB}  # the soft-deleted one left out; DB by its dataPlatformInstance
    assert hive == native_urns(server, 'platform:"urn:li:dataPlatform:hive"')
    assert set(client.get_urns_by_filter(platform=["hive", "mysql"], entity_types=["dataset"])) == {
        ORDERS, CUSTOMERS, RAW}
    assert set(client.get_urns_by_filter(platform="hive", status=RemovedStatusFilter.ALL)) == {ORDERS, CUSTOMERS, DB,
                                                                                                OLD}
    assert set(client.get_urns_by_filter(platform="hive", status=RemovedStatusFilter.ONLY_SOFT_DELETED)) == {OLD}


def test_get_urns_by_filter_by_env(server, client: DataHubGraph):
    # origin for datasets, env for containers and flows, customProperties env=... for older containers
    prod = set(client.get_urns_by_filter(env="PROD"))
    assert prod == {ORDERS, CUSTOMERS, *BULK, DB, SALES, FLOW}
    assert prod == (native_urns(server, "origin:PROD") | native_urns(server, "env:PROD"))
    assert set(client.get_urns_by_filter(env="DEV")) == {RAW}
    assert set(client.get_urns_by_filter(env="PROD", platform="hive", entity_types=["dataset"])) == {ORDERS, CUSTOMERS}


def test_get_urns_by_filter_by_container_and_tags(server, client: DataHubGraph):
    assert set(client.get_urns_by_filter(container=DB)) == {ORDERS, SALES}  # by their browse paths
    assert set(client.get_urns_by_filter(container=SALES)) == {ORDERS, CUSTOMERS}  # a path or a container aspect
    pii = {"field": "tags", "values": [PII], "condition": "EQUAL"}
    assert set(client.get_urns_by_filter(extraFilters=[pii])) == {ORDERS} == native_urns(server, f'tags:"{PII}"')
    either = {"field": "tags", "values": [PII, GOLD], "condition": "EQUAL"}
    assert set(client.get_urns_by_filter(extraFilters=[either], entity_types=["dataset"])) == {ORDERS, CUSTOMERS}
    assert set(client.get_urns_by_filter(query="orders", entity_types=["dataset"])) == native_urns(
        server, "orders", "dataset")


def test_scrolling_pages_through_everything_once(server, client: DataHubGraph, monkeypatch):
    calls = []
    original = client.execute_graphql

    def counting(*args, **kwargs):
        calls.append(kwargs.get("variables", {}).get("scrollId"))
        return original(*args, **kwargs)
    monkeypatch.setattr(client, "execute_graphql", counting)
    found = list(client.get_urns_by_filter(platform="postgres", batch_size=7))
    assert found == sorted(BULK)  # URN order, each once
    assert len(calls) == 4 and calls[0] is None and len(set(calls)) == 4


def scroll(server: LiveServer, scroll_id: str | None, count: int) -> dict:
    query = """query($scrollId: String, $count: Int) {
      scrollAcrossEntities(input: {query: "*", types: [DATASET], count: $count, scrollId: $scrollId,
          orFilters: [{and: [{field: "platform", values: ["urn:li:dataPlatform:postgres"]}]}]}) {
        nextScrollId total searchResults { entity { urn } } } }"""
    answer = post_graphql(server, {"query": query, "variables": {"scrollId": scroll_id, "count": count}})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    return answer.json()["data"]["scrollAcrossEntities"]


def test_a_scroll_neither_repeats_nor_skips_when_entities_come_and_go_meanwhile(server):
    first = scroll(server, None, 10)
    seen = [r["entity"]["urn"] for r in first["searchResults"]]
    assert seen == sorted(BULK)[:10] and first["total"] == len(BULK)
    early, late = dataset_urn("bulk.a_early", "postgres"), dataset_urn("bulk.z_late", "postgres")
    gone = sorted(BULK)[:2]  # already answered: the positions after them move back by two
    emit(server, [MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(description="new"))
                  for u in (early, late)]  # one sorts before the position reached, one after
         + [MetadataChangeProposalWrapper(entityUrn=u, aspect=StatusClass(removed=True)) for u in gone])
    try:
        cursor = first["nextScrollId"]
        while cursor:
            page = scroll(server, cursor, 10)
            seen += [r["entity"]["urn"] for r in page["searchResults"]]
            cursor = page["nextScrollId"]
        assert seen == sorted(BULK) + [late]
    finally:
        client = graph(server)
        for urn in (early, late):
            client.hard_delete_entity(urn)
        client.close()
        emit(server, [MetadataChangeProposalWrapper(entityUrn=u, aspect=StatusClass(removed=False)) for u in gone])


def test_sdk_v2_search_client(server):
    client = DataHubClient(server=server.url, token=TOKEN)
    urns = lambda f=None, q=None: {str(u) for u in client.search.get_urns(query=q, filter=f)}  # noqa: E731
    assert urns(F.and_(F.platform("hive"), F.env("PROD"))) == {ORDERS, CUSTOMERS, DB}
    assert urns(F.entity_type("chart")) == {CHART}
    assert urns(F.or_(F.tag(GOLD), F.tag(PII))) == {CUSTOMERS, ORDERS}
    assert urns(F.or_(F.tag(GOLD), F.entity_type("chart"))) == {CHART}  # the SDK makes any entity type filter `types`
    assert urns(F.and_(F.not_(F.entity_type("dataset")), F.entity_type(["chart", "dataJob"]))) == {CHART, JOB}
    assert urns(F.owner(ANALYSTS)) == {ORDERS}
    assert urns(F.glossary_term(TERM)) == {ORDERS}
    assert urns(F.domain(DOMAIN)) == {ORDERS}
    assert urns(F.has_custom_property("team", "sales")) == {ORDERS}
    assert urns(F.entity_subtype("Database")) == {DB}
    assert urns(F.container(SALES, direct_descendants_only=True)) == {ORDERS, CUSTOMERS}
    assert urns(F.soft_deleted(RemovedStatusFilter.ONLY_SOFT_DELETED)) == {OLD}
    assert urns(q="revenue") == native_urns(server, "revenue")
    assert urns(F.entity_type("dataset")) == native_urns(server, "*", "dataset")


def test_sdk_v2_search_names_what_lodestar_cannot_filter(server):
    client = DataHubClient(server=server.url, token=TOKEN)
    with pytest.raises(Exception, match="negated conditions are supported on _entityType, removed and urn only"):
        list(client.search.get_urns(filter=F.not_(F.platform("postgres"))))
    with pytest.raises(Exception, match="'hasDescription'"):
        list(client.search.get_urns(filter=F.custom_filter("hasDescription", "EQUAL", ["true"])))
    with pytest.raises(Exception, match="condition GREATER_THAN"):
        list(client.search.get_urns(filter=F.custom_filter("platform", "GREATER_THAN", ["a"])))


def test_datahub_search_cli(server, tmp_path):
    done = datahub_cli(server, tmp_path, "search", "*", "--filter", "platform=hive", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert {r["entity"]["urn"] for r in answer["searchResults"]} == {ORDERS, CUSTOMERS, DB}
    assert answer["total"] == 3
    orders = next(r["entity"] for r in answer["searchResults"] if r["entity"]["urn"] == ORDERS)
    assert orders["platform"]["name"] == "hive" and orders["properties"]["description"] == "Every order"
    assert orders["tags"]["tags"][0]["tag"] == {"urn": PII, "name": "pii",
                                                "properties": {"name": "PII", "description": "personal data"}}
    assert {o["owner"]["urn"] for o in orders["ownership"]["owners"]} == {JDOE, ANALYSTS}
    assert orders["domain"]["domain"]["properties"]["name"] == "Sales"
    assert orders["container"]["urn"] == SALES and orders["container"]["properties"]["name"] == "sales"
    facets = {f["field"]: {a["value"]: a["count"] for a in f["aggregations"]} for f in answer["facets"]}
    native = native_search(server, query='platform:"urn:li:dataPlatform:hive"', count=1)["facets"]
    assert facets["platform"] == {"urn:li:dataPlatform:hive": 3}
    assert facets["tags"] == {f"urn:li:tag:{v['value']}": v["count"] for v in native["tags"]} == {PII: 1, GOLD: 1}

    done = datahub_cli(server, tmp_path, "search", "*", "--filter", "env=PROD", "--filter", "platform=hive,postgres",
                       "--format", "urns", "-n", "50")
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(done.stdout.split()) == {ORDERS, CUSTOMERS, DB, *BULK}


def test_search_across_entities_pages_and_counts_like_v1_search(server):
    query = """query($start: Int, $filters: [AndFilterInput!]) {
      searchAcrossEntities(input: {query: "*", start: $start, count: 5, orFilters: $filters}) {
        start count total searchResults { entity { urn type } }
        facets { field aggregations { value count } } } }"""
    env = [{"and": [{"field": "origin", "values": ["PROD"]}]}, {"and": [{"field": "env", "values": ["PROD"]}]}]
    union = native_urns(server, "origin:PROD") | native_urns(server, "env:PROD")
    seen, start = [], 0
    while True:
        answer = post_graphql(server, {"query": query, "variables": {"start": start, "filters": env}}).json()
        page = answer["data"]["searchAcrossEntities"]
        assert page["total"] == len(union) and page["start"] == start
        seen += [r["entity"]["urn"] for r in page["searchResults"]]
        if page["count"] < 5:
            break
        start += 5
    assert seen == sorted(union)
    facets = {f["field"]: {a["value"]: a["count"] for a in f["aggregations"]} for f in page["facets"]}
    assert facets["_entityType"] == {"DATASET": 2 + len(BULK), "CONTAINER": 2, "DATA_FLOW": 1}
    one = post_graphql(server, {"query": query, "variables": {"start": 0, "filters": env[:1]}}).json()
    native = native_search(server, query="origin:PROD", count=5)
    assert one["data"]["searchAcrossEntities"]["total"] == native["total"]
    assert [r["entity"]["urn"] for r in one["data"]["searchAcrossEntities"]["searchResults"]] == [
        r["urn"] for r in native["results"]]
    typed = post_graphql(server, {"query": '{ search(input: {type: DATASET, query: "orders", count: 50}) {'
                                           ' total searchResults { entity { urn } matchedFields { name value } } } }'})
    ranked = native_search(server, query="orders", types="dataset", count=50)
    assert [r["entity"]["urn"] for r in typed.json()["data"]["search"]["searchResults"]] == [
        r["urn"] for r in ranked["results"]]  # by relevance, as /v1/search ranks them
    assert typed.json()["data"]["search"]["searchResults"][0]["matchedFields"] == [
        {"name": m["field"], "value": m["value"]} for m in ranked["results"][0]["matches"]]


def test_entity_by_urn_with_the_fields_the_sdk_reads(server, client: DataHubGraph):
    answer = client.execute_graphql("""query($urn: String!) { dataset(urn: $urn) {
        urn type name origin platform { urn name }
        properties { name description customProperties { key value } }
        schemaMetadata(version: 0) { name fields { fieldPath nativeDataType type } }
        ownership { owners { type owner { ... on CorpUser { urn username properties { displayName } }
                                          ... on CorpGroup { urn name properties { displayName } } } } }
        glossaryTerms { terms { term { urn name properties { name definition } } } }
        container { urn properties { name } platform { name } }
        parentContainers { count containers { urn } }
        subTypes { typeNames } exists } }""", variables={"urn": ORDERS})["dataset"]
    stored = server.client().entity(ORDERS)["aspects"]
    assert answer["name"] == "shop.orders" and answer["origin"] == "PROD" and answer["type"] == "DATASET"
    assert answer["platform"] == {"urn": "urn:li:dataPlatform:hive", "name": "hive"}
    assert answer["properties"]["description"] == stored["datasetProperties"]["value"]["description"]
    assert answer["properties"]["customProperties"] == [{"key": "team", "value": "sales"}]
    assert [f["fieldPath"] for f in answer["schemaMetadata"]["fields"]] == [
        f["fieldPath"] for f in stored["schemaMetadata"]["value"]["fields"]] == ["id", "amount"]
    assert answer["schemaMetadata"]["fields"][0] == {"fieldPath": "id", "nativeDataType": "varchar", "type": "STRING"}
    owners = {o["owner"]["urn"]: o for o in answer["ownership"]["owners"]}
    assert owners[JDOE]["owner"]["username"] == "jdoe" and owners[JDOE]["type"] == "DATAOWNER"
    assert owners[JDOE]["owner"]["properties"]["displayName"] == "Jane Doe"
    assert owners[ANALYSTS]["owner"]["name"] == "analysts"
    assert answer["glossaryTerms"]["terms"][0]["term"]["properties"] == {"name": "Revenue", "definition": "money in"}
    assert answer["container"] == {"urn": SALES, "properties": {"name": "sales"}, "platform": {"name": "unknown"}}
    assert answer["parentContainers"] == {"count": 2, "containers": [{"urn": SALES}, {"urn": DB}]}
    assert answer["subTypes"] == {"typeNames": ["Table"]} and answer["exists"] is True
    # the SQL parser's schema resolver reads schemas through scrollAcrossEntities
    schemas = dict(client._bulk_fetch_schema_info_by_filter(platform="hive"))
    assert set(schemas) == {ORDERS}
    assert [f["fieldPath"] for f in schemas[ORDERS]["fields"]] == ["id", "amount"]
    assert client.execute_graphql(f'{{ dataset(urn: "{dataset_urn("no.such")}") {{ urn }} }}')["dataset"] is None
    many = client.execute_graphql(f'{{ entities(urns: ["{CHART}", "{FLOW}"]) {{ urn type }} }}')["entities"]
    assert many == [{"urn": CHART, "type": "CHART"}, {"urn": FLOW, "type": "DATA_FLOW"}]


def test_a_reader_finds_only_what_it_may_read(server):
    token = principal_with_grants(server, "orders-reader", [(ORDERS, ["READ"])])
    reader = graph(server, token)
    try:
        assert list(reader.get_urns_by_filter(entity_types=["dataset"])) == [ORDERS]
        assert native_urns(server, "*") != {ORDERS}
        answer = reader.execute_graphql("""{ searchAcrossEntities(input: {query: "*"}) {
            total facets { field aggregations { value count } } searchResults { entity { urn
              ... on Dataset { container { urn properties { name } } } } } } }""")["searchAcrossEntities"]
        assert answer["total"] == 1
        assert {a["value"]: a["count"] for f in answer["facets"] if f["field"] == "_entityType"
                for a in f["aggregations"]} == {"DATASET": 1}
        # its container is named by an aspect it may read, but not readable itself
        assert answer["searchResults"][0]["entity"]["container"] == {"urn": SALES, "properties": None}
        with pytest.raises(Exception, match=re.escape(f"forbidden: the caller may not read {CUSTOMERS}")):
            reader.execute_graphql(f'{{ dataset(urn: "{CUSTOMERS}") {{ urn }} }}')
        with pytest.raises(Exception, match="forbidden"):
            reader.create_tag("readers-cannot")
    finally:
        reader.close()


def test_create_tag(server, client: DataHubGraph):
    assert client.create_tag("certified") == "urn:li:tag:certified"
    stored = server.client().entity("urn:li:tag:certified")["aspects"]
    assert stored["tagProperties"]["value"] == {"name": "certified"}
    assert stored["ownership"]["value"]["owners"] == [{"owner": "urn:li:corpuser:admin", "type": "TECHNICAL_OWNER"}]
    with pytest.raises(Exception, match="tag urn:li:tag:certified already exists"):
        client.create_tag("certified")
    answer = client.execute_graphql('mutation { createTag(input: {name: "Quality", description: "checked"}) }')
    created = answer["createTag"]
    assert created.startswith("urn:li:tag:") and created != "urn:li:tag:Quality"  # a random id when none is given
    assert server.client().aspect(created, "tagProperties")["value"] == {"name": "Quality", "description": "checked"}
    wait_indexed(server)
    assert {"urn:li:tag:certified", created} <= set(client.get_urns_by_filter(entity_types=["tag"]))
    assert requests.get(f"{server.url}/v1/entities/{quote(created, safe='')}",
                        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).status_code == 200


def test_datahub_graphql_cli(server, tmp_path):
    listed = datahub_cli(server, tmp_path, "graphql", "--list-queries", "--format", "json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert {"searchAcrossEntities", "scrollAcrossEntities", "searchAcrossLineage"} <= set(
        re.findall(r'"name": "(\w+)"', listed.stdout))
    query = '{ searchAcrossEntities(input: {query: "*", types: [CHART]}) { total searchResults { entity { urn } } } }'
    done = datahub_cli(server, tmp_path, "graphql", "--query", query, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["searchAcrossEntities"] == {"total": 1, "searchResults": [{"entity": {"urn": CHART}}]}
    assert native_search(server, query="*", types="chart")["total"] == 1


OVERLAPPING = """query($count: Int) { searchAcrossEntities(input: {query: "*", count: $count, orFilters: [
  {and: [{field: "tags", values: ["urn:li:tag:pii"]}]},
  {and: [{field: "domains", values: ["urn:li:domain:sales"]}]},
  {and: [{field: "platform", values: ["urn:li:dataPlatform:hive"]}]}]}) {
  total searchResults { entity { urn } } facets { field aggregations { value count } } } }"""


def test_overlapping_alternatives_count_each_entity_once(server, monkeypatch):
    def ask(count: int) -> dict:
        answer = post_graphql(server, {"query": OVERLAPPING, "variables": {"count": count}}).json()
        assert "errors" not in answer, answer
        found = answer["data"]["searchAcrossEntities"]
        found["facets"] = {f["field"]: {a["value"]: a["count"] for a in f["aggregations"]} for f in found["facets"]}
        return found

    walked = ask(10)  # ORDERS matches all three alternatives, CUSTOMERS and DB one each
    assert [r["entity"]["urn"] for r in walked["searchResults"]] == sorted({ORDERS, CUSTOMERS, DB})
    assert walked["total"] == 3
    assert walked["facets"]["_entityType"] == {"DATASET": 2, "CONTAINER": 1}
    assert walked["facets"]["tags"] == {PII: 1, GOLD: 1}
    native = native_urns(server, f'tags:"{PII}"') | native_urns(server, f'domains:"{DOMAIN}"') | native_urns(
        server, 'platform:"urn:li:dataPlatform:hive"')
    assert walked["total"] == len(native)
    # past the walking limit the total is counted by inclusion-exclusion over the intersections
    monkeypatch.setattr("lodestar.api.graphql.search.MAX_MERGED", 0)
    counted = ask(0)
    assert counted["total"] == 3 and counted["facets"] == walked["facets"]
