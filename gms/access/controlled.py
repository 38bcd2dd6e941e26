"""The access-controlled entities: what only a principal with ADMIN on the instance may write,
delete, read or list, whichever route it comes through (proposals, deletes, entity and aspect
reads, listings, search, GraphQL, runs, timelines, lineage).

- Whole entity types: Lodestar's principals' tokens, grants and password hashes, webhooks (their URLs may hold
  secrets), the schema registry's schemas and subjects, DataHub's own secret-bearing
  entities (secrets, access tokens, invite tokens, connections), DataHub's policies and the
  security audit log.
- Aspects of other types: a principal's `status` (removed: its tokens stop working) and its
  credentials. The principal itself (`corpuser`) stays ordinary metadata: readable with READ,
  its other aspects writable with WRITE.

Grants on anything below the instance never reach them: they are checked against the
instance alone. The search index files a controlled entity under `ACCESS_RESOURCE` instead of
the instance (`search_resources`), so a reader of the whole instance does not find it; the
readable resources of a principal with ADMIN on the instance hold `ACCESS_RESOURCE`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from schemas.metadata_entity import INSTANCE, resource_chain

#: entity types every aspect of which is access-controlled
ADMIN_ONLY_TYPES: Final = frozenset({
    "accessToken", "accessGrants", "accessCredentials", "webhook", "schemaRegistrySchema", "schemaRegistrySubject",
    "dataHubSecret", "dataHubAccessToken", "inviteToken", "dataHubConnection", "dataHubPolicy", "auditLog",
})
#: aspects of other entity types that are access-controlled (writing and deleting them)
ADMIN_ONLY_ASPECTS: Final = {"corpuser": frozenset({"status", "corpUserCredentials"})}
#: the resource the search index files access-controlled entities under (no grant names it)
ACCESS_RESOURCE: Final = "~access"


def entity_type(urn: str) -> str:
    """The entity type a URN names (`urn:li:<type>:...`), without parsing the rest."""
    return urn.removeprefix("urn:li:").partition(":")[0]


def is_controlled(urn: str) -> bool:
    """Whether the entity of `urn` is access-controlled as a whole."""
    return entity_type(urn) in ADMIN_ONLY_TYPES


def controls(entity_type_: str, aspects: Iterable[str | None]) -> bool:
    """Whether changing any of these aspects of an entity of this type needs ADMIN on the instance."""
    if entity_type_ in ADMIN_ONLY_TYPES:
        return True
    guarded = ADMIN_ONLY_ASPECTS.get(entity_type_)
    return guarded is not None and any(aspect in guarded for aspect in aspects)


def checked_against(urn: str) -> list[str]:
    """The resources whose grants decide about `urn`, nearest first: the instance alone for an
    access-controlled entity, else its resource chain."""
    return [INSTANCE] if is_controlled(urn) else resource_chain(urn)


def search_resources(urn: str) -> list[str]:
    """The resources the search index files an entity under (what readers' conditions match)."""
    return [ACCESS_RESOURCE] if is_controlled(urn) else resource_chain(urn)
