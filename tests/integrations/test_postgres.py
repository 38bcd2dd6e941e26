"""DataHub's `postgres` source (`datahub ingest`, acryl-datahub[postgres] in a venv of its own)
on a real PostgreSQL (deploy/servers.sh) into `lodestar serve`'s REST API: schemas as containers,
tables and views with their columns and comments, view lineage down to columns, profiles, and
stateful ingestion removing a dropped table on the next run. Checked through Lodestar's API."""

from __future__ import annotations

import pytest

from tests.support.integrations import (
    aspects,
    database,
    datahub_ingest,
    field_lineage,
    fields,
    lineage,
    lodestar,
    path_of,
    postgres,
    postgres_recipe,
    settled,
)
from tests.support.integrations import (
    postgres_urn as urn,
)
from tests.support.waiting import await_

# The first run builds the tool's venv from PyPI (tests/support/tool_venvs.py), minutes more
# than the test itself; below faulthandler_timeout (1,260 s), which would end the worker.
pytestmark = pytest.mark.timeout(1200)

__all__ = ["database", "lodestar", "postgres"]  # fixtures

SHOP = """
CREATE SCHEMA sales;
CREATE SCHEMA reporting;
CREATE TABLE sales.customers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    country varchar(2)
);
COMMENT ON TABLE sales.customers IS 'Everyone who ever ordered';
COMMENT ON COLUMN sales.customers.country IS 'ISO 3166 country code';
CREATE TABLE sales.orders (
    id integer PRIMARY KEY,
    customer_id integer REFERENCES sales.customers (id),
    amount numeric(10, 2),
    ordered_at timestamp
);
COMMENT ON COLUMN sales.orders.amount IS 'Order total in euros';
CREATE TABLE sales.returns (order_id integer, reason text);
INSERT INTO sales.customers VALUES (1, 'Ada', 'GB'), (2, 'Grace', 'US'), (3, 'Linus', 'FI');
INSERT INTO sales.orders VALUES (10, 1, 12.50, now()), (11, 1, 7.25, now()), (12, 2, 99.00, now());
CREATE VIEW reporting.revenue_by_country AS
    SELECT c.country, sum(o.amount) AS revenue
    FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
    GROUP BY c.country;
"""


def test_postgres_source_tables_views_lineage_profiles_and_stale_removal(postgres, database, lodestar, tmp_path):
    postgres.execute(database, SHOP)
    path = postgres_recipe(tmp_path, postgres, database, lodestar)
    datahub_ingest(path, lodestar, tmp_path / "home")
    settled(lodestar)
    client = lodestar.client()
    customers, orders = urn(database, "sales.customers"), urn(database, "sales.orders")
    returns, revenue = urn(database, "sales.returns"), urn(database, "reporting.revenue_by_country")

    table = aspects(client, customers)
    assert table["datasetProperties"]["description"] == "Everyone who ever ordered"
    columns = fields(table["schemaMetadata"])
    assert set(columns) == {"id", "name", "country"}
    assert columns["country"]["description"] == "ISO 3166 country code"
    assert columns["country"]["nativeDataType"].startswith("VARCHAR")
    assert fields(aspects(client, orders)["schemaMetadata"])["amount"]["description"] == "Order total in euros"
    assert aspects(client, orders)["schemaMetadata"]["foreignKeys"][0]["foreignDataset"] == customers

    # the schema and the database are containers of their own
    schema_container = table["container"]["container"]
    assert aspects(client, schema_container)["containerProperties"]["name"] == "sales"
    database_container = aspects(client, schema_container)["container"]["container"]
    assert aspects(client, database_container)["containerProperties"]["name"] == database

    # the view: its SQL, its subtype, and its lineage down to the columns
    view = aspects(client, revenue)
    assert "sum(o.amount)" in view["viewProperties"]["viewLogic"]
    assert "View" in view["subTypes"]["typeNames"]
    assert lineage(client, revenue) == {(customers, revenue), (orders, revenue)}
    fine = view["upstreamLineage"]["fineGrainedLineages"]
    revenue_field = f"urn:li:schemaField:({revenue},revenue)"
    assert any(item["downstreams"] == [revenue_field] and item["upstreams"] == [f"urn:li:schemaField:({orders},amount)"]
               for item in fine), fine
    upstream_fields = {node["urn"] for node in field_lineage(client, revenue_field)["nodes"]}
    assert f"urn:li:schemaField:({orders},amount)" in upstream_fields

    # profiles: row and column counts, per-column statistics
    profile = await_(lambda: client.call("GET", f"/v1/timeseries/{path_of(orders)}/datasetProfile")["points"],
                     "the orders table's profile")[-1]
    assert profile["rowCount"] == 3 and profile["columnCount"] == 4
    assert {item["fieldPath"]: item.get("nullCount") for item in profile["fieldProfiles"]}["amount"] == 0

    # stateful ingestion: the dropped table is removed on the next run, the others stay
    assert aspects(client, returns)["status"]["removed"] is False
    postgres.execute(database, "DROP TABLE sales.returns")
    datahub_ingest(path, lodestar, tmp_path / "home")
    settled(lodestar)
    assert aspects(client, returns)["status"]["removed"] is True
    assert aspects(client, customers)["status"]["removed"] is False
