"""What the Cassandra driver's errors mean for the adapters on it (see ingest.backends.errors)."""

from __future__ import annotations

from types import TracebackType

from cassandra import AuthenticationFailed, DriverException, RequestValidationException, UnsupportedOperation, protocol
from cassandra.cluster import NoHostAvailable, Session
from cassandra.connection import ConnectionBusy, ConnectionException

from ingest.backends.errors import BackendError, BackendFailure, BackendUnavailable

#: What the driver raises (a server's error answers, the driver's own, a socket's).
DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    DriverException, NoHostAvailable, ConnectionException, ConnectionBusy, protocol.ErrorMessage, OSError)
#: Statements or clients Cassandra refuses, however often they are sent.
_REFUSED: tuple[type[BaseException], ...] = (
    RequestValidationException, protocol.RequestValidationException, UnsupportedOperation, AuthenticationFailed,
    protocol.ProtocolException, protocol.BadCredentials)


def backend_error(err: BaseException, where: str) -> BackendError:
    """A driver error as a backend error: BackendFailure for what Cassandra refuses (an invalid or
    unauthorized statement, an unsupported operation), else BackendUnavailable (no host answers,
    timeouts, replicas unavailable, an overloaded or bootstrapping node, a connection lost)."""
    kind = BackendFailure if isinstance(err, _REFUSED) else BackendUnavailable
    return kind(f"Cassandra at {where}: {type(err).__name__}: {err}")


def contact_points(session: Session) -> str:
    """The session's contact points, `host:port`, for messages."""
    cluster = session.cluster
    return ", ".join(f"{host}:{cluster.port}" for host in cluster.contact_points)


class translated:  # lowercase: used as a function, `with translated(where):`
    """Within it, the driver's errors are raised as backend errors (`backend_error`) naming
    `where`; for calls made once per operation (on paths run per statement, a try/except)."""

    __slots__ = ("where",)

    def __init__(self, where: str):
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if err is not None and isinstance(err, DRIVER_ERRORS):
            raise backend_error(err, self.where) from err
