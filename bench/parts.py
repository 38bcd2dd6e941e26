"""CPU time by part of a run: methods and functions wrapped, for a while, so that each call adds
the CPU seconds it took to a counter under its label (`timed_parts`). The benches' `--parts`
options print those counters; a part's label indented under another's is inside it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import wraps
from typing import Any

Part = tuple[Any, str, str]  # (owner: a class or module, attribute, label)


@contextmanager
def timed_parts(parts: Sequence[Part], spent: Counter[str]) -> Iterator[None]:
    """Meanwhile, the CPU seconds of each call to a part are added to spent[label] (process
    time: run the parts on one thread at a time)."""
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in parts]

    def timed(method: Any, label: str) -> Any:
        @wraps(method)
        def part(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - started
        return part

    for (owner, name, method), (_, _, label) in zip(originals, parts, strict=True):
        setattr(owner, name, timed(method, label))
    try:
        yield
    finally:
        for owner, name, method in originals:
            setattr(owner, name, method)
