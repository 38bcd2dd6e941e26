"""An external Confluent-compatible schema registry, used instead of Lodestar's own when
`kafka.schema_registry_url` is set (lodestar/config.py): Confluent's Schema Registry, Apicurio's
compatible API, or another Lodestar's `/schema-registry/api`.

`ExternalSchemaRegistry` answers what GMS asks of its registry (gms/schema_registry.py): a
schema by id (`GET /schemas/ids/{id}`, cached, as ids never change) and registering one under
a subject (`POST /subjects/{subject}/versions`, which gives the id, the same again for a schema
registered before). Credentials: `user:password@` in the URL is sent as Basic authentication,
`token` as a Bearer token (a Lodestar registry's writes need one with WRITE).

A registry that does not answer (or answers 5xx) raises BackendUnavailable, one that refuses
(4xx) or answers nonsense BackendFailure, each naming the URL and the registry's message.
"""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any
from urllib.parse import quote

from gms.schema_registry import RegisteredSchema
from ingest.backends.errors import BackendFailure
from ingest.schema_lookup import CONTENT_TYPE, registry_request


class ExternalSchemaRegistry:
    """The registry at `url` (its API's root, e.g. `http://registry:8081`)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 10.0):
        parts = urllib.parse.urlsplit(url)
        self.url = urllib.parse.urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port
                                                                                   else ""))).rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": CONTENT_TYPE}
        if parts.username is not None:
            user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
        elif token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._by_id: dict[int, RegisteredSchema] = {}

    def schema(self, schema_id: int) -> RegisteredSchema | None:
        """The schema of an id (None: the registry has none)."""
        found = self._by_id.get(schema_id)
        if found is None:
            body = self._call("GET", f"/schemas/ids/{schema_id}", missing_ok=True)
            if body is None:
                return None
            if not isinstance(body.get("schema"), str):
                raise BackendFailure(f"schema registry {self.url}: the answer for id {schema_id} holds no schema")
            found = self._by_id[schema_id] = RegisteredSchema(schema_id, body["schema"],
                                                              body.get("schemaType") or "AVRO")
        return found

    def register(self, actor: str, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """The schema's id under `subject`, registered if new (`actor` is Lodestar's: the registry
        knows only the credentials)."""
        payload: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            payload["schemaType"] = schema_type
        body = self._call("POST", f"/subjects/{quote(subject, safe='')}/versions", payload)
        if body is None or not isinstance(body.get("id"), int):
            raise BackendFailure(f"schema registry {self.url}: registering under {subject} gave no id")
        return body["id"]

    def _call(self, method: str, path: str, payload: Any = None, missing_ok: bool = False) -> dict[str, Any] | None:
        return registry_request(method, f"{self.url}{path}", self._headers, self.timeout, payload, missing_ok)

