"""Fixtures and helpers of tests/datahub_clients/test_{emitter,graph,cli}.py: DataHub's own clients,
unmodified, against a real `lodestar serve` (`lodestar`, one per test module): its REST emitter
(`emitter`), its graph client (`graph`) and the `datahub` CLI (`datahub`: a process of its own in
a temporary home, configured by environment variables). Results are read back through
Lodestar's own API (`entity`, `points`, `searched`). A module imports the fixtures it uses."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.ingestion.graph.client import DataHubGraph
from datahub.ingestion.graph.config import DatahubClientConfig

from ingest.rest import RestClient
from tests.support.processes import TOKEN, ServeProcess

DATAHUB = str(Path(sys.executable).with_name("datahub"))


@pytest.fixture(scope="module")
def lodestar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One `lodestar serve` per test module (every role: MCP consumer, MCL processor); tests
    use URNs of their own."""
    with ServeProcess(tmp_path_factory.mktemp("lodestar") / "data") as serve:
        yield serve


@pytest.fixture
def emitter(lodestar: ServeProcess) -> Iterator[DatahubRestEmitter]:
    emitter = DatahubRestEmitter(gms_server=lodestar.url, token=TOKEN)
    yield emitter
    emitter.close()


@pytest.fixture
def graph(lodestar: ServeProcess) -> Iterator[DataHubGraph]:
    graph = DataHubGraph(DatahubClientConfig(server=lodestar.url, token=TOKEN))
    yield graph
    graph.close()


@dataclass
class DatahubCli:
    """`datahub` as a process, in a home of its own; `env` points it at Lodestar."""

    env: dict[str, str]
    cwd: Path

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([DATAHUB, *args], capture_output=True, text=True, cwd=self.cwd, env=self.env,
                              input=stdin, timeout=timeout)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self(*args, stdin=stdin)
        assert done.returncode == 0, f"datahub {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr


def datahub_cli(url: str, home: Path, cwd: Path | None = None, token: str = TOKEN) -> DatahubCli:
    """`datahub` pointed at the server at `url` with `token`, `home` as its HOME (so no user's
    `~/.datahubenv` is read)."""
    env = {**os.environ, "HOME": str(home), "DATAHUB_GMS_URL": url, "DATAHUB_GMS_TOKEN": token,
           "DATAHUB_TELEMETRY_ENABLED": "false"}
    env.pop("DATAHUB_GMS_HOST", None)
    return DatahubCli(env, cwd or home)


@pytest.fixture
def datahub(lodestar: ServeProcess, tmp_path: Path) -> DatahubCli:
    home = tmp_path / "home"
    home.mkdir()
    return datahub_cli(lodestar.url, home, tmp_path)


def path_of(urn: str) -> str:
    return quote(urn, safe="")


def entity(client: RestClient, urn: str) -> dict[str, Any] | None:
    """The entity's latest aspects through Lodestar's API (None: 404)."""
    status, body = client.request("GET", f"/v1/entities/{path_of(urn)}")
    assert status in (200, 404), (status, body)
    return body["aspects"] if status == 200 else None


def points(client: RestClient, urn: str, aspect: str) -> list[dict[str, Any]]:
    return client.call("GET", f"/v1/timeseries/{path_of(urn)}/{aspect}")["points"]


def searched(client: RestClient, query: str, include_removed: bool = False) -> set[str]:
    removed = "&includeRemoved=true" if include_removed else ""
    body = client.call("GET", f"/v1/search?query={quote(query)}&count=100{removed}")
    return {hit["urn"] for hit in body["results"]}


def indexed(client: RestClient) -> None:
    """Every change so far is in the read models (waitForIndex)."""
    assert client.call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})["indexed"] is True
