"""Staging read models: a rebuild (`lodestar replay --into NAME`) writes a model beside the live
one and then switches readers to it in one atomic step, so they never see a half-built model.

The ports of the models a replay rebuilds (timeseries, search) are `Rebuildable`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Self

_STAGING_NAME = re.compile(r"[a-z0-9]{1,40}")


def staging_name(name: str) -> str:
    """A staging model's name, checked: lowercase letters and digits (it becomes part of a
    table or index name); raises ValueError."""
    if not _STAGING_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a read-model name: use 1 to 40 lowercase letters and digits")
    return name


class Rebuildable(ABC):
    """A read model that can be rebuilt beside the live one and switched to."""

    @abstractmethod
    def staging(self, name: str, fresh: bool) -> Self:
        """The staging model `name` (lowercase letters and digits), beside the live one;
        `fresh` empties it first, else a build left unfinished goes on. Raises ValueError for a
        fresh build under a name the live model is kept under now."""

    @abstractmethod
    def switch_to(self, name: str) -> None:
        """Make staging model `name` the live one, atomically for readers. The staging name is
        gone afterwards; writers of the live model write to the new one."""

    @abstractmethod
    def switched(self, name: str) -> bool:
        """Whether staging model `name` was made the live one (no unfinished build of that name
        exists), so a resumed rebuild knows not to switch twice."""

    @abstractmethod
    def building(self, name: str) -> bool:
        """Whether an unfinished build of staging model `name` exists (once it was written to)."""
