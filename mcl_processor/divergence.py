"""A difference between a read model and the aspect store, as the consistency check reports it."""

from __future__ import annotations

from dataclasses import dataclass


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
