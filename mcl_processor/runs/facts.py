"""What each aspect tells about a run, read from the `RunLineage` annotations of its schema.

A top-level aspect field annotated `"RunLineage": "<fact>"` contributes its value as that fact:
`start` (an AuditStamp or epoch ms), `program`, `parent`, `read`/`write` (dataset URNs),
`accesses` (typed accesses), `fieldOperations`, and for run events `eventTime`, `status`,
`result`. Nothing here names an aspect: annotated aspects need no processor code.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from schemas.registry import EntityRegistry

Facts = dict[str, Any]


class RunFacts:
    """The annotated fields of every aspect of a registry: aspect -> {field name: fact}."""

    def __init__(self, registry: EntityRegistry):
        self.fields: dict[str, dict[str, str]] = {}
        for name, spec in registry.aspects.items():
            annotated = {f["name"]: f["RunLineage"] for f in spec.schema["fields"] if "RunLineage" in f}
            if annotated:
                self.fields[name] = annotated

    def traced(self, aspect: str) -> bool:
        return aspect in self.fields

    def of(self, aspect: str, value: Mapping[str, Any] | None) -> Facts:
        """The facts an aspect value states (none for a deleted aspect)."""
        if value is None:
            return {}
        return {fact: value[field] for field, fact in self.fields[aspect].items() if value.get(field) is not None}


@cache
def run_facts_of(registry: EntityRegistry) -> RunFacts:
    return RunFacts(registry)
