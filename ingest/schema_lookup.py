"""Writer schemas by id from a Confluent-compatible schema registry's REST API
(`GET <url>/schemas/ids/<id>`): Lodestar's own at `http://<host>:<port>/schema-registry/api`,
Confluent's Schema Registry, or Apicurio's compatible API. For readers of Confluent-framed
MCLs that do not run beside GMS (schemas.mcl_wire.MclReader's `lookup`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable

from ingest.backends.errors import BackendFailure, BackendUnavailable


def registry_lookup(url: str, timeout: float = 10.0) -> Callable[[int], str | None]:
    """`lookup(id)`: the schema text of an id, None when the registry has no such id; raises
    BackendUnavailable when the registry does not answer, BackendFailure on a malformed answer."""
    base = url.rstrip("/")

    def lookup(schema_id: int) -> str | None:
        where = f"{base}/schemas/ids/{schema_id}"
        try:
            with urllib.request.urlopen(where, timeout=timeout) as response:  # noqa: S310 (the caller's URL)
                body = json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise (BackendUnavailable if err.code >= 500 else BackendFailure)(
                f"schema registry {where}: HTTP {err.code}") from None
        except (urllib.error.URLError, OSError) as err:
            raise BackendUnavailable(f"schema registry {where} did not answer: {err}") from None
        except ValueError as err:
            raise BackendFailure(f"schema registry {where}: not a JSON answer: {err}") from None
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise BackendFailure(f"schema registry {where}: the answer holds no schema")
        return body["schema"]
    return lookup
