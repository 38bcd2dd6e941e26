"""What the Cassandra driver's errors mean for the adapters on it (see ingest.backends.errors),
and which statements it may send twice."""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar

from cassandra import AuthenticationFailed, DriverException, RequestValidationException, UnsupportedOperation, protocol
from cassandra.cluster import NoHostAvailable, Session
from cassandra.connection import ConnectionBusy, ConnectionException
from cassandra.policies import RetryPolicy
from cassandra.query import PreparedStatement, Statement

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


_CONDITIONAL = "lodestar_conditional"  # set on statements that must reach Cassandra at most once
S = TypeVar("S", bound=Statement | PreparedStatement)


def conditional(statement: S) -> S:
    """Mark a statement (prepared, or a batch) as a lightweight transaction, sent at most once
    (`ConditionalWritesSentOnce`); returns it."""
    setattr(statement, _CONDITIONAL, True)
    return statement


def is_conditional(statement: Any) -> bool:
    """Whether a statement, or the prepared statement it binds, is marked `conditional`."""
    return bool(getattr(getattr(statement, "prepared_statement", None) or statement, _CONDITIONAL, False))


class ConditionalWritesSentOnce(RetryPolicy):
    """The driver's default retries, but a lightweight transaction whose request failed in an
    unknown way (its connection closed while it was in flight, as when the node coordinating it
    dies; an overloaded or failing server) is not sent again: it may have been applied, and a
    second attempt would find the first one's rows and answer [applied] = false, a conflict that
    never was. The caller gets the error and treats the outcome as unknown."""

    def on_request_error(self, query: Any, consistency: Any, error: Any, retry_num: int) -> tuple[int, Any]:
        if is_conditional(query):
            return self.RETHROW, None
        return super().on_request_error(query, consistency, error, retry_num)
