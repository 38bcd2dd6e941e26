"""Structured property values as DataHub's SDK searches and reads them from Lodestar: a search
filter on `structuredProperties.<qualified name>` (EXISTS, EQUAL), and the values of a
soft-deleted or deleted property left out of reads (and a filter on a soft-deleted one refused)."""

from __future__ import annotations

import pytest
from datahub.configuration.common import GraphError
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DatasetPropertiesClass,
    StructuredPropertiesClass,
    StructuredPropertyDefinitionClass,
    StructuredPropertyValueAssignmentClass,
)

from tests.support.builders import dataset_urn
from tests.support.graphql import emit, graph, live_server, wait_indexed

ORDERS, RETURNS = dataset_urn("shop.orders"), dataset_urn("shop.returns")
RETENTION, OWNER_TEAM = "urn:li:structuredProperty:io.shop.retentionDays", "urn:li:structuredProperty:io.shop.team"


def definition(urn: str, kind: str) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=StructuredPropertyDefinitionClass(
        qualifiedName=urn.rpartition(":")[2], valueType=f"urn:li:dataType:datahub.{kind}",
        entityTypes=["urn:li:entityType:datahub.dataset"]))


def assigned(urn: str, *pairs: tuple[str, list]) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=StructuredPropertiesClass(properties=[
        StructuredPropertyValueAssignmentClass(propertyUrn=p, values=v) for p, v in pairs]))


@pytest.fixture
def server(tmp_path):
    with live_server(tmp_path / "data") as live:
        emit(live, [definition(RETENTION, "number"), definition(OWNER_TEAM, "string"),
                    *(MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(name=u))
                      for u in (ORDERS, RETURNS)),
                    assigned(ORDERS, (RETENTION, [30.0]), (OWNER_TEAM, ["Sales"])),
                    assigned(RETURNS, (OWNER_TEAM, ["ops"]))])
        yield live


def having(server, field: str, condition: str = "EXISTS", *values: str) -> list[str]:
    client = graph(server)
    try:
        rule = {"field": field, "condition": condition, **({"values": list(values)} if values else {})}
        return sorted(client.get_urns_by_filter(extraFilters=[rule]))
    finally:
        client.close()


def test_a_search_filters_on_a_structured_property(server):
    assert having(server, "structuredProperties.io.shop.retentionDays") == [ORDERS]
    assert having(server, "structuredProperties.io.shop.team") == sorted([ORDERS, RETURNS])
    assert having(server, "structuredProperties.io.shop.retentionDays", "EQUAL", "30") == [ORDERS]  # 30.0 too
    assert having(server, "structuredProperties.io.shop.team", "EQUAL", "sales") == [ORDERS]
    assert having(server, "structuredProperties.io.shop.neverDefined") == []


def test_a_soft_deleted_property_is_left_out_of_reads_and_filters_on_it_are_refused(server):
    client = graph(server)
    try:
        client.soft_delete_entity(RETENTION)
        wait_indexed(server)
        shown = client.get_aspect(ORDERS, StructuredPropertiesClass)
        assert [a.propertyUrn for a in shown.properties] == [OWNER_TEAM]
        entity = client.get_entity_semityped(ORDERS, aspects=["structuredProperties"])
        assert [a.propertyUrn for a in entity["structuredProperties"].properties] == [OWNER_TEAM]
        with pytest.raises(GraphError, match="io.shop.retentionDays is soft-deleted"):
            having(server, "structuredProperties.io.shop.retentionDays")
    finally:
        client.close()


def test_a_deleted_property_is_left_out_of_reads_and_matches_nothing(server):
    client = graph(server)
    try:
        client.hard_delete_entity(OWNER_TEAM)
        wait_indexed(server)
        assert [a.propertyUrn for a in client.get_aspect(RETURNS, StructuredPropertiesClass).properties] == []
        assert having(server, "structuredProperties.io.shop.team") == []
    finally:
        client.close()
