"""Principals with tokens and grants, made through the access API as the admin."""

from __future__ import annotations

from collections.abc import Sequence

from tests.support.server import LiveServer


def principal_with_grants(server: LiveServer, name: str, grants: Sequence[tuple[str, Sequence[str]]] = ()) -> str:
    """Create the principal, grant it (resource, privileges) pairs, and return a token of its."""
    admin = server.client()
    admin.call("POST", "/v1/access/principals", {"name": name})
    for resource, privileges in grants:
        admin.call("POST", "/v1/access/grants",
                   {"principal": name, "resource": resource, "privileges": list(privileges)})
    return admin.call("POST", "/v1/access/tokens", {"principal": name})["token"]
