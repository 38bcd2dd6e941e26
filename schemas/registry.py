"""The entity registry: entities, their key aspect and aspects, and each aspect's schema.

Two parts make it (`entity-registry.yml` says how they combine):

* DataHub's model, read from the annotated Avro schemas of the pinned `acryl-datahub` package
  (`schemas/datahub_model.py`): every entity its key aspects declare, every aspect, every
  named type, with the annotations Lodestar adds to them;
* Lodestar's own part: `entity-registry.yml` (its entities, its aspects and their kinds, its
  aspects added to DataHub's entities) and `schemas/avro/*.avsc` (one named Avro type per file;
  aspect records carry an `"Aspect": {"name": ...}` annotation). Lodestar's files also hold the
  event envelopes (MCP, MCL, FailedMCP, SystemMetadata and the types they use); where a name is
  in both, Lodestar's file is the one used.

An aspect's validator is compiled on its first use, not when the registry loads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from schemas.datahub_model import DataHubModel, DataHubModelError, load_model
from schemas.jsonform import Check, full_name
from schemas.jsonform_accept import compile_fast_validator
from schemas.urns import URN_CACHE, Urn, UrnError

SCHEMA_DIR = Path(__file__).parent / "avro"
# The repository keeps entity-registry.yml at its top level; a wheel's build copies it into this
# package (setup.py), where an installed Lodestar reads it.
_PACKAGED_REGISTRY = Path(__file__).parent / "entity-registry.yml"
_CHECKOUT_REGISTRY = Path(__file__).parent.parent / "entity-registry.yml"
REGISTRY_FILE = _PACKAGED_REGISTRY if _PACKAGED_REGISTRY.is_file() else _CHECKOUT_REGISTRY


class RegistryError(ValueError):
    """The registry file and the schemas disagree."""


@dataclass(frozen=True)
class AspectSpec:
    """One aspect: its name, kind (versioned | timeseries), Avro schema and where it comes from
    (`datahub` or `lodestar`). `check(value)` validates a value; the first call compiles the
    validator, which then replaces it, so later calls go straight to the compiled one."""

    name: str
    kind: str
    schema_name: str
    schema: Mapping[str, Any] = field(repr=False)
    named: Mapping[str, Any] = field(repr=False, compare=False)
    key_for: str | None = None
    origin: str = "lodestar"
    check: Check = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def compile_then_check(value: Any) -> None:
            check = compile_fast_validator(self.schema, self.named)
            object.__setattr__(self, "check", check)
            check(value)
        object.__setattr__(self, "check", compile_then_check)

    @property
    def is_timeseries(self) -> bool:
        return self.kind == "timeseries"


@dataclass(frozen=True)
class EntitySpec:
    """One entity type: its key aspect (which defines its URN) and the aspects it may have."""

    name: str
    key_aspect: str
    aspects: tuple[str, ...]
    doc: str = ""
    category: str = ""  # DataHub's entityCategory (core, internal, ...); "lodestar" for Lodestar's own


@dataclass(frozen=True)
class KeyPart:
    """One element of an entity's URN: a key-aspect field. `urn_types`: None when the part is
    no URN, else the entity types it may name (empty: any registered entity type)."""

    name: str
    urn_types: tuple[str, ...] | None
    symbols: frozenset[str] | None


def _key_urn_types(key_field: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The entity types a key field's URN may name: its `Urn` annotation's, else (for DataHub's
    generic `Urn`) its relationship's; None when the field is no URN."""
    urn = key_field.get("Urn")
    if urn is None:
        return None
    if not urn:
        relationship = key_field.get("Relationship")
        targets = relationship.get("entityTypes") if isinstance(relationship, dict) else None
        return tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else ()
    return tuple(urn)


class EntityRegistry:
    """Entities and aspects, with validation of URNs against key aspects."""

    def __init__(self, entities: Mapping[str, EntitySpec], aspects: Mapping[str, AspectSpec],
                 named_types: Mapping[str, Any], datahub: DataHubModel | None = None):
        self.entities = dict(entities)
        self.aspects = dict(aspects)
        self.named_types = dict(named_types)
        self.datahub = datahub  # DataHub's part as read from the package (None: a registry without it)
        self._key_parts = {name: self._key_parts_of(spec) for name, spec in self.entities.items()}
        self._by_schema_name = {spec.schema_name: spec for spec in self.aspects.values()}
        self._checked_urn = lru_cache(maxsize=URN_CACHE)(self._check_urn)

    def entity(self, name: str) -> EntitySpec | None:
        return self.entities.get(name)

    def aspect(self, name: str) -> AspectSpec | None:
        return self.aspects.get(name)

    def aspect_for_schema(self, schema_name: str) -> AspectSpec | None:
        """The aspect whose record has this full name (`com.linkedin.pegasus2avro.` accepted)."""
        return self._by_schema_name.get(schema_name.replace(".pegasus2avro.", "."))

    def key_parts(self, entity_type: str) -> tuple[KeyPart, ...]:
        return self._key_parts[entity_type]

    def parse_urn(self, text: str, entity_type: str | None = None) -> Urn:
        """Parse and check a URN against its entity's key; raises UrnError with the reason."""
        urn = self._checked_urn(text) if isinstance(text, str) else Urn.parse(text)
        if entity_type is not None and urn.entity_type != entity_type:
            raise UrnError(f"{text!r} is a {urn.entity_type} URN, not a {entity_type} URN")
        return urn

    def _check_urn(self, text: str) -> Urn:
        urn = Urn.parse(text)
        if urn.entity_type not in self.entities:
            raise UrnError(f"{text!r}: unknown entity type {urn.entity_type!r}")
        parts = self._key_parts[urn.entity_type]
        if len(urn.parts) != len(parts):
            names = ", ".join(p.name for p in parts)
            raise UrnError(
                f"{text!r}: a {urn.entity_type} URN has {len(parts)} part(s) ({names}), found {len(urn.parts)}"
            )
        for part, value in zip(parts, urn.parts, strict=True):
            if part.urn_types is not None:
                inner = self.parse_urn(value)
                if part.urn_types and inner.entity_type not in part.urn_types:
                    raise UrnError(f"{text!r}: {part.name} must be a {' or '.join(part.urn_types)} URN")
            elif part.symbols is not None and value not in part.symbols:
                raise UrnError(f"{text!r}: {part.name} {value!r} is not one of {', '.join(sorted(part.symbols))}")
        return urn

    def key_value(self, urn: Urn) -> dict[str, str]:
        """The key aspect's value for a (validated) URN."""
        return {part.name: value for part, value in zip(self._key_parts[urn.entity_type], urn.parts, strict=True)}

    def _key_parts_of(self, entity: EntitySpec) -> tuple[KeyPart, ...]:
        schema = self.aspects[entity.key_aspect].schema
        parts = []
        for f in schema["fields"]:
            symbols = None
            ftype = f["type"]
            if isinstance(ftype, str) and ftype in self.named_types and self.named_types[ftype]["type"] == "enum":
                symbols = frozenset(self.named_types[ftype]["symbols"])
            urn_types = _key_urn_types(f)
            parts.append(KeyPart(f["name"], urn_types, symbols))
        return tuple(parts)


def _walk_named(schema: Any, namespace: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every named type defined (not just referenced) inside a schema."""
    if isinstance(schema, list):
        for branch in schema:
            yield from _walk_named(branch, namespace)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = full_name(schema, namespace)
            yield name, schema
            ns = name.rpartition(".")[0] or None
            for f in schema.get("fields", ()):
                yield from _walk_named(f["type"], ns)
        elif kind == "array":
            yield from _walk_named(schema["items"], namespace)
        elif kind == "map":
            yield from _walk_named(schema["values"], namespace)
        elif isinstance(kind, dict | list):
            yield from _walk_named(kind, namespace)


def named_types(schema: Any) -> dict[str, dict[str, Any]]:
    """Every named type a schema defines, by full name."""
    return dict(_walk_named(schema, None))


def load_named_types(schema_dir: Path = SCHEMA_DIR) -> dict[str, dict[str, Any]]:
    """All named Avro types of the schema directory, by full name."""
    named: dict[str, dict[str, Any]] = {}
    for path in sorted(schema_dir.glob("*.avsc")):
        raw = json.loads(path.read_text())
        for name, schema in _walk_named(raw, None):
            if name in named and named[name] != schema:
                raise RegistryError(f"{path.name}: type {name} is defined twice with different shapes")
            named[name] = schema
    return named


def load_registry(registry_file: Path = REGISTRY_FILE, schema_dir: Path = SCHEMA_DIR,
                  datahub_dir: Path | None = None) -> EntityRegistry:
    """The registry of DataHub's model (from `datahub_dir`, by default the installed package's
    schemas) combined with Lodestar's (`registry_file` and `schema_dir`)."""
    doc = yaml.safe_load(registry_file.read_text()) or {}
    own = load_named_types(schema_dir)
    entries = doc.get("entities") or []
    try:
        datahub = load_model(datahub_dir, (doc.get("datahub") or {}).get("annotations") or {},
                             frozenset(e["name"] for e in entries if "keyAspect" in e))
    except DataHubModelError as err:
        raise RegistryError(str(err)) from None
    named = {**datahub.named, **own}
    aspects: dict[str, AspectSpec] = {}
    for aspect_name, schema_name in datahub.aspects.items():
        schema = datahub.named[schema_name]
        aspects[aspect_name] = AspectSpec(aspect_name, datahub.kind(aspect_name), schema_name, schema, named,
                                          schema["Aspect"].get("keyForEntity"), "datahub")
    annotated = {s["Aspect"]["name"]: (n, s) for n, s in own.items() if "Aspect" in s}
    for aspect_name, props in (doc.get("aspects") or {}).items():
        if aspect_name in aspects:
            raise RegistryError(f"aspect {aspect_name!r} is DataHub's: 'aspects:' lists Lodestar's own aspects"
                                f" only (DataHub's kinds come from its schemas)")
        if aspect_name not in annotated:
            raise RegistryError(f"aspect {aspect_name!r} has no schema with \"Aspect\": {{\"name\": {aspect_name!r}}}")
        schema_name, schema = annotated[aspect_name]
        kind = (props or {}).get("kind", "versioned")
        if kind not in ("versioned", "timeseries"):
            raise RegistryError(f"aspect {aspect_name!r}: kind must be versioned or timeseries, not {kind!r}")
        schema_kind = "timeseries" if schema["Aspect"].get("type") == "timeseries" else "versioned"
        if schema_kind != kind:
            raise RegistryError(f"aspect {aspect_name!r}: registry says {kind}, schema says {schema_kind}")
        aspects[aspect_name] = AspectSpec(aspect_name, kind, schema_name, schema, named,
                                          schema["Aspect"].get("keyForEntity"))
    entities = {name: EntitySpec(e.name, e.key_aspect, e.aspects, e.doc, e.category)
                for name, e in datahub.entities.items()}
    for entry in entries:
        name, listed = entry["name"], tuple(entry.get("aspects") or ())
        base = entities.get(name)
        if base is not None:  # one of DataHub's entities: Lodestar's aspects are added to its own
            if entry.get("keyAspect", base.key_aspect) != base.key_aspect:
                raise RegistryError(f"entity {name!r} is DataHub's, with the key aspect {base.key_aspect!r}")
            spec = EntitySpec(name, base.key_aspect, (*base.aspects, *(a for a in listed if a not in base.aspects)),
                              entry.get("doc") or base.doc, base.category)
        elif "keyAspect" not in entry:
            raise RegistryError(f"entity {name!r} is not one of DataHub's: it needs a keyAspect")
        else:
            key = entry["keyAspect"]
            spec = EntitySpec(name, key, (key, *(a for a in listed if a != key)), entry.get("doc", ""), "lodestar")
        missing = [a for a in spec.aspects if a not in aspects]
        if missing:
            raise RegistryError(f"entity {name!r} names aspects neither DataHub's nor in 'aspects:': {missing}")
        entities[name] = spec
    return EntityRegistry(entities, aspects, named, datahub)


@cache
def default_registry() -> EntityRegistry:
    """The registry of this installation, loaded once."""
    return load_registry()
