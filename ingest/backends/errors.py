"""The errors of every backend adapter, whatever its driver (after PEP 249's exception classes).

Each adapter (the aspect stores, the event logs, the read models) translates its driver's
errors into these where its methods return, so the layers above (the HTTP guards, the command
line, the server) know no driver. The translation rules live beside each driver's helpers:
`ingest.backends.sqlite`, `.cassandra`, `.kafka`, `.opensearch`.
"""

from __future__ import annotations


class BackendError(Exception):
    """A backend (database, event log, search index) failed; the message names it and where."""


class BackendUnavailable(BackendError):
    """The backend did not answer, was busy or locked, or timed out: the same call may succeed
    later (HTTP 503 with Retry-After)."""


class BackendFailure(BackendError):
    """The backend answered with an error that retrying does not mend (a statement or request
    it refuses, a damaged database): a fault to look into (HTTP 500)."""
