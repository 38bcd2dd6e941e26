"""Tags and properties of metadata entities, per scope, read from the aspect store and written
as MCPs (USER scope: `userScopeMetadata`, SYSTEM scope: `systemScopeMetadata`).

Each change reads the scope's aspect, computes the new value and proposes it with
`If-Version-Match` on the version it read, so concurrent changes never lose one another (a
loser reads again). A change that changes nothing writes nothing.

Which entities exist: those with an aspect in the store; a namespace (`urn:li:container:<ns>`)
whenever its name is a valid namespace name (letters, digits, `_`), so its metadata and its
external tables (`ns/database/db/table/t`) need no namespace entity first (the first write
creates it); an application without a version when it, or one of its versions, exists.

Versioned applications: metadata given to an application without a version goes to the
application and to each of its existing versions; with a version, to that version only. The
store cannot list URNs by prefix, so the versions are found in the search index by an exact
term (each version's resource chain holds the unversioned application's URN: see
search/cdap.py), every one confirmed live in the store. The v3 routes first wait until the
index holds every MCL published before the request (`needs_index`), so a version written
before the request is never missed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gms.access import ADMIN, READ, REMOVE, WRITE
from gms.errors import ProposalFailed
from gms.service import Gms
from ingest.proposal import Proposal
from lodestar.metadata.changes import records_of_history
from lodestar.metadata.system import DERIVED_KEYS, derived_properties
from lodestar.metadata.validation import DEFAULT_MAX_LENGTH, InvalidMetadata, check_properties, check_tags
from mcl_processor.search import SearchIndex
from mcl_processor.search.cdap import RESOURCE, TYPE, All, system
from schemas.metadata_entity import MetadataEntity, from_urn, to_urn
from schemas.urns import Urn

SCOPES = ("USER", "SYSTEM")
NAMESPACE_NAME = re.compile(r"[A-Za-z0-9_]+")  # CDAP's namespace ids
_PAGE = 1000
SCOPE_ASPECTS = {"USER": "userScopeMetadata", "SYSTEM": "systemScopeMetadata"}
MAX_ATTEMPTS = 5


class NotFound(LookupError):
    """The entity (or, for a custom entity, the real entity it belongs to) does not exist."""


class WriteFailed(Exception):
    """A proposal that was refused; carries its failure."""

    def __init__(self, failure: ProposalFailed):
        super().__init__(failure.message)
        self.failure = failure


def parse_scope(text: str | None) -> str | None:
    """USER or SYSTEM, case-insensitively; None for no scope. Raises InvalidMetadata."""
    if text is None or text == "":
        return None
    if text.upper() not in SCOPES:
        raise InvalidMetadata(f"scope must be USER or SYSTEM (any case), not {text!r}")
    return text.upper()


@dataclass
class MetadataRecord:
    """The metadata of one entity in one scope (CDAP's MetadataRecord)."""

    entity: MetadataEntity
    scope: str
    properties: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"metadataEntity": self.entity.to_json(), "scope": self.scope,
                "properties": self.properties, "tags": self.tags}


def privileges_for(scope: str | None, privileges: frozenset[str]) -> frozenset[str]:
    """What a request on metadata needs: `privileges` (READ to get, WRITE to add, WRITE or
    ADMIN to remove), but ADMIN to add or remove SYSTEM metadata, which is the platform's and
    its programs' (so a principal that may write an entity's USER metadata may not write its
    SYSTEM metadata without ADMIN on it or above it)."""
    return ADMIN if scope == "SYSTEM" and privileges != READ else privileges


def real_entity(urn: str) -> str | None:
    """The URN of the platform entity a URN's metadata belongs to: a field's dataset, a custom
    entity's nearest real parent, else the URN itself; None for a custom entity of the instance."""
    parsed = Urn.parse(urn)
    if parsed.entity_type == "schemaField":
        return real_entity(parsed.parts[0])
    if parsed.entity_type == "customEntity":
        return None if parsed.parts[0] == "instance" else real_entity(parsed.parts[0])
    return urn


Change = Callable[[dict[str, str], list[str]], tuple[dict[str, str], list[str]]]


class MetadataService:
    """Get, add and remove tags and properties; `search` (optional) lists application versions."""

    def __init__(self, gms: Gms, max_length: int = DEFAULT_MAX_LENGTH, search: SearchIndex | None = None):
        self.gms = gms
        self.max_length = max_length
        self.search = search

    # -- entities ---------------------------------------------------------------------------

    def hint(self, urn: str) -> str | None:
        """What a URN does not say: a program's type, "stream" for a stream."""
        kind = urn.removeprefix("urn:li:").partition(":")[0]
        if kind == "dataJob":
            row = self.gms.store.get(urn, "dataJobInfo")
            job_type = row.value.get("type") if row is not None and row.exists else None
            if isinstance(job_type, dict):  # a union in DataHub's JSON: {"string": "mapreduce"}
                job_type = next(iter(job_type.values()), None)
            return str(job_type).lower() if job_type else None
        if kind == "dataset":
            row = self.gms.store.get(urn, "subTypes")
            names = (row.value or {}).get("typeNames", []) if row is not None and row.exists else []
            return "stream" if any(str(n).lower() == "stream" for n in names) else None
        return None

    def entity_of(self, urn: str) -> MetadataEntity:
        return from_urn(urn, self.hint)

    def require(self, entity: MetadataEntity) -> str:
        """The entity's URN; raises NotFound unless its real entity exists (see the module
        docstring), InvalidMetadata for a namespace whose name is not a valid one."""
        urn = to_urn(entity)
        real = real_entity(urn)
        if real is None or self.gms.store.entity(real):
            return urn
        parsed = Urn.parse(real)
        if parsed.entity_type == "container" and entity.get("namespace") == parsed.parts[0]:
            if not NAMESPACE_NAME.fullmatch(parsed.parts[0]):
                raise InvalidMetadata(f"namespace {parsed.parts[0]!r}: a namespace name holds letters, digits"
                                      " and _ only")
            return urn
        if real == urn and self.unversioned_application(entity) and self.versions(urn):
            return urn
        raise NotFound(f"entity {entity} ({urn}) not found" if real == urn
                       else f"entity {real}, which {entity} belongs to, not found")

    @staticmethod
    def unversioned_application(entity: MetadataEntity) -> bool:
        return entity.type == "application" and entity.get("version") is None and to_urn(entity).startswith(
            "urn:li:dataFlow:")

    def needs_index(self, entity: MetadataEntity, writes: bool) -> bool:
        """Whether a request on the entity reads the application versions from the search index
        (a write to an application without a version, or a read of one that exists only in its
        versions): the caller should let the index catch up with the event log first."""
        if self.search is None or not self.unversioned_application(entity):
            return False
        return writes or not self.gms.store.entity(to_urn(entity))

    def versions(self, app_urn: str) -> list[str]:
        """The URNs of the live versions of an application without a version (see the module
        docstring), sorted."""
        if self.search is None:
            return []
        parts = Urn.parse(app_urn).parts
        version = re.compile(re.escape(f"urn:li:dataFlow:({parts[0]},{parts[1]}@") + r"[^,]+"
                             + re.escape(f",{parts[2]})"))
        expr = All((system(TYPE, "application"), system(RESOURCE, app_urn)))
        found: list[str] = []
        start = 0
        while True:
            page = self.search.select(expr, None, start, _PAGE, "urn")
            found += [hit.urn for hit in page.hits if version.fullmatch(hit.urn)]
            start += len(page.hits)
            if not page.hits or start >= page.total:
                break
        return sorted(urn for urn in found if self.gms.store.entity(urn))

    def targets(self, entity: MetadataEntity, urn: str) -> list[str]:
        """Where a change goes: the URN, and for an application without a version, its versions."""
        if not self.unversioned_application(entity):
            return [urn]
        return [urn, *self.versions(urn)]

    # -- reads ----------------------------------------------------------------------------------

    def records(self, entity: MetadataEntity, scope: str | None = None, urn: str | None = None
                ) -> list[MetadataRecord]:
        """The entity's metadata, one record per scope (both, or the one asked for); given its
        URN (a search hit), the entity is not checked to exist."""
        urn = urn or self.require(entity)
        rows = self.gms.store.entity(urn)
        by_name = {row.aspect: row.value for row in rows}
        records = []
        for name in (scope,) if scope else SCOPES:
            stored = by_name.get(SCOPE_ASPECTS[name]) or {}
            record = MetadataRecord(entity, name, dict(stored.get("properties") or {}), list(stored.get("tags") or []))
            if name == "SYSTEM":
                key_aspect = self.gms.registry.entity(Urn.parse(urn).entity_type).key_aspect  # type: ignore[union-attr]
                record.properties.update(derived_properties(entity, rows, key_aspect))
            records.append(record)
        return records

    def creation_time(self, urn: str) -> int:
        """When the entity was first written (ms), from its key aspect; 0 if unknown."""
        spec = self.gms.registry.entity(Urn.parse(urn).entity_type)
        row = self.gms.store.get(urn, spec.key_aspect) if spec is not None else None
        return int(((row.system_metadata.get("aspectCreated") or {}).get("time") or 0) if row is not None else 0)

    def changes(self, entity: MetadataEntity, scope: str | None = None) -> list[dict[str, Any]]:
        """CDAP change records of the entity's tags and properties, oldest first (see changes.py)."""
        urn = self.require(entity)
        records = [record for name in ((scope,) if scope else SCOPES)
                   for record in records_of_history(urn, SCOPE_ASPECTS[name],
                                                    self.gms.store.history(urn, SCOPE_ASPECTS[name]), self.hint)]
        return sorted(records, key=lambda r: r["updateTime"])

    # -- writes ---------------------------------------------------------------------------------

    def add_tags(self, entity: MetadataEntity, scope: str, tags: Iterable[Any], actor: str) -> None:
        new = check_tags(tags, self.max_length)
        self._change(entity, scope, actor, WRITE, lambda props, old: (
            props, old + [t for t in dict.fromkeys(new) if t not in old]))

    def remove_tags(self, entity: MetadataEntity, scope: str, tags: Sequence[str] | None, actor: str) -> None:
        """Remove the given tags, or all with None."""
        gone = set(tags or ())
        self._change(entity, scope, actor, REMOVE, lambda props, old: (
            props, [t for t in old if tags is not None and t not in gone]))

    def add_properties(self, entity: MetadataEntity, scope: str, properties: Any, actor: str) -> None:
        if not isinstance(properties, dict):
            raise InvalidMetadata("properties must be a JSON object of key: value strings")
        new = check_properties(properties, self.max_length)
        if scope == "SYSTEM" and (derived := sorted(DERIVED_KEYS & set(new))):
            raise InvalidMetadata(f"property {derived[0]!r} is kept by the platform in SYSTEM scope")
        self._change(entity, scope, actor, WRITE, lambda props, old: ({**props, **new}, old))

    def remove_properties(self, entity: MetadataEntity, scope: str, keys: Sequence[str] | None, actor: str) -> None:
        """Remove the given property keys, or all with None."""
        gone = set(keys or ())
        self._change(entity, scope, actor, REMOVE, lambda props, old: (
            {k: v for k, v in props.items() if keys is not None and k not in gone}, old))

    def remove_all(self, entity: MetadataEntity, scope: str, actor: str) -> None:
        self._change(entity, scope, actor, REMOVE, lambda props, old: ({}, []))

    def _change(self, entity: MetadataEntity, scope: str, actor: str, privileges: frozenset[str],
                change: Change) -> None:
        """Apply `change` to the scope's tags and properties as `actor`, who needs one of
        `privileges` (CDAP: WRITE to add, WRITE or ADMIN to remove) in USER scope, and ADMIN in
        SYSTEM scope (`privileges_for`)."""
        urn = self.require(entity)
        for target in self.targets(entity, urn):
            self._change_one(target, SCOPE_ASPECTS[scope], actor, privileges_for(scope, privileges), change)

    def _change_one(self, urn: str, aspect: str, actor: str, privileges: frozenset[str], change: Change) -> None:
        entity_type = Urn.parse(urn).entity_type
        for _ in range(MAX_ATTEMPTS):
            row = self.gms.store.get(urn, aspect)
            live = row if row is not None and row.exists else None
            old = live.value if live else {}
            props, tags = dict(old.get("properties") or {}), list(old.get("tags") or [])
            new_props, new_tags = change(props, tags)
            if (new_props, new_tags) == (props, tags):
                return
            proposal = Proposal(entity_type, urn, "UPSERT", aspect, {"properties": new_props, "tags": new_tags},
                                headers={"If-Version-Match": str(live.version if live else -1)})
            (result,) = self.gms.apply([proposal], actor, authorize=True, privileges=privileges)
            if result.failure is None:
                return
            if result.failure.code != "precondition_failed":
                raise WriteFailed(result.failure)
        raise WriteFailed(ProposalFailed("conflict", f"{aspect} of {urn} kept changing under concurrent writers;"
                                         " retry", 409))
