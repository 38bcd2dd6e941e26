"""Airflow (with apache-airflow-providers-openlineage, in a venv of its own) running the DAG of
airflow_dags/ by `airflow dags test` (SQLite metadata database, no scheduler), its OpenLineage
transport pointed at Lodestar: a SQL task on PostgreSQL (the provider parses its SQL and sends
column lineage) and a Python task. The tables were ingested before by DataHub's postgres source:
OpenLineage's `postgres://host:port` + `db.schema.table` and DataHub's URNs name the same
entities. Checked through Lodestar's API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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
    run_tool,
    settled,
    tool_env,
)
from tests.support.integrations import postgres_urn as urn
from tests.support.processes import TOKEN

# The first run builds the tool's venv from PyPI (tests/support/tool_venvs.py), minutes more
# than the test itself; below faulthandler_timeout (1,260 s), which would end the worker.
pytestmark = pytest.mark.timeout(1200)

__all__ = ["database", "lodestar", "postgres"]  # fixtures

DAGS = Path(__file__).with_name("airflow_dags")
NAMESPACE = "shop_airflow"
TABLES = """
CREATE SCHEMA sales;
CREATE SCHEMA reporting;
CREATE TABLE sales.customers (id integer PRIMARY KEY, name text NOT NULL, country varchar(2));
CREATE TABLE sales.orders (id integer PRIMARY KEY, customer_id integer REFERENCES sales.customers (id),
                           amount numeric(10, 2));
COMMENT ON COLUMN sales.orders.amount IS 'Order total in euros';
CREATE TABLE reporting.revenue (country varchar(2), revenue numeric(12, 2));
INSERT INTO sales.customers VALUES (1, 'Ada', 'GB'), (2, 'Grace', 'US');
INSERT INTO sales.orders VALUES (10, 1, 12.50), (11, 1, 7.25), (12, 2, 99.00);
"""


def job(name: str) -> str:
    return f"urn:li:dataJob:(urn:li:dataFlow:(openlineage,{NAMESPACE},PROD),{name})"


def airflow_env(home: Path, postgres, database: str, lodestar) -> dict[str, str]:
    """Airflow configured by environment variables only, as docs/integrations.md shows."""
    shutil.copytree(DAGS, home / "dags")
    transport = {"type": "http", "url": lodestar.url, "endpoint": "api/v1/lineage",
                 "auth": {"type": "api_key", "apiKey": TOKEN}}
    return tool_env(
        home / "home", AIRFLOW_HOME=str(home / "airflow"), AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW_CONN_SHOP_POSTGRES=f"postgresql://{postgres.user}:{postgres.password}@{postgres.host}:"
                                   f"{postgres.port}/{database}",
        AIRFLOW__OPENLINEAGE__NAMESPACE=NAMESPACE, AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(transport))


def runs(client, program: str) -> list[dict]:
    return client.call("GET", f"/v1/runs?program={path_of(program)}")["runs"]


def test_airflow_dag_run_with_sql_and_python_tasks(postgres, database, lodestar, tmp_path):
    postgres.execute(database, TABLES)
    datahub_ingest(postgres_recipe(tmp_path, postgres, database, lodestar), lodestar, tmp_path / "datahub")
    env = airflow_env(tmp_path, postgres, database, lodestar)
    run_tool("airflow", "airflow", "db", "migrate", env=env, cwd=tmp_path)
    out = run_tool("airflow", "airflow", "dags", "test", "shop_reporting", "2024-01-02", env=env, cwd=tmp_path)
    assert "state=success" in out, out[-4000:]
    settled(lodestar)
    client = lodestar.client()
    customers, orders = urn(database, "sales.customers"), urn(database, "sales.orders")
    revenue = urn(database, "reporting.revenue")

    # the DAG and its tasks are jobs; each ran once and succeeded, the tasks' runs inside the DAG's
    [dag_run] = runs(client, job("shop_reporting"))
    [build_run] = runs(client, job("shop_reporting.build_revenue"))
    [check_run] = runs(client, job("shop_reporting.check_revenue"))
    assert {dag_run["status"], build_run["status"], check_run["status"]} == {"SUCCESS"}
    assert build_run["parent"] == check_run["parent"] == dag_run["run"]
    build = aspects(client, job("shop_reporting.build_revenue"))["dataJobInfo"]
    assert "INSERT INTO reporting.revenue" in build["customProperties"]["sql"]
    assert build["customProperties"]["integration"] == "AIRFLOW"

    # dataset lineage through the SQL task (and its run), onto the tables DataHub's postgres source ingested
    task = job("shop_reporting.build_revenue")
    edges = {edge for edge in lineage(client, revenue, hops=2) if "dataProcessInstance" not in str(edge)}
    assert edges == {(customers, task), (orders, task), (task, revenue)}
    assert sorted(build_run["sources"]) == sorted([customers, orders]) and build_run["destinations"] == [revenue]
    table = aspects(client, orders)
    assert table["container"]["container"], "the table keeps the schema container the postgres source gave it"
    assert fields(table["schemaMetadata"])["amount"]["description"] == "Order total in euros"
    assert fields(aspects(client, revenue)["schemaMetadata"]).keys() == {"country", "revenue"}

    # column lineage from the provider's SQL parser
    nodes = {node["urn"] for node in field_lineage(client, f"urn:li:schemaField:({revenue},revenue)")["nodes"]}
    assert f"urn:li:schemaField:({orders},amount)" in nodes, nodes
    nodes = {node["urn"] for node in field_lineage(client, f"urn:li:schemaField:({revenue},country)")["nodes"]}
    assert f"urn:li:schemaField:({customers},country)" in nodes, nodes
