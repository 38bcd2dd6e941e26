"""A small Python client of the v3 metadata API, usable inside programs:

    from lodestar.metadata.client import MetadataClient
    client = MetadataClient("http://127.0.0.1:8080", token)
    client.add_tags("default/datasets/customers/field/ssn", "PII")
    client.set_properties("urn:li:dataset:(urn:li:dataPlatform:hive,shop.orders,PROD)", team="sales")
    client.search("PII", target=["field"])

An entity is a URN or a CDAP path below /v3/namespaces/ (`ns/datasets/myds/field/empname`).
Failures raise `ingest.rest.LodestarError` with the server's message (or why the path is wrong).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from ingest.rest import LodestarError, RestClient
from schemas.metadata_entity import EntityError, from_path


class MetadataClient:
    def __init__(self, server: str, token: str | None = None, rest: RestClient | None = None):
        self.rest = rest or RestClient(server, token)

    @staticmethod
    def path(entity: str, what: str = "", item: str | None = None, **query: str | None) -> str:
        """The v3 path of an entity's metadata (`what`: "", "properties" or "tags")."""
        if entity.startswith("urn:li:"):
            base = f"/v3/urns/{quote(entity, safe='')}"
        else:
            try:
                from_path(entity)  # a path the server cannot route says why here
            except EntityError as err:
                raise LodestarError(f"entity {entity!r}: {err}") from None
            base = "/v3/namespaces/" + "/".join(quote(s, safe="") for s in entity.strip("/").split("/"))
        path = f"{base}/metadata" + (f"/{what}" if what else "") + (f"/{quote(item, safe='')}" if item else "")
        params = {k: v for k, v in query.items() if v is not None}
        return f"{path}?{urlencode(params)}" if params else path

    def metadata(self, entity: str, scope: str | None = None) -> list[dict[str, Any]]:
        """CDAP's records, one per scope."""
        return self.rest.call("GET", self.path(entity, scope=scope))

    def tags(self, entity: str, scope: str | None = None) -> list[str]:
        """The tags of one scope; without a scope, those of both in one list, as CDAP's route
        answers (`tags_by_scope` keeps them apart)."""
        return self.rest.call("GET", self.path(entity, "tags", scope=scope))

    def properties(self, entity: str, scope: str | None = None) -> dict[str, str]:
        """The properties of one scope; without a scope, both merged, USER winning over SYSTEM,
        as CDAP's route answers (`properties_by_scope` keeps them apart)."""
        return self.rest.call("GET", self.path(entity, "properties", scope=scope))

    def tags_by_scope(self, entity: str) -> dict[str, list[str]]:
        """{"USER": [...], "SYSTEM": [...]}: each scope's tags."""
        return {r["scope"]: r["tags"] for r in self.metadata(entity)}

    def properties_by_scope(self, entity: str) -> dict[str, dict[str, str]]:
        """{"USER": {...}, "SYSTEM": {...}}: each scope's properties."""
        return {r["scope"]: r["properties"] for r in self.metadata(entity)}

    def add_tags(self, entity: str, *tags: str, scope: str | None = None) -> list[dict[str, Any]]:
        return self.rest.call("POST", self.path(entity, "tags", scope=scope), list(tags))

    def remove_tags(self, entity: str, *tags: str, scope: str | None = None) -> list[dict[str, Any]]:
        """Remove the given tags, or every tag when none is given."""
        answer: list[dict[str, Any]] = []
        for tag in tags or (None,):
            answer = self.rest.call("DELETE", self.path(entity, "tags", tag, scope=scope))
        return answer

    def set_properties(self, entity: str, properties: dict[str, str] | None = None, scope: str | None = None,
                       **more: str) -> list[dict[str, Any]]:
        return self.rest.call("POST", self.path(entity, "properties", scope=scope), {**(properties or {}), **more})

    def remove_properties(self, entity: str, *keys: str, scope: str | None = None) -> list[dict[str, Any]]:
        """Remove the given keys, or every property when none is given."""
        answer: list[dict[str, Any]] = []
        for key in keys or (None,):
            answer = self.rest.call("DELETE", self.path(entity, "properties", key, scope=scope))
        return answer

    def changes(self, entity: str, scope: str | None = None) -> list[dict[str, Any]]:
        """The change records of the entity's tags and properties, oldest first."""
        return self.rest.call("GET", self.path(entity, "changes", scope=scope))

    def remove_all(self, entity: str, scope: str | None = None) -> list[dict[str, Any]]:
        return self.rest.call("DELETE", self.path(entity, scope=scope))

    def search(self, query: str, namespace: str | None = None, target: Sequence[str] = (), scope: str | None = None,
               **options: Any) -> dict[str, Any]:
        """CDAP-syntax search in one namespace, or across all (options: sort, offset, limit,
        cursor, numCursors, showHidden, namespaces)."""
        params: list[tuple[str, str]] = [("query", query)] + [("target", t) for t in target]
        if scope:
            params.append(("scope", scope))
        params += [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items() if v is not None]
        base = f"/v3/namespaces/{quote(namespace, safe='')}/metadata/search" if namespace else "/v3/metadata/search"
        return self.rest.call("GET", f"{base}?{urlencode(params)}")
