"""Loading the examples and building runs for the lineage-over-time tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingest.files import read_proposal_file
from tests.support.builders import dataset_urn, mcp

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NS = "default"


def cdap(name: str) -> str:
    return dataset_urn(f"{NS}.{name}", platform="cdap")


def program(name: str, app: str = "App") -> str:
    return f"urn:li:dataJob:(urn:li:dataFlow:(cdap,{app},{NS}),{name})"


def example(name: str) -> list[dict[str, Any]]:
    from schemas.registry import default_registry

    return read_proposal_file(EXAMPLES / name, default_registry())


def run(run_id: str, job: str, start_s: int, end_s: int | None, reads: tuple[str, ...] = (),
        writes: tuple[str, ...] = (), parent: str | None = None, operations: list | None = None,
        accesses: list[dict] | None = None) -> list[dict[str, Any]]:
    """The MCPs of one program run (times in seconds)."""
    urn = f"urn:li:dataProcessInstance:{run_id}"
    items = [
        mcp(urn, "dataProcessInstanceProperties", {"name": run_id, "created": {"time": start_s * 1000,
                                                                                "actor": "urn:li:corpuser:cdap"}}),
        mcp(urn, "dataProcessInstanceRelationships", {"parentTemplate": job, "upstreamInstances": [],
                                                      **({"parentInstance": parent} if parent else {})}),
    ]
    if reads:
        items.append(mcp(urn, "dataProcessInstanceInput", {"inputs": list(reads)}))
    if writes:
        items.append(mcp(urn, "dataProcessInstanceOutput", {"outputs": list(writes)}))
    if accesses:
        items.append(mcp(urn, "dataProcessInstanceAccesses", {"accesses": accesses}))
    if operations:
        items.append(mcp(urn, "fieldOperations", {"operations": operations}))
    items.append(mcp(urn, "dataProcessInstanceRunEvent", {"timestampMillis": start_s * 1000, "status": "STARTED"}))
    if end_s is not None:
        items.append(mcp(urn, "dataProcessInstanceRunEvent", {
            "timestampMillis": end_s * 1000, "status": "COMPLETE",
            "result": {"type": "SUCCESS", "nativeResultType": "COMPLETED"}}))
    return items


def propose_and_index(client, items: list[dict[str, Any]]) -> None:
    status, body = client.request("POST", "/v1/proposals", {"proposals": items, "waitForIndex": True})
    assert status == 200 and body.get("indexed") is True, body
