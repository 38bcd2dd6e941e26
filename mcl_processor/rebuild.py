"""A rebuild from a replay (`lodestar replay --into NAME`): the read model readers query for a
topic is built beside the live one and switched to atomically.

The staged model is the timeseries store for the timeseries topic and the search index for
the versioned topic. The other models a topic feeds (the lineage graph and run lineage from
versioned aspects; run events from timeseries points) are replayed in place: their writes are
idempotent and version-guarded, so the replay changes nothing that is current there and fills
in what is missing.

Fields' upstream tags in search documents are derived from search and lineage: lineage being
current before the staging index is, they are derived again over the whole staging index
before the switch, and over the live one after what arrived during the switch was applied.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractContextManager

from ingest import topics
from mcl_processor import upstream_tags
from mcl_processor.readmodels import Preparer, ReadModels
from mcl_processor.staging import Rebuildable, staging_name

STAGED = {topics.MCL_VERSIONED: "search", topics.MCL_TIMESERIES: "timeseries"}  # the model a rebuild stages


class StagedModels(ReadModels):
    """The live read models with one of them (`model`) replaced by its staging model; written in
    the live models' transaction."""

    def __init__(self, live: ReadModels, model: str, staged: Rebuildable):
        self.live = live
        self.search, self.lineage, self.runs, self.timeseries = live.search, live.lineage, live.runs, live.timeseries
        setattr(self, model, staged)

    def transaction(self) -> AbstractContextManager[object]:
        return self.live.transaction()

    def preparer(self) -> Preparer | None:
        return self.live.preparer()

    def close(self) -> None:
        """Nothing: the live models' owner closes them."""


class Rebuild:
    """A rebuild of the model `topic` feeds into staging model `name`; for the timeseries store,
    of the points of `aspects` only (None: every aspect)."""

    def __init__(self, live: ReadModels, topic: str, name: str, aspects: Collection[str] | None = None):
        self.live, self.name, self.aspects = live, staging_name(name), aspects
        self.model = STAGED[topic]

    @property
    def live_model(self) -> Rebuildable:
        model: Rebuildable = getattr(self.live, self.model)
        return model

    def staging(self, fresh: bool) -> StagedModels:
        """The read models a replay writes until the switch (see Rebuildable.staging)."""
        return StagedModels(self.live, self.model, self.live_model.staging(self.name, fresh))

    def switch(self, staged: ReadModels) -> None:
        """Switch readers to the staging model, atomically."""
        if self.model == "search":
            with staged.transaction():
                upstream_tags.rederive(staged.search, staged.lineage)
            self.live.search.switch_to(self.name)
        else:
            self.live.timeseries.switch_to(self.name, self.aspects)

    def settle(self) -> None:
        """After the changes that arrived during the switch were applied to the live models."""
        if self.model == "search":
            with self.live.transaction():
                upstream_tags.rederive(self.live.search, self.live.lineage)
