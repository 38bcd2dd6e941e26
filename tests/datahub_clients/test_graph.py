"""DataHub's `DataHubGraph` deletes against `lodestar serve`: hard deletes with the rows they
removed, a timeseries aspect's points deleted in a window only, soft deletes."""

from __future__ import annotations

from datetime import UTC, datetime

from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetProfileClass, DatasetPropertiesClass, StatusClass

from tests.support import datahub_clients
from tests.support.datahub_clients import entity, indexed, points, searched

DAY = 86_400_000
T0 = 1_700_000_000_000

# the fixtures used here (tests/support/datahub_clients.py)
emitter, graph, lodestar = datahub_clients.emitter, datahub_clients.graph, datahub_clients.lodestar


def profile(urn: str, ts: int, rows: int) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetProfileClass(
        timestampMillis=ts, rowCount=rows, columnCount=1))


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def test_hard_delete_timeseries_aspect_deletes_only_the_window(emitter, graph, lodestar):
    urn, other = make_dataset_urn("hive", "graph.profiled"), make_dataset_urn("hive", "graph.other")
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(description="p")))
    emitter.emit_mcps([profile(u, T0 + day * DAY, day) for u in (urn, other) for day in range(5)])
    client = lodestar.client()
    assert graph.hard_delete_timeseries_aspect(urn, "datasetProfile", at(T0 + DAY), at(T0 + 3 * DAY)) == 3
    assert [p["rowCount"] for p in points(client, urn, "datasetProfile")] == [0, 4]  # answered once applied
    assert len(points(client, other, "datasetProfile")) == 5
    assert entity(client, urn)["datasetProperties"]["value"]["description"] == "p"  # the entity stays
    assert graph.hard_delete_timeseries_aspect(urn, "datasetProfile", None, None) == 2
    assert points(client, urn, "datasetProfile") == [] and len(points(client, other, "datasetProfile")) == 5


def test_hard_delete_entity_reports_its_rows_and_a_missing_urn_is_zero(emitter, graph, lodestar):
    urn = make_dataset_urn("hive", "graph.doomed")
    emitter.emit_mcps([MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(description="v1")),
                       MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(description="v2")),
                       profile(urn, T0, 1), profile(urn, T0 + DAY, 2)])
    client = lodestar.client()
    indexed(client)
    assert urn in searched(client, "graph.doomed")
    # rows: the key aspect and two versions of datasetProperties; timeseriesRows: the two points
    assert graph.hard_delete_entity(urn) == (3, 2)
    assert entity(client, urn) is None and points(client, urn, "datasetProfile") == []
    assert urn not in searched(client, "graph.doomed", include_removed=True)
    assert graph.hard_delete_entity(urn) == (0, 0)
    assert graph.hard_delete_entity(make_dataset_urn("hive", "graph.never_was")) == (0, 0)


def test_soft_delete_hides_the_entity_and_keeps_it(emitter, graph, lodestar):
    urn = make_dataset_urn("hive", "graph.hidden")
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=False)))
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(description="h")))
    graph.soft_delete_entity(urn)
    client = lodestar.client()
    indexed(client)
    aspects = entity(client, urn)
    assert aspects["status"]["value"] == {"removed": True} and aspects["status"]["version"] == 2
    assert urn not in searched(client, "graph.hidden") and urn in searched(client, "graph.hidden", True)
    graph.set_soft_delete_status(urn, delete=False)
    indexed(client)
    assert urn in searched(client, "graph.hidden")
