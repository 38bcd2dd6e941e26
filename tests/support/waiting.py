"""Awaiting a condition in tests: polled until it holds, failing with what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def await_(condition: Callable[[], T], what: str, timeout: float = 60.0) -> T:
    """condition()'s first truthy value, polled until `timeout` seconds have passed (a deadline
    for failing, generous so that a busy machine is no false alarm; a condition that holds
    returns at once)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s"
        time.sleep(0.02)
    return value
