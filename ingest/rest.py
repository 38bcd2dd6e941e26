"""A small synchronous client of GMS's REST API (keep-alive HTTP, bearer token)."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import quote, urlsplit


class LodestarError(Exception):
    """A request that failed: the server's message, or why the server could not be reached."""

    def __init__(self, message: str, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class RestClient:
    """Requests refused with 429 (GMS is applying or indexing behind) are sent again after the
    server's Retry-After, for up to `overload_wait` seconds in all; nothing of them was done.
    `unreachable_hint` is said after "cannot reach Lodestar at ...": where the address came from."""

    def __init__(self, server: str, token: str | None = None, timeout: float = 60.0, overload_wait: float = 300.0,
                 unreachable_hint: str | None = None):
        parts = urlsplit(server if "://" in server else f"http://{server}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LodestarError(f"invalid server address {server!r}")
        self.server = server
        self._conn_args = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        self._https = parts.scheme == "https"
        self._timeout = timeout
        self._token = token
        self._overload_wait = overload_wait
        self._conn: http.client.HTTPConnection | None = None
        self._unreachable_hint = unreachable_hint

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON body); raises LodestarError if the server cannot be reached."""
        payload = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + self._overload_wait
        while True:
            status, decoded, retry_after = self._send(method, path, payload)
            if status != 429 or retry_after is None or time.monotonic() + retry_after > deadline:
                return status, decoded
            time.sleep(retry_after)  # the server asked for it

    def _send(self, method: str, path: str, payload: bytes | None) -> tuple[int, Any, float | None]:
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        for attempt in (1, 2):  # one retry on a dropped keep-alive connection
            conn = self._connection()
            try:
                conn.request(method, path, payload, headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as err:
                self.close()
                if attempt == 2 or isinstance(err, ConnectionRefusedError):
                    hint = f" ({self._unreachable_hint})" if self._unreachable_hint else ""
                    raise LodestarError(f"cannot reach Lodestar at {self.server}: {err}{hint}") from None
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        retry_after = response.getheader("Retry-After")
        return response.status, decoded, float(retry_after) if retry_after and retry_after.isdigit() else None

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200,)) -> Any:
        """The JSON body of a successful request; LodestarError with the server's message otherwise."""
        status, decoded = self.request(method, path, body)
        if status not in ok:
            message = decoded.get("message") if isinstance(decoded, dict) else decoded
            raise LodestarError(f"HTTP {status}: {message}", status, decoded)
        return decoded

    def propose(self, proposals: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST /v1/proposals; one result per proposal (failed proposals are results, not errors)."""
        status, decoded = self.request("POST", "/v1/proposals", {"proposals": proposals})
        if isinstance(decoded, dict) and isinstance(decoded.get("results"), list):
            return decoded["results"]
        message = decoded.get("message") if isinstance(decoded, dict) else decoded
        raise LodestarError(f"HTTP {status}: {message}", status, decoded)

    def entity(self, urn: str) -> dict[str, Any]:
        return self.call("GET", f"/v1/entities/{quote(urn, safe='')}")

    def aspect(self, urn: str, aspect: str, version: int | None = None) -> dict[str, Any]:
        query = f"?version={version}" if version is not None else ""
        return self.call("GET", f"/v1/entities/{quote(urn, safe='')}/aspects/{quote(aspect, safe='')}{query}")

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(*self._conn_args, timeout=self._timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
