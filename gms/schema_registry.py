"""The schema registry behind `/schema-registry/api/` (Confluent's REST API), kept as metadata in
the aspect store, so every GMS instance on one store answers the same ids.

- A schema is `urn:li:schemaRegistrySchema:<id>` whose `schemaRegistrySchemaInfo` holds the
  schema as compact JSON and its fingerprint (SHA-256 of type and schema). Its id is the
  fingerprint's first 31 bits (0 becomes 1); when that id holds another schema, the next id is
  tried. The info is written with CREATE, which fails when the aspect exists, so two instances
  registering at once cannot give one id to two schemas: the loser reads what is there and
  either finds its own schema (same id) or probes on. Schemas are never deleted, so a probe
  ends at the first free id.
- A subject is `urn:li:schemaRegistrySubject:<name>` whose `schemaRegistrySubjectVersions`
  lists its versions (version, schema id); a registration appends one with `If-Version-Match`
  on the aspect's version, retried on a conflict, so versions are never handed out twice.
- The subject `__GLOBAL` holds the global `schemaRegistryConfig` and the list of subject names
  (`schemaRegistrySubjects`), appended the same way by a subject's first registration.
- Compatibility levels are stored and answered, not enforced: a registration is never refused
  for compatibility.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastavro.schema import parse_schema

from gms.errors import ProposalFailed
from ingest.proposal import Proposal
from schemas.confluent import MAX_ID, compact, first_id, registry_fingerprint

SCHEMA_PREFIX = "urn:li:schemaRegistrySchema:"
SUBJECT_PREFIX = "urn:li:schemaRegistrySubject:"
GLOBAL = "__GLOBAL"
INFO, VERSIONS, CONFIG, SUBJECTS = ("schemaRegistrySchemaInfo", "schemaRegistrySubjectVersions",
                                    "schemaRegistryConfig", "schemaRegistrySubjects")
DEFAULT_COMPATIBILITY = "BACKWARD"
COMPATIBILITY_LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE", "NONE")
_SUBJECT = re.compile(r"[A-Za-z0-9._-]{1,255}")
_RETRIES = 20


class RegistryError(Exception):
    """A request the registry refuses, with Confluent's HTTP status and error code."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class RegisteredSchema:
    id: int
    schema: str
    schema_type: str = "AVRO"


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def canonical(schema: str, schema_type: str = "AVRO") -> tuple[str, str]:
    """(compact schema, fingerprint) of a schema string; RegistryError 42201 if it is no valid Avro."""
    if schema_type != "AVRO":
        raise RegistryError(422, 42201, f"Invalid schema: schemaType {schema_type} is not served (AVRO only)")
    try:
        parsed = json.loads(schema)
        parse_schema(parsed, _write_hint=False)
    except Exception as err:  # json and fastavro raise several types
        raise RegistryError(422, 42201, f"Invalid schema: {err}") from None
    text = compact(parsed)
    return text, registry_fingerprint(text, schema_type)


class SchemaRegistry:
    """Register and look up schemas for `actor` through `apply` (Gms.apply with authorization) and
    `read` (the store's latest value of an aspect, or None)."""

    def __init__(self, apply: Callable[[list[Proposal], str], list[Any]],
                 read: Callable[[str, str], Any]):
        self._apply = apply
        self._read = read
        self._by_id: dict[int, RegisteredSchema] = {}  # schemas never change once written

    # reads

    def schema(self, schema_id: int) -> RegisteredSchema | None:
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        info = self._read(f"{SCHEMA_PREFIX}{schema_id}", INFO)
        if info is None:
            return None
        found = RegisteredSchema(schema_id, info["schema"], info.get("schemaType") or "AVRO")
        self._by_id[schema_id] = found
        return found

    def subjects(self) -> list[str]:
        value = self._read(SUBJECT_PREFIX + GLOBAL, SUBJECTS)
        return [name for name in (value or {}).get("subjects", []) if self.versions(name)]

    def versions(self, subject: str) -> list[dict[str, int]]:
        """[{version, id}] of a subject, oldest first ([] if it has none)."""
        if not _SUBJECT.fullmatch(subject) or subject == GLOBAL:
            return []
        value = self._read(SUBJECT_PREFIX + subject, VERSIONS)
        return list((value or {}).get("versions", []))

    def version(self, subject: str, version: str) -> tuple[int, RegisteredSchema]:
        """(version number, schema) of `version` ("latest", "-1" or a number) of a subject."""
        versions = self.versions(subject)
        if not versions:
            raise subject_not_found(subject)
        if version in ("latest", "-1"):
            entry = versions[-1]
        else:
            try:
                number = int(version)
            except ValueError:
                raise RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. "
                                    "Allowed values are between [1, 2^31-1] and the string \"latest\"") from None
            if number < 1:
                raise RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. "
                                    "Allowed values are between [1, 2^31-1] and the string \"latest\"")
            matching = [v for v in versions if v["version"] == number]
            if not matching:
                raise RegistryError(404, 40402, f"Version {number} not found.")
            entry = matching[0]
        found = self.schema(entry["id"])
        if found is None:  # a version names a schema written before it: only a damaged store lacks it
            raise RegistryError(404, 40403, f"Schema {entry['id']} not found")
        return entry["version"], found

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO") -> tuple[int, RegisteredSchema]:
        """(version, schema) under which the subject holds this schema."""
        versions = self.versions(subject)
        if not versions:
            raise subject_not_found(subject)
        schema_id = self.find(schema, schema_type)
        for entry in versions:
            if entry["id"] == schema_id:
                found = self.schema(schema_id)
                assert found is not None
                return entry["version"], found
        raise RegistryError(404, 40403, "Schema not found")

    def find(self, schema: str, schema_type: str = "AVRO") -> int | None:
        """The id of a registered schema, or None."""
        schema_id = self.planned_id(schema, schema_type)
        return schema_id if self._read(f"{SCHEMA_PREFIX}{schema_id}", INFO) is not None else None

    def planned_id(self, schema: str, schema_type: str = "AVRO") -> int:
        """The id a registration of the schema gets as the store is now: its own if registered,
        else the first free id of its probe."""
        _, fingerprint = canonical(schema, schema_type)
        schema_id = first_id(fingerprint)
        while (info := self._read(f"{SCHEMA_PREFIX}{schema_id}", INFO)) is not None \
                and info.get("fingerprint") != fingerprint:
            schema_id = schema_id % MAX_ID + 1
        return schema_id

    def compatibility(self, subject: str | None) -> str | None:
        """A subject's level (None: it has none of its own), or the global one (default BACKWARD)."""
        value = self._read(SUBJECT_PREFIX + (subject or GLOBAL), CONFIG)
        if value is None:
            return None if subject else DEFAULT_COMPATIBILITY
        return value["compatibility"]

    # writes

    def register(self, actor: str, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """The schema's id, registering it (and a new version of the subject) when new to the subject."""
        _check_subject(subject)
        schema_id = self._schema_id(actor, schema, schema_type)
        for _ in range(_RETRIES):
            at, current = self._row(SUBJECT_PREFIX + subject, VERSIONS)
            versions = list((current or {}).get("versions", []))
            if any(entry["id"] == schema_id for entry in versions):
                break  # (listed again below: a registration cut short may have missed the list)
            number = max((entry["version"] for entry in versions), default=0) + 1
            if self._conditional(actor, subject, VERSIONS, at, {"versions": [*versions, {"version": number,
                                                                                           "id": schema_id}]}):
                break
        else:
            raise RegistryError(409, 40901, f"Subject '{subject}': too many concurrent registrations, try again")
        self._add_subject(actor, subject)
        return schema_id

    def set_compatibility(self, actor: str, subject: str | None, level: Any) -> str:
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError(422, 42203, f"Invalid compatibility level {level!r}: one of "
                                f"{', '.join(COMPATIBILITY_LEVELS)}")
        if subject is not None:
            _check_subject(subject)
        self._write(actor, Proposal("schemaRegistrySubject", SUBJECT_PREFIX + (subject or GLOBAL), "UPSERT", CONFIG,
                                    {"compatibility": level.upper()}))
        return level.upper()

    def _schema_id(self, actor: str, schema: str, schema_type: str) -> int:
        compact, fingerprint = canonical(schema, schema_type)
        schema_id = first_id(fingerprint)
        for _ in range(10_000):
            urn = f"{SCHEMA_PREFIX}{schema_id}"
            info = self._read(urn, INFO)
            if info is None:
                (result,) = self._apply([Proposal("schemaRegistrySchema", urn, "CREATE", INFO, {
                    "schema": compact, "schemaType": schema_type, "fingerprint": fingerprint})], actor)
                failure = result.failure
                if failure is None:
                    return schema_id
                if failure.code != "aspect_exists":
                    raise failure
                info = self._read(urn, INFO)  # another instance took the id meanwhile
            if info is not None and info.get("fingerprint") == fingerprint:
                return schema_id
            schema_id = schema_id % MAX_ID + 1
        raise RegistryError(500, 50001, "no free schema id found")

    def _add_subject(self, actor: str, subject: str) -> None:
        for _ in range(_RETRIES):
            at, current = self._row(SUBJECT_PREFIX + GLOBAL, SUBJECTS)
            names = list((current or {}).get("subjects", []))
            if subject in names or self._conditional(actor, GLOBAL, SUBJECTS, at, {"subjects": [*names, subject]}):
                return
        raise RegistryError(409, 40901, f"Subject '{subject}': too many concurrent registrations, try again")

    def _conditional(self, actor: str, subject: str, aspect: str, version: int, value: dict[str, Any]) -> bool:
        """Write the aspect if it is still at `version` (-1: absent); False: someone else wrote first."""
        urn = SUBJECT_PREFIX + subject
        (result,) = self._apply([Proposal("schemaRegistrySubject", urn, "UPSERT", aspect, value,
                                          headers={"If-Version-Match": str(version)})], actor)
        if result.failure is None:
            return True
        if result.failure.code == "precondition_failed":
            return False
        raise result.failure

    def _row(self, urn: str, aspect: str) -> tuple[int, Any]:
        """(version, value) of an aspect as read now; (-1, None) when it is absent."""
        found = self._read(urn, aspect, True)
        return (-1, None) if found is None else found

    def _write(self, actor: str, proposal: Proposal) -> None:
        (result,) = self._apply([proposal], actor)
        if result.failure is not None:
            raise result.failure


def _check_subject(subject: str) -> None:
    if subject == GLOBAL or not _SUBJECT.fullmatch(subject):
        raise RegistryError(422, 42208, f"Invalid subject {subject!r}: up to 255 letters, digits, '.', '_', '-'"
                            f" (not {GLOBAL})")


def store_reader(store: Any) -> Callable[..., Any]:
    """`read(urn, aspect, versioned=False)` over an aspect store: the latest live value, or with
    `versioned` (version, value) of one read (None when absent or deleted)."""
    def read(urn: str, aspect: str, versioned: bool = False) -> Any:
        row = store.get(urn, aspect)
        if row is None or not row.exists:
            return None
        return (row.version, row.value) if versioned else row.value
    return read


def schema_lookup(store: Any) -> Callable[[int], str | None]:
    """`lookup(id)`: a registered schema's text read from an aspect store (None: no such id), for
    readers of Confluent-framed records that run apart from GMS (schemas.mcl_wire.MclReader)."""
    read = store_reader(store)

    def lookup(schema_id: int) -> str | None:
        info = read(f"{SCHEMA_PREFIX}{schema_id}", INFO)
        return None if info is None else info["schema"]
    return lookup


__all__ = ["ProposalFailed", "RegisteredSchema", "RegistryError", "SchemaRegistry", "schema_lookup", "store_reader"]
