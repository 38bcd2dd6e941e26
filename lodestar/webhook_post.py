"""One webhook delivery over HTTP: POST a body to a URL, connecting only to an address the
address rules allow (lodestar.webhook_addresses: the host is resolved and checked here, and the
connection made to the checked address; TLS still verifies the certificate for the host name).
No redirect is followed (a 3xx is a failed delivery: the signature headers go nowhere else) and
no proxy is used. Every failure, whatever raised it, comes back as a reason, never an exception.
"""

from __future__ import annotations

import http.client
import socket
import ssl

from lodestar.webhook_addresses import AddressRefused, AddressRules, IPAddress, target


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to `host` made to one checked address of it."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self.address), self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to `host` made to one checked address of it (the certificate is
    checked against `host`)."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((str(self.address), self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def post(url: str, body: bytes, headers: dict[str, str], rules: AddressRules, timeout: float) -> str:
    """'' once the URL answered 2xx, else why not (a refused address, a 3xx, an error...)."""
    try:
        parts, port = target(url)
        host = parts.hostname or ""
        addresses = rules.resolve(host, port)
    except AddressRefused as err:
        return f"refused: {err}"
    kind = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    error = ""
    for address in addresses:  # the next one only when connecting failed
        connection = kind(host, port, address, timeout)
        try:
            connection.connect()
        except OSError as err:
            error = f"{type(err).__name__}: {err}"
            connection.close()
            continue
        try:
            connection.request("POST", path, body, headers)
            status = connection.getresponse().status
        except Exception as err:  # anything the exchange raises is this delivery's failure
            return f"{type(err).__name__}: {err}"
        finally:
            connection.close()
        if 200 <= status < 300:
            return ""
        return f"HTTP {status} (redirects are not followed)" if 300 <= status < 400 else f"HTTP {status}"
    return error
