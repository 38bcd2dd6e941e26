"""Fields derived from a PII field, found through `GET /v1/search` (the field-lineage seed's
governance use case): the reviewer tags UID of DailyTransactions as PII the CDAP way, programs
derive fields from it, and `upstreamTags:PII` finds those fields until the tag or the lineage
goes."""

from __future__ import annotations

from urllib.parse import quote

from tests.support.builders import mcp
from tests.support.lineage_fixtures import program, propose_and_index, run
from tests.support.upstream_tags_example import (
    DAILY,
    DERIVED,
    KEY,
    LOYALTY_RUN,
    REPORT,
    SPEND,
    loyalty_operations,
    spend_operations,
)

UID_TAGS = "/v3/namespaces/default/datasets/DailyTransactions/field/UID/metadata/tags"
START = 1_700_000_000


def indexed(client) -> None:
    assert client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"]


def derived_from_pii(client) -> list[str]:
    body = client.call("GET", f"/v1/search?query={quote('upstreamTags:PII')}&count=100")
    assert body["total"] == len(body["results"])
    return [hit["urn"] for hit in body["results"]]


def test_search_finds_the_fields_derived_from_a_pii_field_until_the_tag_or_the_lineage_goes(server):
    client = server.client()
    propose_and_index(client, [mcp(urn, "datasetProperties", {"name": name}) for urn, name in (
        (DAILY, "DailyTransactions"), (SPEND, "CustomerSpend"), (REPORT, "LoyaltyReport"))])
    client.call("POST", UID_TAGS, ["PII"])
    propose_and_index(client, run("spend-run-1", program("SpendJob"), START, START + 60, reads=(DAILY,),
                                  writes=(SPEND,), operations=spend_operations()["operations"])
                      + run("loyalty-run-1", program("LoyaltyJob"), START + 120, START + 180, reads=(SPEND,),
                            writes=(REPORT,), operations=loyalty_operations()["operations"]))
    assert derived_from_pii(client) == DERIVED
    hits = client.call("GET", f"/v1/search?query={quote('upstreamTags:PII')}")["results"]
    assert [(h["entityType"], h["name"]) for h in hits] == [("schemaField", "customer_key"),
                                                            ("schemaField", "segment")]
    assert client.call("GET", f"/v1/search?query={quote('upstreamTags:PII')}&types=dataset")["total"] == 0

    client.call("DELETE", f"{UID_TAGS}/PII")
    indexed(client)
    assert derived_from_pii(client) == []

    client.call("POST", UID_TAGS, ["PII"])
    indexed(client)
    assert derived_from_pii(client) == DERIVED
    propose_and_index(client, [mcp(LOYALTY_RUN, "fieldOperations", change="DELETE")])  # the second hop goes
    assert derived_from_pii(client) == [KEY]
