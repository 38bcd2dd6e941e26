"""Talking to a Confluent-compatible schema registry's REST API: Lodestar's own at
`http://<host>:<port>/schema-registry/api`, Confluent's Schema Registry, or Apicurio's
compatible API. `registry_request` is the one HTTP call (GMS's external registry client,
gms/external_registry.py, uses it too); `registry_lookup` reads writer schemas by id
(`GET <url>/schemas/ids/<id>`) for readers of Confluent-framed MCLs that do not run beside GMS
(schemas.mcl_wire.MclReader's `lookup`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from ingest.backends.errors import BackendFailure, BackendUnavailable

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def registry_request(method: str, where: str, headers: Mapping[str, str], timeout: float,
                     payload: Any = None, missing_ok: bool = False) -> dict[str, Any] | None:
    """The JSON object a registry answers to `method where` (None for a 404 when `missing_ok`).
    A registry that does not answer (or answers 5xx) raises BackendUnavailable, one that refuses
    (4xx) or answers nonsense BackendFailure, each naming the URL and the registry's message."""
    data = None if payload is None else json.dumps(payload).encode()
    sent = dict(headers) if data is None else {**headers, "Content-Type": CONTENT_TYPE}
    request = urllib.request.Request(where, data, sent, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the configured URL)
            body = json.load(response)
    except urllib.error.HTTPError as err:
        if err.code == 404 and missing_ok:
            return None
        raise (BackendUnavailable if err.code >= 500 else BackendFailure)(
            f"schema registry {method} {where}: HTTP {err.code}: {_message(err)}") from None
    except (urllib.error.URLError, OSError) as err:
        raise BackendUnavailable(f"schema registry {where} did not answer: {err}") from None
    except ValueError as err:
        raise BackendFailure(f"schema registry {where}: not a JSON answer: {err}") from None
    if not isinstance(body, dict):
        raise BackendFailure(f"schema registry {where}: expected a JSON object, got {type(body).__name__}")
    return body


def registry_lookup(url: str, timeout: float = 10.0) -> Callable[[int], str | None]:
    """`lookup(id)`: the schema text of an id, None when the registry has no such id; raises
    as `registry_request` does, and BackendFailure when the answer holds no schema."""
    base = url.rstrip("/")

    def lookup(schema_id: int) -> str | None:
        where = f"{base}/schemas/ids/{schema_id}"
        body = registry_request("GET", where, {"Accept": CONTENT_TYPE}, timeout, missing_ok=True)
        if body is None:
            return None
        if not isinstance(body.get("schema"), str):
            raise BackendFailure(f"schema registry {where}: the answer holds no schema")
        return body["schema"]
    return lookup


def _message(err: urllib.error.HTTPError) -> str:
    """Confluent's error answer `{"error_code", "message"}`, else the reason."""
    try:
        body = json.loads(err.read() or b"{}")
    except ValueError:
        body = {}
    return str(body.get("message") or err.reason) if isinstance(body, dict) else str(err.reason)
