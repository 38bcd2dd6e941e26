"""The read models' contract: every composition of adapters (embedded, distributed) answers alike."""

from __future__ import annotations

from typing import Any

from ingest import topics
from mcl_processor.processor import TOPICS
from tests.support.builders import dataset_urn, proposal
from tests.support.indexed import Indexed, IndexedByModels, schema


def answers(harness: Indexed, urns: list[str]) -> dict[str, Any]:
    """What the read models answer, for comparing states."""
    search = harness.search
    out: dict[str, Any] = {q: search.query(q, count=1000, include_removed=True).to_json()
                           for q in ("*", "orders", "tags:pii", "tier:gold", "schema:id", "ord*")}
    out["autocomplete"] = [s.to_json() for s in search.autocomplete("o")]
    for urn in urns:
        out[urn] = harness.lineage.query(urn, "both", 10).to_json()
        out[f"{urn}#profile"] = harness.models.timeseries.query(urn, "datasetProfile")
    return out


RAW, CLEAN, AGG = dataset_urn("db.raw_orders"), dataset_urn("db.orders"), dataset_urn("db.orders_daily")


def sample(harness: Indexed) -> list[str]:
    harness.write(
        proposal(RAW, "datasetProperties", {"name": "raw_orders", "description": "orders as received",
                                            "customProperties": {"tier": "bronze"}}),
        proposal(CLEAN, "datasetProperties", {"name": "orders", "customProperties": {"tier": "gold"}}),
        proposal(CLEAN, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
        proposal(CLEAN, "upstreamLineage", {"upstreams": [{"dataset": RAW, "type": "TRANSFORMED"}]}),
        proposal(AGG, "upstreamLineage", {"upstreams": [{"dataset": CLEAN, "type": "TRANSFORMED"}]}),
        proposal(AGG, "schemaMetadata", schema("orders_daily", "id", "total")),
        proposal(AGG, "datasetProfile", {"timestampMillis": 1000, "rowCount": 10}),
        proposal(AGG, "datasetProfile", {"timestampMillis": 2000, "rowCount": 12}),
    )
    return [RAW, CLEAN, AGG]


class ReadModelsContract(IndexedByModels):
    """Every adapter set passes these: the read models reflect each (urn, aspect) at its highest
    version, so replays, duplicates and late MCLs change nothing. Subclasses say how to build
    the read models (`models_factory`)."""

    def test_duplicate_mcls_change_nothing(self, indexed):
        urns = sample(indexed)
        before = answers(indexed, urns)
        for topic in TOPICS:  # every MCL again, as a replay from offset 0 would deliver them
            indexed.processor.process(indexed.gms.log.read(topic, limit=10_000))
        assert answers(indexed, urns) == before

    def test_an_older_mcl_after_a_newer_one_changes_nothing(self, indexed):
        indexed.write(proposal(CLEAN, "datasetProperties", {"name": "orders", "description": "first"}))
        indexed.write(proposal(CLEAN, "datasetProperties", {"name": "orders", "description": "second"}))
        records = indexed.gms.log.read(topics.MCL_VERSIONED, limit=100)
        indexed.processor.process([r for r in records if b"first" in r.value])  # version 1 again, after version 2
        assert indexed.search.query("orders").hits[0].description == "second"
        indexed.models.clear()
        for record in reversed(records):  # newest first, one batch each
            indexed.processor.process([record])
        assert indexed.search.query("orders").hits[0].description == "second"
