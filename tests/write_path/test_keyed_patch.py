"""PATCH with DataHub's keyed array paths (gms/patch.py): the proposals DataHub's own patch
builders make, applied by the write path to the stored value or to the aspect's default value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from datahub.metadata.schema_classes import (
    DatasetLineageTypeClass,
    FineGrainedLineageClass,
    OwnerClass,
    OwnershipTypeClass,
    TagAssociationClass,
    UpstreamClass,
)
from datahub.specific.dataset import DatasetPatchBuilder

from gms.errors import ProposalFailed
from gms.patch import apply_patch, parse_patch
from gms.service import Gms
from ingest.proposal import parse_proposal
from tests.support.builders import dataset_urn, proposal

ACTOR = "urn:li:corpuser:alice"
ORDERS, RAW = dataset_urn("shop.orders"), dataset_urn("shop.raw")


@pytest.fixture
def gms(tmp_path: Path) -> Iterator[Gms]:
    service = Gms.embedded(tmp_path / "data")
    yield service
    service.close()


def emit(gms: Gms, builder: DatasetPatchBuilder) -> list[dict]:
    results = gms.apply([parse_proposal(mcp.to_obj()) for mcp in builder.build()], ACTOR)
    assert all(r.failure is None for r in results), [r.to_json() for r in results]
    return [r.to_json() for r in results]


def value(gms: Gms, aspect: str) -> dict:
    return gms.store.get(ORDERS, aspect).value


def field(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def test_tags_added_and_removed_by_key_on_a_missing_aspect(gms):
    builder = DatasetPatchBuilder(ORDERS).add_tag(TagAssociationClass("urn:li:tag:pii"))
    (envelope,) = [json.loads(m.aspect.value) for m in builder.build()]
    assert envelope["arrayPrimaryKeys"] == {"tags": ["attribution\u241fsource", "tag"]}  # what is tested
    emit(gms, builder.add_tag(TagAssociationClass("urn:li:tag:gold")))
    assert value(gms, "globalTags") == {"tags": [{"tag": "urn:li:tag:pii"}, {"tag": "urn:li:tag:gold"}]}
    emit(gms, DatasetPatchBuilder(ORDERS).add_tag(TagAssociationClass("urn:li:tag:pii", context="again")))
    assert value(gms, "globalTags")["tags"] == [{"tag": "urn:li:tag:pii", "context": "again"},
                                                {"tag": "urn:li:tag:gold"}]  # same key: replaced in place
    emit(gms, DatasetPatchBuilder(ORDERS).remove_tag("urn:li:tag:pii"))
    assert value(gms, "globalTags") == {"tags": [{"tag": "urn:li:tag:gold"}]}
    assert [r["status"] for r in emit(gms, DatasetPatchBuilder(ORDERS).remove_tag("urn:li:tag:pii"))] == ["noop"]


def test_owners_keyed_by_owner_and_type(gms):
    emit(gms, DatasetPatchBuilder(ORDERS)
         .add_owner(OwnerClass("urn:li:corpuser:jdoe", OwnershipTypeClass.TECHNICAL_OWNER))
         .add_owner(OwnerClass("urn:li:corpuser:jdoe", OwnershipTypeClass.BUSINESS_OWNER))
         .add_owner(OwnerClass("urn:li:corpuser:ann", OwnershipTypeClass.TECHNICAL_OWNER)))
    ownership = value(gms, "ownership")
    assert [(o["owner"], o["type"]) for o in ownership["owners"]] == [
        ("urn:li:corpuser:jdoe", "TECHNICAL_OWNER"), ("urn:li:corpuser:jdoe", "BUSINESS_OWNER"),
        ("urn:li:corpuser:ann", "TECHNICAL_OWNER")]
    assert ownership["lastModified"]["actor"] == "urn:li:corpuser:unknown"  # the schema's default
    emit(gms, DatasetPatchBuilder(ORDERS).remove_owner("urn:li:corpuser:jdoe", OwnershipTypeClass.BUSINESS_OWNER))
    assert [(o["owner"], o["type"]) for o in value(gms, "ownership")["owners"]] == [
        ("urn:li:corpuser:jdoe", "TECHNICAL_OWNER"), ("urn:li:corpuser:ann", "TECHNICAL_OWNER")]
    emit(gms, DatasetPatchBuilder(ORDERS).remove_owner("urn:li:corpuser:jdoe"))  # every type of the owner
    assert [o["owner"] for o in value(gms, "ownership")["owners"]] == ["urn:li:corpuser:ann"]


def test_upstreams_and_fine_grained_lineage_keyed_on_an_existing_value(gms):
    other = dataset_urn("shop.other")
    existing = {"upstreams": [{"dataset": other, "type": "COPY", "auditStamp": {"time": 1, "actor": ACTOR}}]}
    assert gms.apply([proposal(ORDERS, "upstreamLineage", existing)], ACTOR)[0].failure is None
    emit(gms, DatasetPatchBuilder(ORDERS)
         .add_upstream_lineage(UpstreamClass(RAW, DatasetLineageTypeClass.TRANSFORMED))
         .add_fine_grained_lineage(FineGrainedLineageClass(
             upstreamType="FIELD_SET", upstreams=[field(RAW, "a"), field(RAW, "b")], downstreamType="FIELD",
             downstreams=[field(ORDERS, "ab")], transformOperation="CONCAT")))
    lineage = value(gms, "upstreamLineage")
    assert [u["dataset"] for u in lineage["upstreams"]] == [other, RAW]
    assert lineage["fineGrainedLineages"] == [{
        "upstreamType": "FIELD_SET", "upstreams": [field(RAW, "a"), field(RAW, "b")], "downstreamType": "FIELD",
        "downstreams": [field(ORDERS, "ab")], "transformOperation": "CONCAT", "confidenceScore": 1.0}]
    emit(gms, DatasetPatchBuilder(ORDERS).remove_upstream_lineage(other).remove_fine_grained_lineage(
        FineGrainedLineageClass(upstreamType="FIELD_SET", upstreams=[field(RAW, "a")], downstreamType="FIELD",
                                downstreams=[field(ORDERS, "ab")], transformOperation="CONCAT")))
    lineage = value(gms, "upstreamLineage")
    assert [u["dataset"] for u in lineage["upstreams"]] == [RAW]
    assert lineage["fineGrainedLineages"][0]["upstreams"] == [field(RAW, "b")]


def test_escaped_keys_and_wildcards(gms):
    url = "https://wiki.example.com/orders~v2"
    patch = [{"op": "add", "path": "/elements/https:~1~1wiki.example.com~1orders~0v2",
              "value": {"url": url, "description": "wiki", "createStamp": {"time": 0, "actor": ACTOR}}}]
    assert gms.apply([proposal(ORDERS, "institutionalMemory", patch, change="PATCH")], ACTOR)[0].failure is None
    assert [e["url"] for e in value(gms, "institutionalMemory")["elements"]] == [url]
    tags = {"arrayPrimaryKeys": {"tags": ["attribution\u241fsource", "tag"]}, "patch": [
        {"op": "add", "path": "/tags/urn:li:corpuser:bot/urn:li:tag:pii",
         "value": {"tag": "urn:li:tag:pii", "attribution": {"source": "urn:li:corpuser:bot", "time": 0,
                                                              "actor": ACTOR}}},
        {"op": "add", "path": "/tags//urn:li:tag:pii", "value": {}},  # key fields come from the path
        {"op": "add", "path": "/tags//urn:li:tag:gold", "value": {"tag": "urn:li:tag:gold"}}]}
    assert gms.apply([proposal(ORDERS, "globalTags", tags, change="PATCH")], ACTOR)[0].failure is None
    assert len(value(gms, "globalTags")["tags"]) == 3
    assert value(gms, "globalTags")["tags"][1] == {"tag": "urn:li:tag:pii"}
    remove = {"arrayPrimaryKeys": {"tags": ["attribution\u241fsource", "tag"]},
              "patch": [{"op": "remove", "path": "/tags/*/urn:li:tag:pii"}]}
    assert gms.apply([proposal(ORDERS, "globalTags", remove, change="PATCH")], ACTOR)[0].failure is None
    assert value(gms, "globalTags") == {"tags": [{"tag": "urn:li:tag:gold"}]}


def test_index_paths_stay_rfc_6902_and_mixing_index_and_key_fails(gms):
    assert gms.apply([proposal(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:a"}]})], ACTOR)[0].failure is None
    by_index = [{"op": "add", "path": "/tags/0", "value": {"tag": "urn:li:tag:b"}}]
    assert gms.apply([proposal(ORDERS, "globalTags", by_index, change="PATCH")], ACTOR)[0].failure is None
    assert [t["tag"] for t in value(gms, "globalTags")["tags"]] == ["urn:li:tag:b", "urn:li:tag:a"]
    mixed = by_index + [{"op": "remove", "path": "/tags/urn:li:tag:a"}]
    (failed,) = gms.apply([proposal(ORDERS, "globalTags", mixed, change="PATCH")], ACTOR)
    assert failed.failure.code == "invalid_patch" and "both by index and by key" in failed.failure.message
    bad = {"arrayPrimaryKeys": {"tags": "tag"}, "patch": []}
    (failed,) = gms.apply([proposal(ORDERS, "globalTags", bad, change="PATCH")], ACTOR)
    assert failed.failure.code == "invalid_patch" and "arrayPrimaryKeys" in failed.failure.message


def test_a_patch_of_a_missing_aspect_starts_from_its_default_value(gms):
    term = "urn:li:glossaryTerm:revenue"
    patch = [{"op": "add", "path": f"/terms/{term}", "value": {"urn": term}}]
    (result,) = gms.apply([proposal(ORDERS, "glossaryTerms", patch, change="PATCH")], ACTOR)
    assert result.failure is None
    terms = value(gms, "glossaryTerms")
    assert terms["terms"] == [{"urn": term}]
    assert terms["auditStamp"]["actor"] == ACTOR  # a required stamp without a default: the patch's


def test_the_size_bound_follows_what_ops_add_and_take_away():
    """Near the limit, a long patch that removes as much as it adds applies; one op that would
    double the value past twice the limit stops the patch, named."""
    tags = {"tags": [{"tag": f"urn:li:tag:t{i:04}"} for i in range(1000)]}  # some 25 KB
    limit = 30_000
    churn = [op for name in ("n", "t", "n", "t", "n") for i in range(1000) for op in (  # 10,000 ops, the most
        {"op": "remove", "path": f"/tags/urn:li:tag:{'t' if name == 'n' else 'n'}{i:04}"},
        {"op": "add", "path": f"/tags/urn:li:tag:{name}{i:04}", "value": {"tag": f"urn:li:tag:{name}{i:04}"}})]
    patched = apply_patch(tags, parse_patch(churn), "globalTags", limit)
    assert len(patched["tags"]) == 1000 and patched["tags"][0] == {"tag": "urn:li:tag:n0000"}
    doubling = parse_patch([{"op": "copy", "from": "/tags", "path": "/tags/-"}] * 3)
    with pytest.raises(ProposalFailed) as refused:
        apply_patch(tags, doubling, "globalTags", limit)
    assert refused.value.message.startswith("aspect: JSON Patch op 2 (copy /tags/-) would make the value about")
