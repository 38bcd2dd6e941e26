"""CPU-burning neighbour processes, for measuring on a busy machine."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager


def _burn() -> None:
    while True:
        pass


@contextmanager
def cpu_burners(count: int) -> Iterator[None]:
    """`count` processes spinning at full speed while the block runs."""
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(count)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        for burner in burners:
            burner.terminate()
        for burner in burners:
            burner.join()
