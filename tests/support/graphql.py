"""For the GraphQL tests of DataHub's clients: a live server for a whole module (as the `server`
fixture makes one per test), DataHub's clients pointed at it, and the barrier that waits until
what was written is searchable."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import requests
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

from gms.service import Gms, Limits
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from tests.support import datahub_clients
from tests.support.server import TOKEN, LiveServer, start_server


@contextmanager
def live_server(data: Path) -> Iterator[LiveServer]:
    """A live server with the MCL processor beside it (conftest's `server`, for a module)."""
    service = Gms.embedded(data, Limits(max_request_bytes=4 * 1024 * 1024))
    read_models = SqliteReadModels.in_data_dir(data, service.registry)
    processor = MclProcessor(service.registry, service.codec, read_models)
    stop = threading.Event()
    indexing = threading.Thread(target=processor.run, args=(service.log, stop, 0.05), daemon=True)
    indexing.start()
    live, thread = start_server(service, read_models, processor)
    try:
        yield live
    finally:
        thread.stop()
        stop.set()
        indexing.join(10)
        read_models.close()
        service.close()


def graph(server: LiveServer, token: str = TOKEN) -> DataHubGraph:
    return DataHubGraph(DatahubClientConfig(server=server.url, token=token))


def emit(server: LiveServer, mcps: Sequence[MetadataChangeProposalWrapper]) -> None:
    """Writes with DataHub's emitter, then waits until the MCL processor indexed them."""
    client = graph(server)
    try:
        client.emit_mcps(list(mcps))
    finally:
        client.close()
    wait_indexed(server)


def wait_indexed(server: LiveServer) -> None:
    """Returns once the MCL processor has indexed every change written so far (the server waits:
    `waitForIndex` of an empty batch)."""
    answer = requests.post(f"{server.url}/v1/proposals", json={"proposals": [], "waitForIndex": True},
                           headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert answer.status_code == 200 and answer.json()["indexed"] is True, answer.text


def post_graphql(server: LiveServer, body: Any, token: str | None = TOKEN) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(f"{server.url}/api/graphql", json=body, headers=headers, timeout=60)


def native_search(server: LiveServer, token: str = TOKEN, **params: Any) -> dict[str, Any]:
    """Lodestar's own /v1/search."""
    answer = requests.get(f"{server.url}/v1/search?{urlencode(params)}", headers={"Authorization": f"Bearer {token}"},
                          timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def native_lineage(server: LiveServer, urn: str, direction: str, hops: int, token: str = TOKEN) -> dict[str, Any]:
    """Lodestar's own /v1/lineage (or /v1/lineage/fields from a schemaField URN)."""
    path = "/v1/lineage/fields" if urn.startswith("urn:li:schemaField:") else "/v1/lineage"
    answer = requests.get(f"{server.url}{path}?{urlencode({'urn': urn, 'direction': direction, 'maxHops': hops})}",
                          headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def datahub_cli(server: LiveServer, home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """DataHub's `datahub` CLI against the server, with a home of its own."""
    return datahub_clients.datahub_cli(server.url, home, token=TOKEN)(*args, timeout=timeout)
