"""What OpenSearch's errors mean for the adapters on it (see ingest.backends.errors)."""

from __future__ import annotations

from typing import Any

from opensearchpy import Transport
from opensearchpy.exceptions import ConnectionError as NoConnection

from ingest.backends.errors import BackendUnavailable


class TranslatingTransport(Transport):
    """The client's transport (`OpenSearch(..., transport_class=TranslatingTransport)`): a request
    OpenSearch does not answer (no connection, a timeout, after the client's own retries) raises
    BackendUnavailable. An answer, whatever its status, stays the client's error for the adapters
    to read (404 no such index, 400 an index already made, 503 a shard gone during a search)."""

    def __init__(self, hosts: Any, *args: Any, **kwargs: Any):
        super().__init__(hosts, *args, **kwargs)
        self.where = ", ".join(f"{host.get('host')}:{host.get('port')}" if isinstance(host, dict) else str(host)
                               for host in hosts or ())

    def perform_request(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().perform_request(*args, **kwargs)
        except NoConnection as err:
            raise BackendUnavailable(f"OpenSearch at {self.where} does not answer: {err}") from err
