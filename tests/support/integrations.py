"""Fixtures and helpers of tests/integrations/: the tools a data team runs (DataHub's ingestion
sources, dbt, Airflow), each from its own venv (`tool_venvs`), run as processes against a real
`lodestar serve`; PostgreSQL from deploy/ (`deploy/servers.sh start postgres`). What they sent is
read back through Lodestar's own API."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from ingest.rest import RestClient
from tests.support.processes import TOKEN, ServeProcess, run_cli
from tests.support.tool_venvs import ROOT, tool_venv
from tests.support.waiting import await_

SERVERS = ROOT / "deploy" / "servers.sh"
PSQL = "psql"  # Debian's postgresql package brings it (postgresql-client)


@dataclass(frozen=True)
class Postgres:
    """The PostgreSQL server of deploy/ (its defaults in deploy/lib/postgres.sh)."""

    host: str = "127.0.0.1"
    port: int = int(os.environ.get("LODESTAR_POSTGRES_PORT", "5433"))
    user: str = os.environ.get("LODESTAR_POSTGRES_SUPERUSER", "lodestar")
    password: str = os.environ.get("LODESTAR_POSTGRES_PASSWORD", "lodestar")

    def execute(self, database: str, sql: str) -> None:
        """Runs `sql` (statements, each in a transaction of its own) with the server's own `psql`."""
        done = subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.host, "-p", str(self.port),
                               "-U", self.user, "-d", database, "-f", "-"], input=sql, capture_output=True,
                              text=True, env={**os.environ, "PGPASSWORD": self.password}, timeout=120)
        assert done.returncode == 0, f"psql on {database} failed:\n{done.stderr}"


@pytest.fixture(scope="session")
def postgres() -> Postgres:
    """PostgreSQL from deploy/, started unless it runs (left running, like the other servers)."""
    done = subprocess.run([str(SERVERS), "start", "postgres"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"deploy/servers.sh start postgres failed:\n{done.stdout}\n{done.stderr}"
    return Postgres()


@pytest.fixture
def database(postgres: Postgres) -> Iterator[str]:
    """A database of the test's own, dropped afterwards."""
    name = f"it_{uuid.uuid4().hex[:10]}"
    postgres.execute("postgres", f"CREATE DATABASE {name}")
    yield name
    postgres.execute("postgres", f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def lodestar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One `lodestar serve` per test module, with every role."""
    with ServeProcess(tmp_path_factory.mktemp("lodestar") / "data") as serve:
        yield serve


def run_tool(tool: str, program: str, *args: str, env: dict[str, str], cwd: Path,
             timeout: float = 600) -> str:
    """`program` of the tool's venv; its output, asserting it exited 0."""
    bin_dir = tool_venv(tool)
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}"}  # its own programs first
    done = subprocess.run([str(bin_dir / program), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{program} {' '.join(args)} exited {done.returncode}:\n{output[-8000:]}"
    return output


def tool_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment of a tool's own: its HOME, none of Lodestar's Python path."""
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "DATAHUB_", "OPENLINEAGE_", "AIRFLOW"))}
    return {**env, "HOME": str(home), "DATAHUB_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1", **extra}


def datahub_ingest(recipe: Path, lodestar: ServeProcess, home: Path) -> str:
    """`datahub ingest -c recipe` of DataHub's ingestion venv into Lodestar's REST API."""
    env = tool_env(home, DATAHUB_GMS_URL=lodestar.url, DATAHUB_GMS_TOKEN=TOKEN)
    out = run_tool("datahub-sources", "datahub", "ingest", "-c", str(recipe), env=env, cwd=recipe.parent)
    assert "Pipeline finished successfully" in out, out[-8000:]
    return out


def postgres_recipe(tmp: Path, postgres: Postgres, database: str, lodestar: ServeProcess) -> Path:
    """A recipe of DataHub's postgres source for `database` (views' lineage, profiles, stateful
    ingestion) with the datahub-rest sink into `lodestar`."""
    path = tmp / "postgres.yml"
    path.write_text(f"""
pipeline_name: postgres-{database}
source:
  type: postgres
  config:
    host_port: {postgres.host}:{postgres.port}
    database: {database}
    username: {postgres.user}
    password: {postgres.password}
    include_view_lineage: true
    include_view_column_lineage: true
    profiling:
      enabled: true
    stateful_ingestion:
      enabled: true
      remove_stale_metadata: true
sink:
  type: datahub-rest
  config:
    server: {lodestar.url}
    token: {TOKEN}
""")
    return path


def postgres_urn(database: str, table: str) -> str:
    """A table as DataHub's postgres source names it (`schema.table` in `database`)."""
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,{database}.{table},PROD)"


def path_of(urn: str) -> str:
    return quote(urn, safe="")


def aspects(client: RestClient, urn: str) -> dict[str, Any]:
    """The entity's latest aspects' values ({} when there is none)."""
    status, body = client.request("GET", f"/v1/entities/{path_of(urn)}")
    assert status in (200, 404), (status, body)
    return {name: item["value"] for name, item in body["aspects"].items()} if status == 200 else {}


def lineage(client: RestClient, urn: str, direction: str = "upstream", hops: int = 1) -> set[tuple[str, str]]:
    """(source, destination) of the lineage edges around `urn`."""
    body = client.call("GET", f"/v1/lineage?urn={path_of(urn)}&direction={direction}&maxHops={hops}")
    return {(edge["source"], edge["destination"]) for edge in body["edges"]}


def field_lineage(client: RestClient, field_urn: str, direction: str = "upstream") -> dict[str, Any]:
    return client.call("GET", f"/v1/lineage/fields?urn={path_of(field_urn)}&direction={direction}&maxHops=3")


def metric(lodestar: ServeProcess, name: str, labels: str = "") -> list[float]:
    """The values of a metric at /metrics, of the series whose labels contain `labels`."""
    text = requests.get(f"{lodestar.url}/metrics", timeout=30).text
    return [float(match.group(2)) for match in re.finditer(rf"^{name}{{([^}}]*)}} (\S+)$", text, re.M)
            if labels in match.group(1)]


def settled(lodestar: ServeProcess) -> None:
    """Every proposal queued so far applied (`datahub ingest` sends batches to the MCP topic),
    every change in the read models, and none failed."""
    await_(lambda: not any(metric(lodestar, "lodestar_consumer_lag", 'group="gms-mcp-consumer"')),
           "the queued proposals applied")
    client = lodestar.client()
    assert client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"] is True
    failed = run_cli("failed", "--json", "--data-dir", str(lodestar.data_dir))
    assert sum(metric(lodestar, "lodestar_failed_proposals_total")) == 0, failed.stdout + failed.stderr


def fields(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A schemaMetadata's fields by path."""
    return {field["fieldPath"]: field for field in schema["fields"]}
