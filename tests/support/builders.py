"""Small builders of proposals for tests."""

from __future__ import annotations

import json
from typing import Any

from ingest.proposal import Proposal, parse_proposal


def dataset_urn(name: str, platform: str = "hive", env: str = "PROD") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{name},{env})"


def mcp(urn: str, aspect: str, value: Any = None, change: str = "UPSERT",
        headers: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """An MCP in the REST JSON form (aspect value as a JSON string)."""
    body: dict[str, Any] = {
        "entityType": urn.removeprefix("urn:li:").partition(":")[0],
        "entityUrn": urn,
        "changeType": change,
        "aspectName": aspect,
    }
    if value is not None:
        content_type = "application/json-patch+json" if change == "PATCH" else "application/json"
        body["aspect"] = {"value": json.dumps(value), "contentType": content_type}
    if headers:
        body["headers"] = headers
    body.update(extra)
    return body


def proposal(urn: str, aspect: str, value: Any = None, change: str = "UPSERT",
             headers: dict[str, str] | None = None, **extra: Any) -> Proposal:
    return parse_proposal(mcp(urn, aspect, value, change, headers, **extra))


def properties(description: str, **custom: str) -> dict[str, Any]:
    return {"description": description, "customProperties": custom}
