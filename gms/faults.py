"""Named crash points for fault-injection tests.

`LODESTAR_CRASH_AT=<name>` makes the process die at that point as abruptly as SIGKILL
would (no cleanup, no flush), so tests can place a crash exactly, e.g. between the
commit of a version and the publication of its MCL.
"""

import os


def crash_point(name: str) -> None:
    if os.environ.get("LODESTAR_CRASH_AT") == name:
        os._exit(137)
