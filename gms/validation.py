"""Checks a proposal against the registry and the aspect's schema before anything is stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gms.aspect_rules import RULES
from gms.conditions import Conditions, parse_conditions
from gms.errors import ProposalFailed
from gms.patch import PatchDocument, parse_patch
from ingest.proposal import Proposal, ProposalError
from schemas.jsonform import AspectValueError, Check
from schemas.jsonform_accept import compile_fast_validator
from schemas.registry import AspectSpec, EntityRegistry, EntitySpec
from schemas.urns import Urn, UrnError

SYSTEM_METADATA = "com.linkedin.mxe.SystemMetadata"
DEFAULT_MAX_ASPECT_BYTES = 4 * 1024 * 1024


def canonical_json(value: Any) -> str:
    """The stored form of an aspect value: compact, keys sorted, so equal values compare equal."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError) as err:
        raise ProposalFailed("invalid_aspect", f"aspect: value cannot be stored as JSON ({err})") from None


@dataclass(frozen=True, slots=True)
class ValidProposal:
    """A proposal that passed every check that does not need the stored state."""

    proposal: Proposal
    urn: Urn
    entity: EntitySpec
    aspect: AspectSpec
    value_json: str | None  # canonical value for writes; None for DELETE and PATCH
    conditions: Conditions


class ProposalValidator:
    def __init__(self, registry: EntityRegistry, max_aspect_bytes: int = DEFAULT_MAX_ASPECT_BYTES):
        self.registry = registry
        self.max_aspect_bytes = max_aspect_bytes
        self._check_system_metadata: Check = compile_fast_validator(
            registry.named_types[SYSTEM_METADATA], registry.named_types
        )

    def validate(self, proposal: Proposal | ProposalError,
                 request_headers: Mapping[str, str] | None = None) -> ValidProposal:
        """The proposal, checked; raises ProposalFailed naming the problem and the field."""
        if isinstance(proposal, ProposalError):
            status = 400
            raise ProposalFailed(proposal.code, str(proposal), status)
        registry = self.registry
        entity = registry.entity(proposal.entity_type)
        if entity is None:
            raise ProposalFailed(
                "unknown_entity_type", f"entityType: unknown entity type {proposal.entity_type!r}"
            )
        aspect = registry.aspect(proposal.aspect_name or "")
        if aspect is None:
            raise ProposalFailed("unknown_aspect", f"aspectName: unknown aspect {proposal.aspect_name!r}")
        if aspect.name not in entity.aspects:
            raise ProposalFailed(
                "aspect_not_in_entity",
                f"aspectName: aspect {aspect.name!r} does not belong to entity {entity.name!r}"
                f" (its aspects: {', '.join(entity.aspects)})",
            )
        try:
            urn = registry.parse_urn(proposal.entity_urn, entity.name)
        except UrnError as err:
            raise ProposalFailed("invalid_urn", f"entityUrn: {err}") from None
        if aspect.is_timeseries and proposal.change_type != "UPSERT":
            raise ProposalFailed(
                "unsupported_change_type",
                f"changeType: timeseries aspect {aspect.name!r} accepts UPSERT only, not {proposal.change_type}",
            )
        if proposal.system_metadata is not None:
            try:
                self._check_system_metadata(proposal.system_metadata)
            except AspectValueError as err:
                raise ProposalFailed("invalid_system_metadata", f"systemMetadata: {err}") from None
        value_json = None
        if proposal.change_type == "PATCH":
            self.patch_operations(proposal.value)
        elif proposal.change_type != "DELETE":
            value_json = self.check_value(aspect, proposal.value)
            if aspect.key_for is not None and proposal.value != registry.key_value(urn):
                raise ProposalFailed(
                    "invalid_aspect", f"aspect: key aspect {aspect.name} does not match the URN {proposal.entity_urn}"
                )
        conditions = parse_conditions(request_headers or {}, proposal.headers)
        return ValidProposal(proposal, urn, entity, aspect, value_json, conditions)

    def check_value(self, aspect: AspectSpec, value: Any, context: str = "aspect") -> str:
        """The canonical JSON of a value that fits the aspect's schema and the size limit."""
        value_json = canonical_json(value)
        size = len(value_json) if value_json.isascii() else len(value_json.encode())
        if size > self.max_aspect_bytes:
            raise ProposalFailed(
                "too_large",
                f"{context}: value of {aspect.name} is {size} bytes, over the limit of {self.max_aspect_bytes}",
                413,
            )
        try:
            aspect.check(value)
        except AspectValueError as err:
            raise ProposalFailed("invalid_aspect", f"{context} {aspect.name}: {err}") from None
        rule = RULES.get(aspect.name)
        if rule is not None:
            try:
                rule(value)
            except ValueError as err:
                raise ProposalFailed("invalid_aspect", f"{context} {aspect.name}: {err}") from None
        return value_json

    @staticmethod
    def patch_operations(value: Any) -> PatchDocument:
        """A PATCH value read: a JSON Patch array, or DataHub's {"patch": [...], "arrayPrimaryKeys"}
        (gms.patch)."""
        return parse_patch(value)
