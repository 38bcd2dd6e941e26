"""The consistency check: read models against the aspect store's latest versions.

Every live aspect a model keeps must be there at the stored version with the contribution
the store's value makes (else missing, stale or content); whatever a model holds that is not
live in the store is extra. Timeseries points are not checked: the store does not keep them. Fields' upstream tags,
derived from the other models, are checked against what those give (`upstream_tags.compare`).
Run during ingestion, the check also reports changes still on their way to the models.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from gms.store import AspectStore
from mcl_processor import upstream_tags
from mcl_processor.annotations import entity_type_of
from mcl_processor.changes import AspectChange
from mcl_processor.divergence import Divergence
from mcl_processor.readmodels import ReadModels, collector_paused
from mcl_processor.restore import scan_pages
from schemas.registry import EntityRegistry


@dataclass
class CheckReport:
    aspects: int = 0  # live aspects read from the store
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (model, kind) -> divergences
    examples: list[Divergence] = field(default_factory=list)
    max_examples: int = 10

    @property
    def ok(self) -> bool:
        return not self.counts

    def add(self, divergences: list[Divergence]) -> None:
        for divergence in divergences:
            key = (divergence.model, divergence.kind)
            self.counts[key] += 1
            if self.counts[key] <= self.max_examples:
                self.examples.append(divergence)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "aspects": self.aspects,
            "differences": sum(self.counts.values()),
            "counts": [{"model": model, "kind": kind, "count": n} for (model, kind), n in sorted(self.counts.items())],
            "examples": [d.to_json() for d in self.examples],
        }


def check(read_models: ReadModels, registry: EntityRegistry, store: AspectStore, examples: int = 10) -> CheckReport:
    with collector_paused():
        return _check(read_models, registry, store, examples)


def _check(read_models: ReadModels, registry: EntityRegistry, store: AspectStore, examples: int) -> CheckReport:
    report = CheckReport(max_examples=examples)
    in_store: set[str] = set()
    held: list[AspectChange] = []  # the last entity of a page may continue on the next
    for page in scan_pages(store):
        changes = held + [
            AspectChange(row.urn, entity_type_of(row.urn), row.aspect, row.version, value_json=row.value_json)
            for row in page if registry.aspect(row.aspect) is not None]
        report.aspects += len(page)
        last = changes[-1].urn if changes else None
        held = [c for c in changes if c.urn == last]
        _compare(read_models, [c for c in changes if c.urn != last], in_store, report)
    _compare(read_models, held, in_store, report)
    report.add(upstream_tags.compare(read_models.search, read_models.lineage))
    for model, name in ((read_models.search, "search"), (read_models.lineage, "lineage")):
        after = ""
        while urns := model.urns(after):
            report.add([Divergence(name, "extra", urn, None, "entity not live in the store")
                        for urn in urns if urn not in in_store])
            after = urns[-1]
    return report


def _compare(read_models: ReadModels, changes: list[AspectChange], in_store: set[str], report: CheckReport) -> None:
    if not changes:
        return
    urns = [urn for urn, _ in groupby(c.urn for c in changes)]
    in_store.update(urns)
    report.add(read_models.search.compare(urns, changes))
    report.add(read_models.lineage.compare(urns, changes))
    report.add(read_models.runs.compare(urns, changes))
