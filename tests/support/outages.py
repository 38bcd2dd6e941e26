"""Helpers of the outage tests: a GMS process through a TCP proxy, and reading back what it wrote."""

from __future__ import annotations

from typing import Any

import requests

from tests.support.builders import mcp, properties
from tests.support.processes import TOKEN
from tests.support.stack import Lodestar, Stack

AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Gms:
    """HTTP to one `lodestar gms` process."""

    def __init__(self, process: Lodestar):
        self.url = f"http://127.0.0.1:{process.port}"

    def propose(self, *mcps: dict[str, Any], asynchronous: bool = False) -> requests.Response:
        return requests.post(f"{self.url}/v1/proposals", headers=AUTH, timeout=60,
                             json={"proposals": list(mcps), "async": asynchronous})

    def ready(self) -> requests.Response:
        return requests.get(f"{self.url}/health/ready", timeout=60)

    def get(self, path: str) -> requests.Response:
        return requests.get(f"{self.url}{path}", headers=AUTH, timeout=60)

    def indexed(self) -> bool:
        answer = requests.post(f"{self.url}/v1/proposals", headers=AUTH, timeout=60,
                               json={"proposals": [], "waitForIndex": True})
        assert answer.status_code == 200, f"waitForIndex answered {answer.status_code}: {answer.text}"
        return answer.json()["indexed"]


def step(urn: str, version: int, text: str) -> dict[str, Any]:
    """Version `version` of urn's properties, conditioned on the one before."""
    return mcp(urn, "datasetProperties", properties(text), headers={"If-Version-Match": str(version - 1 or -1)})


def versions(on: Stack, urn: str) -> list[tuple[int, str]]:
    return [(row.version, row.value["description"]) for row in on.aspects.history(urn, "datasetProperties")]


def start_ready(on: Stack) -> tuple[Gms, Lodestar, Lodestar]:
    """A `lodestar gms` and an MCL processor on the stack, once GMS answers ready:
    (a client of GMS, the GMS process, the MCL processor)."""
    process = on.gms("gms")
    indexer = on.mcl_processor("mcl")
    on.await_healthy(process)
    gms = Gms(process)
    on.await_(lambda: gms.ready().status_code == 200, "GMS ready")
    return gms, process, indexer


def mcls_of(on: Stack, urns: set[str]) -> list[tuple[str, str, int]]:
    return sorted(key for key, n in on.mcl_counts().items() for _ in range(n) if key[0] in urns)
