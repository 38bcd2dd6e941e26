"""The read models cope with every annotation of DataHub's model as the pinned package ships it:
annotations compile for every aspect, what is understood is indexed (Searchable fields, paths
into fields, lineage relationships), shapes not understood are ignored, and aspects known only
from the package are found by search after indexing."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import quote

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import (
    CalendarIntervalClass,
    ChangeAuditStampsClass,
    ChartInfoClass,
    CorpGroupInfoClass,
    DataJobInputOutputClass,
    DataProcessInstanceRelationshipsClass,
    DatasetUsageStatisticsClass,
    EdgeClass,
    GlossaryTermInfoClass,
    OperationClass,
    OperationTypeClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    TimeWindowSizeClass,
)

from ingest.proposal import parse_proposal
from mcl_processor.annotations import Annotations, Edge, annotations_of, compile_aspect
from mcl_processor.search.document import Analyzer
from schemas.jsonform import PRIMITIVES
from schemas.registry import EntityRegistry
from tests.support.builders import dataset_urn
from tests.support.indexed import Indexed

ORDERS, RAW = dataset_urn("shop.orders"), dataset_urn("shop.raw_orders")
JOB = "urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,PROD),load)"
TERM, CHART, GROUP = "urn:li:glossaryTerm:revenue", "urn:li:chart:(looker,orders_by_day)", "urn:li:corpGroup:data-eng"


def sample(schema: Any, named: dict[str, Any], seen: tuple[str, ...] = (), urn: list[str] | None = None) -> Any:
    """A valid value of every field of a schema (one item per array, one entry per map, the first
    branch of a union), in DataHub's JSON form; a recursive type stops at its first repeat."""
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            text = f"urn:li:{urn[0] if urn else 'corpuser'}:x"
            return {"null": None, "boolean": True, "int": 1, "long": 1, "float": 1.0, "double": 1.0,
                    "string": text, "bytes": "x"}[schema]
        schema = named[schema]
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if not branches:
            return None
        value = sample(branches[0], named, seen, urn)
        if len(branches) == 1:
            return value
        first = branches[0]
        name = first if isinstance(first, str) else first.get("name", first.get("type"))
        return {name: value}
    kind = schema["type"]
    if kind == "enum":
        return schema["symbols"][0]
    if kind == "fixed":
        return "x"
    if kind == "array":
        return [sample(schema["items"], named, seen, urn)]
    if kind == "map":
        return {"key": sample(schema["values"], named, seen)}
    if kind in ("record", "error"):
        if schema["name"] in seen:
            return None
        out = {}
        for field in schema["fields"]:
            value = sample(field["type"], named, (*seen, schema["name"]), field.get("Urn"))
            if value is None and ("default" in field or "null" in field["type"]):
                continue
            out[field["name"]] = value
        return out
    return sample(kind, named, seen, urn)


def test_annotations_compile_for_every_aspect_and_read_any_value(registry: EntityRegistry):
    annotations = Annotations(registry)
    assert set(annotations.by_aspect) == set(registry.aspects)
    for name, spec in registry.aspects.items():
        compiled = annotations[name]
        value = sample(spec.schema, registry.named_types)
        spec.check(value)  # the sample is valid: what is read below is what GMS lets through
        compiled.found(value), compiled.edges("urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)", value)
        compiled.removed(value)
        if not compiled.field_operations:  # (a run's field operations obey CDAP's rules, checked on write)
            compiled.field_edges(value)
        Analyzer(compiled).analyse(value)
        for odd in (None, {}, [], "text", 7, {"unexpected": [1, {"x": None}]}):
            compiled.found(odd), compiled.edges("urn:li:tag:t", odd), Analyzer(compiled).analyse(odd or {})


def test_most_of_datahubs_aspects_are_searchable_and_lineage_comes_from_its_relationships(registry):
    annotations = annotations_of(registry)
    datahub = [name for name, spec in registry.aspects.items() if spec.origin == "datahub"]
    assert sum(annotations[name].searched for name in datahub) > 150
    traced = {name for name in datahub if annotations[name].lineage}
    assert {"upstreamLineage", "dataJobInputOutput", "dataProcessInstanceInput", "dataProcessInstanceOutput",
            "chartInfo", "dashboardInfo"} <= traced


def test_datahubs_annotation_shapes_become_search_fields(registry):
    def fields(aspect: str, value: dict) -> dict[str, list]:
        return {spec.name: found for spec, found in annotations_of(registry)[aspect].found(value)}

    tags = fields("globalTags", {"tags": [{"tag": "urn:li:tag:pii", "attribution": {
        "time": 5, "actor": "urn:li:corpuser:a", "source": "urn:li:dataHubAction:x"}}]})
    assert tags["tags"] == ["urn:li:tag:pii"] and tags["tagAttributionDates"] == [5]  # "/*/tag", "/*/attribution/time"
    owners = fields("ownership", {"owners": [{"owner": GROUP, "type": "DATAOWNER"}],
                                  "ownerTypes": {"urn:li:ownershipType:steward": [GROUP]}})
    assert owners["owners"] == [GROUP] and owners["ownerTypes"] == ["urn:li:ownershipType:steward"]  # "/$key"
    props = fields("chartInfo", {"title": "Orders", "description": "d", "customProperties": {"team": "sales"},
                                 "lastModified": {"created": {"time": 1, "actor": "urn:li:corpuser:a"},
                                                  "lastModified": {"time": 2, "actor": "urn:li:corpuser:a"}}})
    assert props["title"] == ["Orders"] and props["customProperties"] == [{"team": "sales"}]  # a map's entries
    specs = {s.name: s for s in annotations_of(registry)["chartInfo"].searchable}
    assert specs["title"].field_type == "TEXT_PARTIAL" and specs["title"].boost == 10.0  # WORD_GRAM, boostScore
    assert specs["customProperties"].field_type == "MAP" and specs["type"].facet  # addToFilters
    # an enclosing field's path annotation names what the embedded aspect's own annotation would call `tags`
    editable = {s.name: s for s in annotations_of(registry)["editableSchemaMetadata"].searchable}
    assert {"editedFieldTags", "editedFieldDescriptions", "editedFieldGlossaryTerms"} <= set(editable)
    assert not editable["editedFieldTags"].facet and "tags" not in editable
    key = {s.name: s for s in annotations_of(registry)["schemaFieldKey"].searchable}
    assert key["fieldPath"].field_type == "TEXT_PARTIAL" and key["fieldPath"].boost > 1  # Lodestar's addition


def test_a_path_annotation_on_a_single_urn_applies_to_the_urn(tmp_path, registry):
    specs = {s.name: s for s in annotations_of(registry)["dataProcessInstanceRelationships"].searchable}
    assert specs["parentTemplate"].field_type == "URN" and specs["parentInstance"].field_type == "URN"  # "/*"
    run, other = "urn:li:dataProcessInstance:r1", "urn:li:dataProcessInstance:r2"
    harness = Indexed(tmp_path / "data")
    harness.write(*(parse_proposal(m) for m in (
        sdk(run, DataProcessInstanceRelationshipsClass(upstreamInstances=[], parentTemplate=JOB)),
        sdk(other, DataProcessInstanceRelationshipsClass(upstreamInstances=[], parentTemplate=f"{JOB[:-1]}2)")),
    )))
    assert [h.urn for h in harness.search.query(f'parentTemplate:"{JOB}"').hits] == [run]
    harness.close()


def test_edges_from_datahubs_path_relationships(registry):
    value = DataJobInputOutputClass(inputDatasets=[], outputDatasets=[],
                                    inputDatasetEdges=[EdgeClass(destinationUrn=RAW)],
                                    outputDatasetEdges=[EdgeClass(destinationUrn=ORDERS)]).to_obj()
    assert annotations_of(registry)["dataJobInputOutput"].edges(JOB, value) == [
        Edge(RAW, JOB, "Consumes", "dataJobInputOutput"), Edge(JOB, ORDERS, "Produces", "dataJobInputOutput")]


def test_annotation_shapes_not_understood_are_ignored(registry):
    odd = {
        "type": "record", "name": "Odd", "namespace": "io.example", "Aspect": {"name": "odd"},
        "fields": [
            {"name": "a", "type": "string", "Searchable": "not an object", "Relationship": ["nor", "this"]},
            {"name": "b", "type": "string", "Searchable": {"/nowhere/*": {"fieldType": "KEYWORD"}}},
            {"name": "c", "type": {"type": "array", "items": "string"},
             "Searchable": {"/*": "not an object", "/*/deeper": {"fieldName": "x"}}},
            {"name": "d", "type": "string", "Searchable": {"fieldType": "SOMETHING_NEW", "fieldName": 7,
                                                          "boostScore": "high", "addToFilters": "yes"}},
            {"name": "e", "type": "long", "Searchable": {}, "SearchableRef": {"/x": {"refType": "dataset"}},
             "Relationship": {"name": "Lineage", "isLineage": "true"}},
        ]}
    registry = copy.copy(registry)
    registry.named_types = {**registry.named_types, "io.example.Odd": odd}
    registry.aspects = {**registry.aspects, "odd": type(registry.aspects["status"])(
        "odd", "versioned", "io.example.Odd", odd, registry.named_types)}
    compiled = compile_aspect(registry, "odd")
    assert [(s.name, s.field_type, s.boost, s.facet) for s in compiled.searchable] == [
        ("d", "KEYWORD", 1.0, False)]
    assert compiled.lineage == () and compiled.found({"a": "x", "b": "y", "c": ["z"], "d": "w", "e": 1}) == [
        (compiled.searchable[0], ["w"])]


def sdk(urn: str, aspect) -> dict:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect).to_obj()


def test_aspects_known_only_from_the_package_are_searched_after_indexing(tmp_path):
    harness = Indexed(tmp_path / "data")
    harness.write(*(parse_proposal(m) for m in (
        sdk(TERM, GlossaryTermInfoClass(definition="Money earned from paid orders", termSource="INTERNAL",
                                        name="Revenue")),
        sdk(CHART, ChartInfoClass(title="Orders by day", description="Daily order counts",
                                  lastModified=ChangeAuditStampsClass())),
        sdk(ORDERS, OwnershipClass(owners=[OwnerClass(owner=GROUP, type=OwnershipTypeClass.DATAOWNER)])),
        sdk(JOB, DataJobInputOutputClass(inputDatasets=[], outputDatasets=[],
                                         inputDatasetEdges=[EdgeClass(destinationUrn=RAW)],
                                         outputDatasetEdges=[EdgeClass(destinationUrn=ORDERS)])),
    )))
    search = harness.search
    assert [(h.urn, h.name) for h in search.query("revenue").hits] == [(TERM, "Revenue")]
    assert [(h.urn, h.name) for h in search.query("orders by day").hits][0] == (CHART, "Orders by day")
    assert [h.urn for h in search.query("paid").hits] == [TERM]  # a glossary term's definition is text
    assert [h.urn for h in search.query(f"owners:{GROUP}").hits] == [ORDERS]
    assert ("data-eng", 1) in search.query("*").facets["owners"]  # addToFilters: a facet
    lineage = harness.lineage.query(ORDERS, "upstream", 2).to_json()
    assert {(e["source"], e["destination"]) for e in lineage["edges"]} == {(RAW, JOB), (JOB, ORDERS)}
    harness.close()


@pytest.fixture
def emitter(server):
    emitter = DatahubRestEmitter(gms_server=server.url, token=server.token)
    yield emitter
    emitter.close()


def test_datahubs_emitter_new_entities_and_timeseries_over_http(server, emitter):
    for urn, aspect in ((GROUP, CorpGroupInfoClass(displayName="Data engineering", admins=[], members=[], groups=[])),
                        (ORDERS, OwnershipClass(owners=[OwnerClass(owner=GROUP, type=OwnershipTypeClass.DATAOWNER)])),
                        (TERM, GlossaryTermInfoClass(definition="Money earned", termSource="INTERNAL", name="Revenue")),
                        (ORDERS, OperationClass(timestampMillis=1_700_000_000_000,
                                                operationType=OperationTypeClass.INSERT,
                                                lastUpdatedTimestamp=1_700_000_000_000)),
                        (ORDERS, DatasetUsageStatisticsClass(
                            timestampMillis=1_700_000_000_000, uniqueUserCount=4,
                            eventGranularity=TimeWindowSizeClass(unit=CalendarIntervalClass.DAY)))):
        emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))
    client = server.client()
    assert client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"] is True
    group = client.entity(GROUP)["aspects"]
    assert set(group) == {"corpGroupKey", "corpGroupInfo"}
    assert group["corpGroupInfo"]["value"]["displayName"] == "Data engineering"
    assert set(client.entity(ORDERS)["aspects"]) == {"datasetKey", "ownership"}  # timeseries: never versioned
    points = client.call("GET", f"/v1/timeseries/{quote(ORDERS, safe='')}/datasetUsageStatistics")["points"]
    assert [p["uniqueUserCount"] for p in points] == [4]
    assert client.call("GET", f"/v1/timeseries/{quote(ORDERS, safe='')}/operation")["points"][0][
        "operationType"] == "INSERT"
    hits = client.call("GET", "/v1/search?query=revenue")["results"]
    assert [(h["urn"], h["name"]) for h in hits] == [(TERM, "Revenue")]
