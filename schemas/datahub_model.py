"""DataHub's part of the model, read from the annotated Avro schemas of the installed
`acryl-datahub` package (`datahub/metadata/schemas/*.avsc`), whose version pyproject.toml pins.

Nothing of DataHub's Python code is imported: the package is located with
`importlib.util.find_spec("datahub")`, which finds a top-level package without running its
`__init__.py`, and its schema files are plain JSON.

What is read:

* every file whose top-level record is an aspect (`"Aspect": {"name": ...}`); the event
  envelopes (MCE, MCP, MCL, platform events) and query types are not aspects and are skipped;
* entities from the key aspects: `Aspect.keyForEntity` names the entity, `entityAspects` lists
  its aspects, `entityCategory` and `entityDoc` describe it;
* an aspect's kind from `Aspect.type`: `timeseries`, else versioned;
* every named type (records, enums, fixed), once, by its full name. DataHub's Python package
  names them `com.linkedin.pegasus2avro.<...>`; they are read as `com.linkedin.<...>`, the
  names DataHub's JSON uses (`{"com.linkedin.schema.StringType": {}}`). Each file repeats the
  types it uses inline; the model keeps one definition per name and refers to it by name
  everywhere else, so a definition annotated once is annotated wherever it is used.

Two readings adapt DataHub's annotations to Lodestar's:

* `"Urn": "<class>"` (DataHub's Java URN class of a string field) becomes the list of entity
  types the field may name, Lodestar's form: `DatasetUrn` -> `["dataset"]`, `CorpuserUrn` ->
  `["corpuser"]`; the generic `Urn` (and a class naming no entity) -> `[]`, any URN.
  `UrnValidation.entityTypes`, which DataHub enforces on ingest, narrows it when given;
* annotations Lodestar adds to DataHub's types (`entity-registry.yml`, `datahub.annotations`)
  are merged in: a type's own keys and, under `fields`, each field's (dicts merge key by key).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import orjson

DISTRIBUTION = "acryl-datahub"
PACKAGE = "datahub"
SCHEMA_FOLDER = ("metadata", "schemas")  # inside the package
PEGASUS = "com.linkedin.pegasus2avro."
LINKEDIN = "com.linkedin."
_PEGASUS_BYTES, _LINKEDIN_BYTES = PEGASUS.encode(), LINKEDIN.encode()
_NAMED_KINDS = ("record", "error", "enum", "fixed")
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "string", "bytes"})


class DataHubModelError(ValueError):
    """DataHub's schemas cannot be read, or Lodestar's additions do not fit them."""


@dataclass(frozen=True)
class DataHubEntity:
    """An entity type as its key aspect declares it."""

    name: str
    key_aspect: str
    aspects: tuple[str, ...]  # the key aspect first, then `entityAspects` in DataHub's order
    category: str
    doc: str


@dataclass(frozen=True)
class DataHubModel:
    """DataHub's entities, aspects (name -> full name of its record) and named types."""

    directory: Path
    entities: Mapping[str, DataHubEntity]
    aspects: Mapping[str, str]
    named: Mapping[str, dict[str, Any]]

    @cached_property
    def version(self) -> str:
        """The installed acryl-datahub release (read from its metadata, once asked)."""
        return datahub_client_version()

    def kind(self, aspect: str) -> str:
        return "timeseries" if self.named[self.aspects[aspect]]["Aspect"].get("type") == "timeseries" else "versioned"


@cache
def datahub_client_version() -> str:
    """The installed acryl-datahub release, the pinned one (read from its metadata once)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def pinned_requirement() -> str:
    """The acryl-datahub requirement Lodestar pins (`acryl-datahub==X`), for messages: from
    pyproject.toml in a source checkout, else from the installed Lodestar's metadata."""
    found: list[str] = []
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        try:
            found = list(tomllib.loads(pyproject.read_text()).get("project", {}).get("dependencies", []))
        except (OSError, tomllib.TOMLDecodeError):
            found = []
    if not found:
        from importlib.metadata import PackageNotFoundError, requires

        try:
            found = [r for r in requires("lodestar") or () if "extra ==" not in r]
        except PackageNotFoundError:
            found = []
    pinned = [r.replace(" ", "") for r in found if r.replace("_", "-").startswith(DISTRIBUTION)]
    return pinned[0].split(";")[0] if pinned else DISTRIBUTION


def schema_directory() -> Path:
    """The folder of DataHub's schemas inside the installed package; raises DataHubModelError
    naming the install command when the package is missing."""
    spec = importlib.util.find_spec(PACKAGE)  # a top-level package: found, not imported
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        directory = Path(location).joinpath(*SCHEMA_FOLDER)
        if directory.is_dir():
            return directory
    raise DataHubModelError(
        f"DataHub's entities and aspects are read from the {DISTRIBUTION} package, which is not installed"
        f" (no {PACKAGE}/{'/'.join(SCHEMA_FOLDER)} found): pip install '{pinned_requirement()}'"
    )


def load_model(directory: Path | None = None,
               annotations: Mapping[str, Mapping[str, Any]] | None = None,
               entity_names: frozenset[str] = frozenset()) -> DataHubModel:
    """DataHub's model from a folder of its schemas (the installed package's by default), with
    Lodestar's `annotations` merged in. `entity_names` are further entity types (Lodestar's own)
    that URN classes may name."""
    directory = directory or schema_directory()
    named: dict[str, dict[str, Any]] = {}
    tops: list[dict[str, Any]] = []
    for file_name in sorted(n for n in os.listdir(directory) if n.endswith(".avsc")):
        raw = orjson.loads((directory / file_name).read_bytes().replace(_PEGASUS_BYTES, _LINKEDIN_BYTES))
        if not (isinstance(raw, dict) and raw.get("type") == "record" and "Aspect" in raw):
            continue  # an event envelope or a query type, not an aspect
        name = _qualified(raw["name"], raw.get("namespace"))
        named.pop(name, None)  # a file's own top-level definition wins over copies nested elsewhere
        _flatten(raw, None, named)
        tops.append(named[name])
    if not tops:
        raise DataHubModelError(f"{directory}: no aspect schemas (*.avsc with an \"Aspect\" annotation)")
    aspects: dict[str, str] = {}
    entities: dict[str, DataHubEntity] = {}
    for schema in tops:
        info = schema["Aspect"]
        aspects.setdefault(info["name"], schema["name"])
        entity = info.get("keyForEntity")
        if entity:
            listed = [a for a in info.get("entityAspects") or () if a != info["name"]]
            entities[entity] = DataHubEntity(entity, info["name"], (info["name"], *dict.fromkeys(listed)),
                                             info.get("entityCategory", ""), info.get("entityDoc", ""))
    _annotate(named, annotations or {})
    _read_urn_classes(named, frozenset(entities) | entity_names)
    return DataHubModel(directory, entities, aspects, named)


def _qualified(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _flatten(schema: Any, namespace: str | None, named: dict[str, dict[str, Any]]) -> Any:
    """The schema with every named type defined inside it registered in `named` (fields'
    types flattened the same way) and replaced by its full name; references become full names."""
    if isinstance(schema, str):
        if schema in _PRIMITIVES or "." in schema or not namespace:
            return schema
        return f"{namespace}.{schema}"
    if isinstance(schema, list):
        return [_flatten(branch, namespace, named) for branch in schema]
    kind = schema.get("type")
    if kind in _NAMED_KINDS:
        name = _qualified(schema["name"], schema.get("namespace", namespace))
        if name not in named:
            definition = {key: value for key, value in schema.items() if key not in ("namespace", "fields")}
            definition["name"] = name
            named[name] = definition  # before the fields: a recursive type refers to itself
            if "fields" in schema:
                inner = name.rpartition(".")[0] or None
                definition["fields"] = [{**f, "type": _flatten(f["type"], inner, named)} for f in schema["fields"]]
        return name
    if kind == "array":
        return {**schema, "items": _flatten(schema["items"], namespace, named)}
    if kind == "map":
        return {**schema, "values": _flatten(schema["values"], namespace, named)}
    if isinstance(kind, list | dict):
        return {**schema, "type": _flatten(kind, namespace, named)}
    return schema


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = json.loads(json.dumps(value))  # a copy, never shared with the registry file


def _annotate(named: dict[str, dict[str, Any]], annotations: Mapping[str, Mapping[str, Any]]) -> None:
    """Lodestar's annotations merged into DataHub's types; a type or field the package lacks
    is an error, so that an upgrade that renames one is caught when the registry loads."""
    for type_name, extra in annotations.items():
        definition = named.get(type_name)
        if definition is None:
            raise DataHubModelError(f"annotations for {type_name}: DataHub's schemas define no such type")
        fields = {f["name"]: f for f in definition.get("fields", ())}
        for key, value in extra.items():
            if key != "fields":
                _merge(definition, {key: value})
                continue
            for field_name, field_extra in (value or {}).items():
                if field_name not in fields:
                    raise DataHubModelError(f"annotations for {type_name}.{field_name}: {type_name} has no such field")
                _merge(fields[field_name], field_extra)


def _read_urn_classes(named: dict[str, dict[str, Any]], entity_names: frozenset[str]) -> None:
    by_lower = {name.lower(): name for name in entity_names}
    for definition in named.values():
        for f in definition.get("fields", ()):
            urn = f.get("Urn")
            if not isinstance(urn, str):
                continue
            types: list[str] = []
            if urn != "Urn" and urn.endswith("Urn"):
                found = by_lower.get(urn[:-3].lower())
                types = [found] if found else []
            validation = f.get("UrnValidation")
            if isinstance(validation, dict) and isinstance(validation.get("entityTypes"), list):
                types = [t for t in validation["entityTypes"] if isinstance(t, str)] or types
            f["Urn"] = types
