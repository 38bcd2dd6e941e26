"""The field-lineage seed's PII example for tests of upstream tags: the field UID of
DailyTransactions is PII; a spend program derives CustomerSpend.customer_key from it (and
copies amount), a loyalty program derives LoyaltyReport.segment from customer_key (and copies
amount). So customer_key (one hop) and segment (two hops) are derived from a PII field; the
amount fields are not."""

from __future__ import annotations

from typing import Any

from tests.support.builders import dataset_urn
from tests.support.field_lineage_examples import read, transform, write

DAILY = dataset_urn("default.DailyTransactions", platform="cdap")
SPEND = dataset_urn("default.CustomerSpend", platform="cdap")
REPORT = dataset_urn("default.LoyaltyReport", platform="cdap")
SPEND_RUN = "urn:li:dataProcessInstance:spend-run-1"
LOYALTY_RUN = "urn:li:dataProcessInstance:loyalty-run-1"


def field(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


UID, KEY, SEGMENT = field(DAILY, "UID"), field(SPEND, "customer_key"), field(REPORT, "segment")
DERIVED = sorted([KEY, SEGMENT])  # what `upstreamTags:pii` finds, in URN order
PII = {"tags": [{"tag": "urn:li:tag:PII"}]}


def spend_operations() -> dict[str, Any]:
    return {"operations": [
        read("read", DAILY, "UID", "amount"),
        transform("hash", [("read", "UID")], "customer_key", description="one-way hash of the UID"),
        write("write", SPEND, [("hash", "customer_key"), ("read", "amount")])]}


def loyalty_operations() -> dict[str, Any]:
    return {"operations": [
        read("read", SPEND, "customer_key", "amount"),
        transform("bucket", [("read", "customer_key")], "segment", description="segment of the customer"),
        write("write", REPORT, [("bucket", "segment"), ("read", "amount")])]}
