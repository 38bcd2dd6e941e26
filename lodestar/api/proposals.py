"""Building MCPs inside the API (for intake endpoints that turn other formats into proposals)."""

from __future__ import annotations

from typing import Any

from ingest.proposal import Proposal, parse_proposal


def make(urn: str, aspect: str, value: Any, change: str = "UPSERT",
         headers: dict[str, str] | None = None) -> Proposal:
    """A proposal of one aspect value in its JSON form."""
    body: dict[str, Any] = {"entityType": urn.removeprefix("urn:li:").partition(":")[0], "entityUrn": urn,
                            "changeType": change, "aspectName": aspect, "aspect": {"json": value}}
    if headers:
        body["headers"] = headers
    return parse_proposal(body)
