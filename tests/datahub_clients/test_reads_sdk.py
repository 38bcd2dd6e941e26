"""DataHub's Python clients, unmodified, reading from Lodestar (a live server with its MCL
processor): `DataHubGraph` (typed aspects, entities, existence, timeseries values, related
entities, search, listings, counts, the registry's specifications, references), the SDK's
`DataHubClient`, and the Rest.li and OpenAPI forms they parse, requested directly where the
clients hide an answer (a 400 they would turn into an exception, paging)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
import requests
from datahub.cli.migrate import _batch_get_ids
from datahub.emitter.mce_builder import make_data_job_urn, make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph
from datahub.ingestion.graph.openapi import RelationshipDirection
from datahub.ingestion.source.state_provider.datahub_ingestion_checkpointing_provider import (
    DatahubIngestionCheckpointingProvider,
)
from datahub.metadata.schema_classes import (
    AuditStampClass,
    ContainerClass,
    ContainerPropertiesClass,
    CorpUserInfoClass,
    DatahubIngestionCheckpointClass,
    DataJobInputOutputClass,
    DatasetLineageTypeClass,
    DatasetProfileClass,
    DatasetPropertiesClass,
    DomainPropertiesClass,
    EditableSchemaFieldInfoClass,
    EditableSchemaMetadataClass,
    FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass,
    FineGrainedLineageUpstreamTypeClass,
    GlobalTagsClass,
    IngestionCheckpointStateClass,
    NumberTypeClass,
    OtherSchemaClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
    StringTypeClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from gms.aspect_mutations import MUTATIONS
from tests.support.access_fixtures import principal_with_grants
from tests.support.builders import dataset_urn, mcp
from tests.support.server import LiveServer

ORDERS = dataset_urn("shop.orders")
RAW = dataset_urn("shop.raw_orders")
ODD = make_dataset_urn("s3", "bucket/landing zone/a,b (v2)")  # '/', ' ', ',' and parentheses in the name
SHOP = "urn:li:container:shop"
LOADER = make_data_job_urn("airflow", "etl", "load_orders")


def field_urn(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def tags(*names: str) -> GlobalTagsClass:
    return GlobalTagsClass(tags=[TagAssociationClass(tag=f"urn:li:tag:{name}") for name in names])


def schema() -> SchemaMetadataClass:
    return SchemaMetadataClass(
        schemaName="orders", platform="urn:li:dataPlatform:hive", version=0, hash="",
        platformSchema=OtherSchemaClass(rawSchema=""),
        fields=[SchemaFieldClass(fieldPath="id", type=SchemaFieldDataTypeClass(NumberTypeClass()),
                                 nativeDataType="bigint", globalTags=tags("key")),
                SchemaFieldClass(fieldPath="customer", type=SchemaFieldDataTypeClass(StringTypeClass()),
                                 nativeDataType="string", description="who ordered")])


def lineage() -> UpstreamLineageClass:
    return UpstreamLineageClass(
        upstreams=[UpstreamClass(dataset=RAW, type=DatasetLineageTypeClass.TRANSFORMED,
                                 auditStamp=AuditStampClass(time=0, actor="urn:li:corpuser:etl"))],
        fineGrainedLineages=[FineGrainedLineageClass(
            upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET, upstreams=[field_urn(RAW, "cust")],
            downstreamType=FineGrainedLineageDownstreamTypeClass.FIELD, downstreams=[field_urn(ORDERS, "customer")],
            transformOperation="rename")])


def owners(*people: str) -> OwnershipClass:
    return OwnershipClass(owners=[OwnerClass(f"urn:li:corpuser:{p}", OwnershipTypeClass.DATAOWNER) for p in people])


@pytest.fixture
def graph(server: LiveServer):
    client = DataHubGraph(DatahubClientConfig(server=server.url, token=server.token))
    yield client
    client.close()


def emit(graph: DataHubGraph, urn: str, *aspects) -> None:
    for aspect in aspects:
        graph.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))


def indexed(server: LiveServer) -> None:
    """Until the MCL processor has indexed every write so far (the read models follow the store)."""
    assert server.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]


def get(server: LiveServer, path: str, token: str | None = None) -> requests.Response:
    return requests.get(server.url + path, headers={"Authorization": f"Bearer {token or server.token}"}, timeout=60)


def post(server: LiveServer, path: str, body: object) -> requests.Response:
    return requests.post(server.url + path, json=body, headers={"Authorization": f"Bearer {server.token}"},
                         timeout=60)


# -- GET /aspects/{urn} ---------------------------------------------------------------------


def test_get_aspect_returns_each_typed_aspect_as_emitted(server, graph):
    written = [DatasetPropertiesClass(name="orders", description="All orders", customProperties={"team": "sales"}),
               schema(), lineage(), owners("jdoe"), tags("sales", "gold"), StatusClass(removed=False)]
    emit(graph, ORDERS, *written)
    emit(graph, "urn:li:corpuser:jdoe", CorpUserInfoClass(active=True, displayName="Jane Doe", email="j@x.org"))
    for aspect in written:
        read = graph.get_aspect(ORDERS, type(aspect))
        expected = MUTATIONS.get(aspect.ASPECT_NAME, lambda value: value)(aspect.to_obj())  # ownerTypes filled in
        assert read is not None and read.to_obj() == expected, type(aspect).__name__
    assert graph.get_schema_metadata(ORDERS).fields[0].type.type == NumberTypeClass()  # a union member, typed
    assert graph.get_ownership(ORDERS).owners[0].owner == "urn:li:corpuser:jdoe"
    assert graph.get_tags(ORDERS) == tags("sales", "gold")
    assert graph.get_aspect("urn:li:corpuser:jdoe", CorpUserInfoClass).displayName == "Jane Doe"
    assert graph.get_dataset_properties(RAW) is None  # never written
    assert graph.get_glossary_terms(ORDERS) is None  # an aspect the entity does not have


def test_every_aspect_class_of_the_client_finds_its_record_name_and_every_entity_its_key(server):
    """get_aspect looks for the value under its class's record name; exists() asks for the key
    aspect its own table names: both must be the registry's, for every aspect and entity type."""
    from datahub.metadata.schema_classes import ASPECT_NAME_MAP, KEY_ASPECTS

    registry = server.gms.registry
    names = {name: cls.RECORD_SCHEMA.fullname.replace(".pegasus2avro", "") for name, cls in ASPECT_NAME_MAP.items()}
    assert {name: registry.aspects[name].schema_name for name in names if name in registry.aspects} == names
    assert {entity: registry.entities[entity].key_aspect for entity in KEY_ASPECTS if entity in registry.entities} \
        == {entity: cls.ASPECT_NAME for entity, cls in KEY_ASPECTS.items()}


def test_get_aspect_reads_any_version_and_not_deleted_ones(server, graph):
    emit(graph, ORDERS, tags("draft"), tags("sales"), tags("sales", "gold"))
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=1) == tags("draft")
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=2) == tags("sales")
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=0) == tags("sales", "gold")
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=4) is None
    answer = get(server, f"/aspects/{quote(ORDERS, safe='')}?aspect=globalTags&version=0").json()
    assert answer["version"] == 3 and answer["aspect"] == {"com.linkedin.common.GlobalTags": tags(
        "sales", "gold").to_obj()}
    deleted = server.client().propose([mcp(ORDERS, "globalTags", change="DELETE")])  # DataHub's emitter won't
    assert deleted[0]["status"] == "applied"
    assert graph.get_aspect(ORDERS, GlobalTagsClass) is None  # a deletion is no latest value
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=4) is None
    assert graph.get_aspect(ORDERS, GlobalTagsClass, version=3) == tags("sales", "gold")  # history stays


def test_exists_follows_the_entity_through_soft_and_hard_deletes(server, graph):
    assert graph.exists(ORDERS) is False
    emit(graph, ORDERS, tags("sales"))
    assert graph.exists(ORDERS) is True  # its key aspect was written with it
    emit(graph, ORDERS, StatusClass(removed=True))
    assert graph.exists(ORDERS) is True  # soft-deleted: still there, as in DataHub
    graph.hard_delete_entity(ORDERS)
    assert graph.exists(ORDERS) is False
    assert server.client().request("GET", f"/v1/entities/{quote(ORDERS, safe='')}")[0] == 404


def test_urns_with_slashes_commas_and_spaces_in_every_form(server, graph):
    emit(graph, ODD, tags("raw"))
    emit(graph, ORDERS, tags("sales"))
    assert graph.get_tags(ODD) == tags("raw")
    assert graph.exists(ODD)
    assert graph.get_entity_raw(ODD)["urn"] == ODD
    twice = quote(quote(ODD, safe=""), safe="")  # a URN given already encoded, encoded again
    assert get(server, f"/aspects/{twice}?aspect=globalTags").json()["aspect"] == {
        "com.linkedin.common.GlobalTags": tags("raw").to_obj()}
    batch = {entity["urn"]: entity for entity in _batch_get_ids(graph, [ODD, ORDERS])}  # `datahub migrate`'s batch get
    assert set(batch) == {ODD, ORDERS}
    assert batch[ODD]["aspects"]["globalTags"]["value"] == tags("raw").to_obj()


# -- GET /entitiesV2 ------------------------------------------------------------------------


def test_entity_reads_return_the_latest_aspects_enveloped(server, graph):
    emit(graph, ORDERS, DatasetPropertiesClass(description="All orders"), tags("sales"), tags("sales", "gold"),
         schema())
    raw = graph.get_entity_raw(ORDERS)
    assert raw["urn"] == ORDERS and raw["entityName"] == "dataset"
    assert set(raw["aspects"]) == {"datasetKey", "datasetProperties", "globalTags", "schemaMetadata"}
    envelope = raw["aspects"]["globalTags"]
    assert (envelope["name"], envelope["type"], envelope["version"]) == ("globalTags", "VERSIONED", 2)
    assert envelope["systemMetadata"]["version"] == "2" and envelope["created"]["actor"] == "urn:li:corpuser:admin"
    assert set(graph.get_entity_raw(ORDERS, ["globalTags"])["aspects"]) == {"globalTags", "datasetKey"}
    bag = graph.get_entity_semityped(ORDERS)
    assert bag["globalTags"] == tags("sales", "gold") and bag["schemaMetadata"] == schema()
    mcps = {m.aspectName: m for m in graph.get_entity_as_mcps(ORDERS)}
    assert mcps["globalTags"].systemMetadata.version == "2"
    assert mcps["datasetProperties"].aspect.description == "All orders"
    missing = graph.get_entity_raw(RAW)  # as DataHub: only the key aspect, made from the URN
    assert missing["aspects"] == {"datasetKey": {"name": "datasetKey", "type": "VERSIONED", "version": 0,
                                                 "value": {"platform": "urn:li:dataPlatform:hive",
                                                           "name": "shop.raw_orders", "origin": "PROD"}}}


def test_a_batch_get_of_entities_answers_each_as_its_single_read(server, graph):
    emit(graph, ORDERS, tags("sales"))
    emit(graph, ODD, DatasetPropertiesClass(description="odd"))
    ids = ",".join(quote(u, safe="") for u in (ORDERS, ODD))
    answer = get(server, f"/entitiesV2?ids=List({ids})")  # as `datahub migrate` asks
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert set(results) == {ORDERS, ODD}
    assert results[ORDERS] == graph.get_entity_raw(ORDERS) and results[ODD] == graph.get_entity_raw(ODD)
    assert results[ODD]["aspects"]["datasetProperties"]["value"]["description"] == \
        server.client().call("GET", f"/v1/entities/{quote(ODD, safe='')}")["aspects"]["datasetProperties"]["value"][
            "description"] == "odd"


def test_what_the_clients_would_raise_on_is_a_clear_4xx(server, graph):
    emit(graph, ORDERS, tags("sales"))
    urn = quote(ORDERS, safe="")
    for path, status, words in (
            (f"/aspects/{urn}?aspect=noSuchAspect", 400, "not in the registry"),
            (f"/aspects/{urn}?aspect=datasetProfile", 400, "getTimeseriesAspectValues"),
            (f"/aspects/{urn}?aspect=corpUserInfo", 404, "not an aspect of dataset"),
            (f"/aspects/{urn}?aspect=globalTags&version=-1", 400, "version"),
            (f"/aspects/{urn}", 400, "aspect: is required"),
            ("/aspects/not-a-urn?aspect=globalTags", 400, "not-a-urn"),
            ("/entitiesV2/urn%3Ali%3Adataset%3Aunbalanced(", 400, "dataset"),
            ("/entitiesV2?ids=List()", 400, "ids"),
            (f"/openapi/v2/timeline/v1/{urn}?categories=LINEAGE", 400, "LINEAGE")):
        answer = get(server, path)
        assert answer.status_code == status and words in answer.json()["message"], (path, answer.text)


# -- timeseries -----------------------------------------------------------------------------


def profile(millis: int, rows: int) -> DatasetProfileClass:
    return DatasetProfileClass(timestampMillis=millis, rowCount=rows, columnCount=2)


def test_timeseries_values_newest_first_within_filters(server, graph):
    emit(graph, ORDERS, tags("sales"), *(profile(t, r) for t, r in ((1000, 10), (2000, 30), (3000, 20), (4000, 5))))
    indexed(server)
    assert [p.timestampMillis for p in graph.get_timeseries_values(ORDERS, DatasetProfileClass, {})] == \
        [4000, 3000, 2000, 1000]
    bigger = {"or": [{"and": [{"field": "rowCount", "values": ["20"], "condition": "GREATER_THAN_OR_EQUAL_TO"}]}]}
    assert [p.rowCount for p in graph.get_timeseries_values(ORDERS, DatasetProfileClass, bigger)] == [20, 30]
    assert graph.get_latest_timeseries_value(ORDERS, DatasetProfileClass, {"rowCount": "30"}) == profile(2000, 30)
    assert graph.get_timeseries_values(ORDERS, DatasetProfileClass, {}, limit=2) == [profile(4000, 5),
                                                                                     profile(3000, 20)]
    window = post(server, "/aspects?action=getTimeseriesAspectValues", {
        "urn": ORDERS, "entity": "dataset", "aspect": "datasetProfile", "startTimeMillis": 1500,
        "endTimeMillis": 3500}).json()["value"]
    assert [p["aspect"]["contentType"] for p in window["values"]] == ["application/json"] * 2
    assert [profile(0, 0).from_obj(__import__("json").loads(p["aspect"]["value"])).timestampMillis
            for p in window["values"]] == [3000, 2000]
    latest = post(server, "/aspects?action=getTimeseriesAspectValues",  # what `datahub get -a datasetProfile` sends
                  {"urn": ORDERS, "entity": "dataset", "aspect": "datasetProfile", "latestValue": True}).json()
    assert len(latest["value"]["values"]) == 1 and '"timestampMillis":4000' in latest["value"]["values"][0][
        "aspect"]["value"]
    assert post(server, "/aspects?action=getTimeseriesAspectValues",
                {"urn": ORDERS, "aspect": "globalTags"}).status_code == 400


def test_stateful_ingestion_reads_back_its_latest_checkpoint(server, graph, monkeypatch):
    # /config's statefulIngestionCapable is datahub.py's (the write side): here, the read of checkpoints
    monkeypatch.setattr(DatahubIngestionCheckpointingProvider, "_is_server_stateful_ingestion_capable",
                        lambda self: True)
    provider = DatahubIngestionCheckpointingProvider(graph)
    job = provider.get_data_job_urn("datahub", "nightly", "stale_entity_removal")
    for pipeline, millis in (("nightly", 1000), ("nightly", 2000), ("hourly", 3000)):
        emit(graph, job, DatahubIngestionCheckpointClass(
            timestampMillis=millis, pipelineName=pipeline, platformInstanceId="", config="", runId=f"run-{millis}",
            state=IngestionCheckpointStateClass(formatVersion="1.0", serde="base85-bz2-json")))
    indexed(server)
    latest = provider.get_latest_checkpoint("nightly", "stale_entity_removal")
    assert latest is not None and (latest.runId, latest.timestampMillis) == ("run-2000", 2000)
    assert provider.get_latest_checkpoint("weekly", "stale_entity_removal") is None


# -- relationships --------------------------------------------------------------------------


def related(graph: DataHubGraph, urn: str, kind: str, direction: RelationshipDirection) -> list[str]:
    return sorted(e.urn for e in graph.get_related_entities(urn, [kind], direction))


def test_related_entities_both_ways_from_lineage_and_search(server, graph):
    emit(graph, ORDERS, lineage(), tags("sales"), owners("jdoe"), ContainerClass(container=SHOP))
    emit(graph, RAW, tags("sales"), ContainerClass(container=SHOP))
    emit(graph, SHOP, ContainerPropertiesClass(name="shop"))
    emit(graph, LOADER, DataJobInputOutputClass(inputDatasets=[RAW], outputDatasets=[ORDERS]))
    indexed(server)
    out, into = RelationshipDirection.OUTGOING, RelationshipDirection.INCOMING
    assert related(graph, ORDERS, "DownstreamOf", out) == [RAW]
    assert related(graph, RAW, "DownstreamOf", into) == [ORDERS]
    assert related(graph, ORDERS, "Produces", into) == [LOADER]
    assert related(graph, LOADER, "Produces", out) == [ORDERS]
    assert related(graph, RAW, "Consumes", into) == [LOADER]
    assert related(graph, "urn:li:tag:sales", "TaggedWith", into) == sorted([ORDERS, RAW])
    assert related(graph, "urn:li:corpuser:jdoe", "OwnedBy", into) == [ORDERS]
    assert related(graph, SHOP, "IsPartOf", into) == sorted([ORDERS, RAW])
    assert related(graph, ORDERS, "IsPartOf", out) == [SHOP]
    emit(graph, RAW, StatusClass(removed=True))
    indexed(server)
    assert related(graph, SHOP, "IsPartOf", into) == [ORDERS]  # soft-deleted entities are left out


def test_relationships_route_pages_and_refuses_what_it_cannot_answer(server, graph):
    emit(graph, ORDERS, tags("sales", "gold", "pii"))
    base = f"/openapi/relationships/v1/?urn={quote(ORDERS, safe='')}&direction=OUTGOING&relationshipTypes=TaggedWith"
    pages = [get(server, f"{base}&start={start}&count=2").json() for start in (0, 2, 4)]
    assert [p["count"] for p in pages] == [2, 1, 0] and {p["total"] for p in pages} == {3}
    assert [e["urn"] for p in pages for e in p["entities"]] == [f"urn:li:tag:{t}" for t in ("gold", "pii", "sales")]
    group = quote("urn:li:corpGroup:analysts", safe="")
    refused = get(server, f"/openapi/relationships/v1/?urn={group}&direction=INCOMING"
                          "&relationshipTypes=IsMemberOfGroup")
    assert refused.status_code == 400 and "IsMemberOfGroup" in refused.json()["message"]


# -- search, listings, counts ---------------------------------------------------------------


def test_search_list_urns_and_counts(server, graph):
    emit(graph, ORDERS, DatasetPropertiesClass(name="orders", customProperties={"instance": "prod"}), tags("sales"))
    emit(graph, RAW, DatasetPropertiesClass(name="raw_orders", customProperties={"instance": "dev"}))
    emit(graph, ODD, tags("sales"), StatusClass(removed=True))
    emit(graph, "urn:li:domain:finance", DomainPropertiesClass(name="Finance"))
    indexed(server)
    assert graph.get_domain_urn_by_name("Finance") == "urn:li:domain:finance"
    assert graph.get_domain_urn_by_name("Marketing") is None
    everything = graph.get_search_results(0, 10, "dataset")["value"]
    assert everything["numEntities"] == 2 and {e["entity"] for e in everything["entities"]} == {ORDERS, RAW}
    found = post(server, "/entities?action=search", {"input": "*", "entity": "dataset", "start": 0, "count": 10,
                                                     "filter": {"or": [{"and": [{"field": "customProperties",
                                                                                 "values": ["instance=dev"]}]},
                                                                       {"and": [{"field": "tags",
                                                                                 "values": ["urn:li:tag:sales"]}]}]}})
    assert sorted(e["entity"] for e in found.json()["value"]["entities"]) == sorted([ORDERS, RAW])
    assert graph.list_all_entity_urns("dataset", 0, 10) == sorted([ODD, ORDERS, RAW])  # soft-deleted too
    assert graph.list_all_entity_urns("dataset", 1, 1) == [RAW]  # pages in URN order
    assert graph.get_aspect_counts("globalTags") == 2
    assert graph.get_aspect_counts("datasetProperties", urn_like="%raw%") == 1
    refused = post(server, "/entities?action=search", {"input": "*", "filter": {"or": [{"and": [
        {"field": "name", "values": ["orders"], "condition": "CONTAIN"}]}]}})
    assert refused.status_code == 400 and "EQUAL" in refused.json()["message"]


def test_search_across_entities_restli_action_spans_the_types_named(server, graph):
    emit(graph, ORDERS, DatasetPropertiesClass(name="orders", description="orders of the shop"))
    emit(graph, "urn:li:domain:shop", DomainPropertiesClass(name="shop", description="the shop's orders"))
    indexed(server)

    def across(entities: list[str]) -> set[str]:
        found = post(server, "/entities?action=searchAcrossEntities",
                     {"input": "orders", "entities": entities, "start": 0, "count": 10})
        assert found.status_code == 200, found.text
        value = found.json()["value"]
        assert value["numEntities"] == len(value["entities"])
        return {e["entity"] for e in value["entities"]}
    assert across([]) == {ORDERS, "urn:li:domain:shop"}
    assert across(["dataset"]) == {ORDERS}
    refused = post(server, "/entities?action=searchAcrossEntities", {"input": "*", "entities": ["spaceship"]})
    assert refused.status_code == 400 and "spaceship" in refused.json()["message"]


def test_listings_and_counts_hold_only_what_the_caller_may_read(server, graph):
    from tests.support.metadata_fixtures import cdap_dataset, dataset_mcps
    server.client().propose(dataset_mcps("default", "customers") + dataset_mcps("sales", "secretleads"))
    indexed(server)
    reader = principal_with_grants(server, "nsreader", [("default", ["READ"])])
    headers = {"Authorization": f"Bearer {reader}"}
    listed = requests.post(server.url + "/entities?action=listUrns", json={"entity": "dataset", "count": 10},
                           headers=headers, timeout=60).json()["value"]
    assert listed["entities"] == [cdap_dataset("default", "customers")] and listed["total"] == 1
    counted = requests.post(server.url + "/aspects?action=getCount", json={"aspect": "datasetProperties"},
                            headers=headers, timeout=60).json()
    assert counted == {"value": 1}
    secret = quote(cdap_dataset("sales", "secretleads"), safe="")
    assert get(server, f"/aspects/{secret}?aspect=datasetProperties", reader).status_code == 403


# -- registry, references, the SDK ----------------------------------------------------------


def test_registry_specifications_list_every_entity_and_aspect(server, graph):
    specs = graph.get_entity_aspect_specs()
    assert specs is not None
    registry = server.gms.registry
    assert set(specs.entity_aspects) == set(registry.entities)
    assert specs.entity_aspects["dataset"] == set(registry.entities["dataset"].aspects)
    assert specs.supports("dataset", "globalTags") and not specs.supports("corpuser", "schemaMetadata")
    assert specs.schema_version("aiAgentInfo") == registry.aspects["aiAgentInfo"].schema["Aspect"]["schemaVersion"]


def test_delete_references_lists_then_removes_them(server, graph):
    emit(graph, ORDERS, tags("sales", "gold"), EditableSchemaMetadataClass(editableSchemaFieldInfo=[
        EditableSchemaFieldInfoClass(fieldPath="id", globalTags=tags("gold", "key"))]))
    emit(graph, RAW, tags("gold"), owners("jdoe"))
    indexed(server)
    total, found = graph.delete_references_to_urn("urn:li:tag:gold", dry_run=True)
    assert total == 3 and sorted((r["entity"], r["aspect"]) for r in found) == [
        (ORDERS, "editableSchemaMetadata"), (ORDERS, "globalTags"), (RAW, "globalTags")]
    assert graph.get_tags(RAW) == tags("gold")  # a dry run changes nothing
    assert graph.delete_references_to_urn("urn:li:tag:gold")[0] == 3
    assert graph.get_tags(ORDERS) == tags("sales")
    assert graph.get_aspect(ORDERS, EditableSchemaMetadataClass).editableSchemaFieldInfo[0].globalTags == tags("key")
    assert graph.get_tags(RAW) == GlobalTagsClass(tags=[])
    assert graph.get_ownership(RAW).owners == owners("jdoe").owners  # other references stay
    emit(graph, ORDERS, ContainerClass(container=SHOP))
    indexed(server)
    assert graph.delete_references_to_urn(SHOP)[0] == 1
    assert graph.get_aspect(ORDERS, ContainerClass) is None  # a container without it is no container: deleted


def test_delete_references_without_write_privilege_removes_nothing(server, graph):
    emit(graph, ORDERS, tags("sales", "gold"))
    indexed(server)
    reader = DataHubGraph(DatahubClientConfig(server=server.url, token=principal_with_grants(
        server, "reader", [("instance", ["READ"])])))
    try:
        assert reader.delete_references_to_urn("urn:li:tag:gold", dry_run=True)[0] == 1  # reading is allowed
        with pytest.raises(Exception, match="forbidden"):
            reader.delete_references_to_urn("urn:li:tag:gold")
    finally:
        reader.close()
    assert graph.get_tags(ORDERS) == tags("sales", "gold")


def test_sdk_client_reads_and_updates_an_entity(server, graph):
    from datahub.sdk import DataHubClient, DatasetUrn

    emit(graph, ORDERS, DatasetPropertiesClass(description="All orders", customProperties={"team": "sales"}),
         tags("sales"), owners("jdoe"))
    client = DataHubClient(server=server.url, token=server.token)
    dataset = client.entities.get(DatasetUrn.from_string(ORDERS))
    assert dataset.description == "All orders" and dataset.custom_properties == {"team": "sales"}
    assert [t.tag for t in dataset.tags] == ["urn:li:tag:sales"]
    assert [o.owner for o in dataset.owners] == ["urn:li:corpuser:jdoe"]
    dataset.add_tag("urn:li:tag:gold")
    client.entities.update(dataset)
    assert graph.get_tags(ORDERS) == tags("sales", "gold")  # read, then written back with both
    stored = server.client().call("GET", f"/v1/entities/{quote(ORDERS, safe='')}")["aspects"]
    assert [t["tag"] for t in stored["globalTags"]["value"]["tags"]] == ["urn:li:tag:sales", "urn:li:tag:gold"]
    assert stored["datasetProperties"]["value"]["customProperties"] == {"team": "sales"}  # kept


def test_timeline_of_schema_documentation_and_time_windows(server, graph):
    emit(graph, ORDERS, schema())
    changed = schema()
    changed.fields = [changed.fields[1]]
    changed.fields[0].description = "the customer"
    emit(graph, ORDERS, changed)
    path = f"/openapi/v2/timeline/v1/{quote(ORDERS, safe='')}?categories=TECHNICAL_SCHEMA,DOCUMENTATION"
    answer = get(server, path).json()
    assert [(t["semVerChange"], t["semVer"]) for t in answer] == [("MINOR", "0.0.0-computed"),
                                                                  ("MAJOR", "1.0.0-computed")]
    second = {(e["category"], e["operation"], e["modifier"]) for e in answer[1]["changeEvents"]}
    assert second == {("TECHNICAL_SCHEMA", "REMOVE", field_urn(ORDERS, "id")),
                      ("DOCUMENTATION", "MODIFY", field_urn(ORDERS, "customer"))}
    later = get(server, f"{path}&startTime={answer[1]['timestamp']}&raw=true").json()
    assert [t["semVer"] for t in later] == ["1.0.0-computed"] and later[0]["rawDiff"][0]["aspect"] == "schemaMetadata"
    assert get(server, f"{path}&endTime={answer[0]['timestamp'] - 1}").json() == []
