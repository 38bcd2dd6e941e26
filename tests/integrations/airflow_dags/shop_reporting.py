"""A DAG as a data team writes one: a SQL task that rebuilds a report table in PostgreSQL and a
Python task that checks it. Its connection `shop_postgres` comes from the environment."""

from __future__ import annotations

import pendulum
from airflow import DAG
from airflow.operators.python import PythonOperator
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.providers.postgres.hooks.postgres import PostgresHook

REVENUE = """
INSERT INTO reporting.revenue (country, revenue)
SELECT c.country, sum(o.amount) AS revenue
FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
GROUP BY c.country
"""


def check_revenue() -> int:
    """Fails the task when the report is empty."""
    rows = PostgresHook(postgres_conn_id="shop_postgres").get_first("SELECT count(*) FROM reporting.revenue")[0]
    if rows == 0:
        raise ValueError("reporting.revenue is empty")
    return rows


with DAG(
    dag_id="shop_reporting",
    description="Revenue per country, every night",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    schedule=None,
    catchup=False,
    tags=["reporting", "finance"],
):
    build = SQLExecuteQueryOperator(task_id="build_revenue", conn_id="shop_postgres", sql=REVENUE)
    check = PythonOperator(task_id="check_revenue", python_callable=check_revenue)
    build >> check
