"""Named fault points for fault-injection tests.

`LODESTAR_CRASH_AT=<name>` makes the process die at that point as abruptly as SIGKILL
would (no cleanup, no flush), so tests can place a crash exactly, e.g. between the
commit of a version and the publication of its MCL. `LODESTAR_FAIL_AT=<name>` makes the
first pass through a fail point raise InjectedFault instead, as a backend that fails once
(a timeout, a lost connection) would.
"""

import os

_failed: set[str] = set()


class InjectedFault(RuntimeError):
    """The failure a fail point raises."""


def crash_point(name: str) -> None:
    if os.environ.get("LODESTAR_CRASH_AT") == name:
        os._exit(137)


def fail_point(name: str) -> None:
    if os.environ.get("LODESTAR_FAIL_AT") == name and name not in _failed:
        _failed.add(name)
        raise InjectedFault(f"injected failure at {name}")
