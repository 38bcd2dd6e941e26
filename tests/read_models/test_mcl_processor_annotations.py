"""The read-model contributions come from the schemas' annotations: nothing per aspect in code."""

from __future__ import annotations

import json
import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import yaml

from gms.service import Gms
from gms.store.sqlite import SqliteAspectStore
from ingest.eventlog.sqlite import SqliteEventLog
from mcl_processor.annotations import AspectAnnotations, Edge, _resolve, annotations_of
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import GROUP, TOPICS, MclProcessor
from schemas.registry import REGISTRY_FILE, SCHEMA_DIR, load_registry
from tests.support.builders import dataset_urn, proposal

DS, UP = dataset_urn("db.down"), dataset_urn("db.up")
JOB = "urn:li:dataJob:(urn:li:dataFlow:(spark,etl,PROD),job)"


def found(registry, aspect: str, value: dict) -> dict[str, list]:
    return {spec.name: values for spec, values in annotations_of(registry)[aspect].found(value)}


def test_union_values_come_out_of_their_wrapper(registry):
    for job_type in ({"string": "SPARK"}, "SPARK", {"com.linkedin.datajob.azkaban.AzkabanJobType": "SPARK"},
                     {"com.linkedin.pegasus2avro.datajob.azkaban.AzkabanJobType": "SPARK"}):
        assert found(registry, "dataJobInfo", {"name": "j", "type": job_type})["jobType"] == ["SPARK"]


def test_searchable_fields_inside_arrays_maps_and_nested_records(registry):
    value = {"schemaName": "s", "fields": [
        {"fieldPath": "id", "description": "key", "nativeDataType": "int",
         "globalTags": {"tags": [{"tag": "urn:li:tag:pii"}]}},
        {"fieldPath": "name", "nativeDataType": "string"}]}
    fields = found(registry, "schemaMetadata", value)
    assert fields["fieldPaths"] == ["id", "name"] and fields["fieldTypes"] == ["int", "string"]
    assert fields["fieldTags"] == ["urn:li:tag:pii"]  # a column's tags are not the dataset's tags
    assert "tags" not in fields
    specs = {s.name: s for s in annotations_of(registry)["schemaMetadata"].searchable}
    assert not specs["fieldTags"].facet
    assert found(registry, "datasetProperties", {"customProperties": {"a": "b"}})["customProperties"] == [{"a": "b"}]


def shaped_value(rng: random.Random, annotations: AspectAnnotations) -> Any:
    """A value of roughly an aspect's shape: its annotated paths, some of them broken or missing."""
    def build(steps: list[tuple[Any, ...]]) -> Any:
        if not steps or rng.random() < 0.1:
            return rng.choice(["x", "urn:li:tag:pii", 3, 2.5, True, None, ["y", None], {"z": 1}])
        kind, rest = steps[0][0], steps[1:]
        if kind == "f":
            return {steps[0][1]: build(rest), **({"other": build(rest)} if rng.random() < 0.2 else {})}
        if kind == "a":
            return [build(rest) for _ in range(rng.randint(0, 3))]
        if kind in ("m", "k"):
            return {f"key{i}": build(rest) for i in range(rng.randint(0, 2))}
        return {rng.choice([*steps[0][1], "another.Type"]): build(rest)} if rng.random() < 0.7 else build(rest)

    specs = annotations.searchable
    value: dict[str, Any] = {}
    for spec in rng.sample(specs, min(len(specs), 3)):
        part = build(list(spec.path))
        if isinstance(part, dict):
            value.update(part)
    return value


def test_found_values_are_those_at_each_searchable_path(registry):
    """`found` runs code generated from the aspect's paths: it finds what resolving each path
    alone finds, for every searchable field of every aspect, and survives pickling (workers)."""
    rng = random.Random(5)
    for aspect, compiled in annotations_of(registry).by_aspect.items():
        compiled = pickle.loads(pickle.dumps(compiled))
        order = {id(spec): i for i, spec in enumerate(compiled.searchable)}
        for _ in range(20):
            value = shaped_value(rng, compiled)
            expected = [(spec, values) for spec in compiled.searchable if (values := _resolve(value, spec.path))]
            assert sorted(compiled.found(value), key=lambda pair: order[id(pair[0])]) == expected, (aspect, value)


def test_lineage_edges_follow_the_data(registry):
    annotations = annotations_of(registry)
    assert annotations["upstreamLineage"].edges(DS, {"upstreams": [{"dataset": UP, "type": "COPY"}]}) == [
        Edge(UP, DS, "DownstreamOf", "upstreamLineage")]
    assert annotations["dataJobInputOutput"].edges(JOB, {"inputDatasets": [UP], "outputDatasets": [DS]}) == [
        Edge(UP, JOB, "Consumes", "dataJobInputOutput"), Edge(JOB, DS, "Produces", "dataJobInputOutput")]
    assert annotations["ownership"].edges(DS, {"owners": [{"owner": "urn:li:corpuser:a", "type": "DATAOWNER"}]}) == []
    assert not annotations["ownership"].traced and annotations["status"].traced


def test_fine_grained_lineage_pairs_upstreams_with_downstreams(registry):
    value = {"upstreams": [], "fineGrainedLineages": [
        {"upstreamType": "FIELD_SET", "upstreams": ["u1", "u2"], "downstreamType": "FIELD",
         "downstreams": ["d1"], "transformOperation": "concat"},
        {"upstreamType": "FIELD_SET", "upstreams": ["u3"], "downstreamType": "FIELD", "downstreams": ["d2", "d3"]}]}
    assert annotations_of(registry)["upstreamLineage"].field_edges(value) == [
        Edge("u1", "d1", "concat", "upstreamLineage"), Edge("u2", "d1", "concat", "upstreamLineage"),
        Edge("u3", "d2", "DownstreamOf", "upstreamLineage"), Edge("u3", "d3", "DownstreamOf", "upstreamLineage")]
    assert annotations_of(registry)["upstreamLineage"].edges(DS, value) == []  # field URNs are not dataset edges


QUALITY = {
    "type": "record", "name": "QualityReport", "namespace": "io.example", "Aspect": {"name": "qualityReport"},
    "fields": [
        {"name": "grade", "type": "string",
         "Searchable": {"fieldName": "qualityGrade", "fieldType": "KEYWORD", "facet": True}},
        {"name": "summary", "type": ["null", "string"], "default": None,
         "Searchable": {"fieldName": "qualitySummary", "fieldType": "TEXT"}},
        {"name": "checks", "type": {"type": "map", "values": "string"}, "default": {},
         "Searchable": {"fieldName": "qualityChecks", "fieldType": "MAP"}},
        {"name": "comparedWith", "type": {"type": "array", "items": {
            "type": "record", "name": "Baseline", "fields": [
                {"name": "dataset", "type": "string",
                 "Relationship": {"name": "DownstreamOf", "entityTypes": ["dataset"], "isLineage": True}}]}},
         "default": []},
    ],
}


def test_a_new_annotated_aspect_is_indexed_without_processor_code(tmp_path: Path):
    schemas = tmp_path / "avro"
    shutil.copytree(SCHEMA_DIR, schemas)
    (schemas / "io.example.QualityReport.avsc").write_text(json.dumps(QUALITY))
    doc = yaml.safe_load(REGISTRY_FILE.read_text())
    doc["aspects"]["qualityReport"] = {"kind": "versioned"}
    next(e for e in doc["entities"] if e["name"] == "dataset")["aspects"].append("qualityReport")
    (tmp_path / "registry.yml").write_text(yaml.safe_dump(doc))
    registry = load_registry(tmp_path / "registry.yml", schemas)

    data = tmp_path / "data"
    data.mkdir()
    log = SqliteEventLog(data / "lodestar.db")
    gms = Gms(SqliteAspectStore(data / "lodestar.db", colocated_log=log), log, registry=registry)
    models = SqliteReadModels.in_data_dir(data, registry)
    processor = MclProcessor(registry, gms.codec, models)
    results = gms.apply([proposal(DS, "qualityReport", {"grade": "A", "summary": "nightly completeness checks",
                                                        "checks": {"nulls": "ok"}, "comparedWith": [{"dataset": UP}]})],
                        "urn:li:corpuser:tester")
    assert results[0].failure is None
    consumer = gms.log.consumer(GROUP, TOPICS)
    processor.process(consumer.poll(100, 0))

    assert [h.urn for h in models.search.query("qualityGrade:a").hits] == [DS]
    assert [h.urn for h in models.search.query("nulls:ok").hits] == [DS]
    assert models.search.query("completeness").hits[0].matches == [
        {"field": "qualitySummary", "value": "nightly completeness checks"}]
    assert models.search.query("*").facets["qualityGrade"] == [("A", 1)]
    assert models.lineage.query(DS, "upstream", 1).to_json()["edges"] == [
        {"source": UP, "destination": DS, "type": "DownstreamOf", "via": "qualityReport"}]
    models.close()
    gms.close()
