"""A difference between a read model and the aspect store, as the consistency check reports it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcl_processor.changes import AspectChange


@dataclass(frozen=True, slots=True)
class Divergence:
    """`kind`: missing (in the store, not the model), stale (another version), content (same
    version, different contribution) or extra (in the model, not live in the store)."""

    model: str
    kind: str
    urn: str
    aspect: str | None
    detail: str = ""

    def to_json(self) -> dict[str, str | None]:
        return {"model": self.model, "kind": self.kind, "urn": self.urn, "aspect": self.aspect,
                "detail": self.detail}


def compare_versions(model: str, stored: Mapping[tuple[str, str], tuple[int, Any]],
                     expected: Mapping[tuple[str, str], AspectChange],
                     content: Callable[[AspectChange], Any]) -> list[Divergence]:
    """Differences between what a model holds per (urn, aspect), its (version, content), and
    the store's latest versions, whose content the model would hold is `content(change)`."""
    out = []
    for key, change in expected.items():
        found = stored.get(key)
        if found is None:
            out.append(Divergence(model, "missing", *key, f"version {change.version} not indexed"))
        elif found[0] != change.version:
            out.append(Divergence(model, "stale", *key, f"indexed version {found[0]}, store has {change.version}"))
        elif found[1] != content(change):
            out.append(Divergence(model, "content", *key, f"version {change.version} indexed differently"))
    out.extend(Divergence(model, "extra", *key, f"version {stored[key][0]} indexed, not live in the store")
               for key in stored if key not in expected)
    return out
