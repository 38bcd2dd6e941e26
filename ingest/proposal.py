"""The MetadataChangeProposal: one change to one aspect of one entity.

`parse_proposal` accepts the JSON forms writers send: DataHub's Rest.li form (aspect
value as a JSON string in `aspect.value`), the same with the value inline as JSON, and
DataHub's file form (`aspect: {"json": {...}}`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

CHANGE_TYPES = ("UPSERT", "CREATE", "CREATE_ENTITY", "UPDATE", "DELETE", "PATCH")
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"


class ProposalError(ValueError):
    """A proposal that cannot be read; `field` names the offending part."""

    def __init__(self, field_name: str, message: str, code: str = "invalid_proposal"):
        self.field = field_name
        self.code = code
        super().__init__(f"{field_name}: {message}")


@dataclass(slots=True)
class Proposal:
    entity_type: str
    entity_urn: str
    change_type: str
    aspect_name: str | None
    value: Any = None
    content_type: str = JSON
    system_metadata: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The Rest.li JSON form (aspect value as a JSON string)."""
        out: dict[str, Any] = {
            "entityType": self.entity_type,
            "entityUrn": self.entity_urn,
            "changeType": self.change_type,
        }
        if self.aspect_name is not None:
            out["aspectName"] = self.aspect_name
        if self.value is not None:
            out["aspect"] = {"value": json.dumps(self.value), "contentType": self.content_type}
        if self.system_metadata:
            out["systemMetadata"] = self.system_metadata
        if self.headers:
            out["headers"] = self.headers
        return out

    def to_record(self) -> dict[str, Any]:
        """The Avro record of the MetadataChangeProposal schema."""
        return {
            "entityType": self.entity_type,
            "entityUrn": self.entity_urn,
            "entityKeyAspect": None,
            "changeType": self.change_type,
            "aspectName": self.aspect_name,
            "aspect": None if self.value is None else {
                "value": json.dumps(self.value).encode(), "contentType": self.content_type,
            },
            "systemMetadata": self.system_metadata,
            "headers": self.headers or None,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Proposal:
        aspect = record.get("aspect")
        value = None
        content_type = JSON
        if aspect is not None:
            content_type = aspect["contentType"]
            try:
                value = orjson.loads(aspect["value"])
            except ValueError as err:
                raise ProposalError("aspect.value", f"not valid JSON ({err})") from None
        return cls(
            record["entityType"], record.get("entityUrn") or "", record["changeType"],
            record.get("aspectName"), value, content_type,
            _clean(record.get("systemMetadata")), dict(record.get("headers") or {}),
        )


def _clean(system_metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if not system_metadata:
        return None
    return {k: v for k, v in system_metadata.items() if v is not None}


def _text(obj: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise ProposalError(name, "is required")
        return None
    if not isinstance(value, str) or not value:
        raise ProposalError(name, "must be a non-empty string")
    return value


def parse_proposal(obj: Any) -> Proposal:
    """A Proposal from its JSON object; raises ProposalError naming the field."""
    if not isinstance(obj, dict):
        raise ProposalError("proposal", "must be a JSON object")
    urn = _text(obj, "entityUrn")
    entity_type = _text(obj, "entityType", required=False)
    if entity_type is None:
        entity_type = urn.removeprefix("urn:li:").partition(":")[0]
    change_type = _text(obj, "changeType")
    if change_type not in CHANGE_TYPES:
        raise ProposalError(
            "changeType", f"unknown change type {change_type!r} (one of {', '.join(CHANGE_TYPES)})",
            code="unknown_change_type",
        )
    aspect_name = _text(obj, "aspectName", required=False)
    value, content_type = _aspect_value(obj.get("aspect"))
    if change_type == "PATCH" and content_type != JSON_PATCH:
        raise ProposalError("aspect.contentType", f"PATCH needs {JSON_PATCH!r}, got {content_type!r}")
    if change_type != "PATCH" and content_type not in (JSON,):
        raise ProposalError("aspect.contentType", f"{content_type!r} is not supported (use {JSON!r})")
    if change_type != "DELETE" and value is None:
        raise ProposalError("aspect", f"is required for {change_type}")
    if aspect_name is None:
        raise ProposalError("aspectName", "is required")
    system_metadata = obj.get("systemMetadata")
    if system_metadata is not None and not isinstance(system_metadata, dict):
        raise ProposalError("systemMetadata", "must be a JSON object")
    headers = obj.get("headers") or {}
    if not isinstance(headers, dict) or headers and not all(isinstance(v, str) for v in headers.values()):
        raise ProposalError("headers", "must be an object of string values")
    return Proposal(entity_type, urn, change_type, aspect_name, value, content_type,
                    _clean(system_metadata) if system_metadata else None, dict(headers))


def _aspect_value(aspect: Any) -> tuple[Any, str]:
    if aspect is None:
        return None, JSON
    if not isinstance(aspect, dict):
        raise ProposalError("aspect", 'must be an object {"value": ..., "contentType": ...}')
    if "json" in aspect:
        return aspect["json"], JSON
    if "value" not in aspect:
        raise ProposalError("aspect", 'needs "value" (or "json")')
    content_type = aspect.get("contentType", JSON)
    if not isinstance(content_type, str):
        raise ProposalError("aspect.contentType", "must be a string")
    value = aspect["value"]
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except ValueError as err:
            raise ProposalError("aspect.value", f"is not valid JSON ({err})") from None
    return value, content_type
