"""What an aspect value says, as facts compared across versions: the tags, glossary terms,
owners, domains, schema fields, descriptions, structured properties and deprecation of an
entity and of its schema fields, by DataHub's change categories.

DataHub's timeline (`lodestar/api/datahub_timeline.py`) and its EntityChangeEvents
(`mcl_processor/change_events.py`) both compare the facts of two values of an aspect: a fact
in the new value only was added, in the old only removed, in both with another `detail`
modified.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, NamedTuple


class Fact(NamedTuple):
    """One thing an aspect value says, compared across versions by (entity, key). (A named
    tuple: a change to a schema of 20 fields makes some 80 of them, twice.)"""

    entity: str  # the entity (or schema field) it is about
    key: str  # what it is within the entity: a tag URN, a field path, "description"
    modifier: str | None  # what the event names (a tag, an owner, a field URN), None: nothing
    detail: Any = None  # compared for a MODIFY
    label: str = ""  # how descriptions name it
    field_path: str | None = None  # the schema field it is about, if any


Extractor = Callable[[str, Any], Iterator[Fact]]


@lru_cache(maxsize=1024)  # each extractor that reads a schema asks for every field's URN again
def field_urn(dataset: str, path: str) -> str:
    """A schema field's URN: `(`, `)` and `,` of the field path percent-encoded."""
    encoded = path.replace("%", "%25").replace("(", "%28").replace(")", "%29").replace(",", "%2C")
    return f"urn:li:schemaField:({dataset},{encoded})"


def _records(value: Any, *names: str) -> list[dict[str, Any]]:
    """The records of the array at a dotted path of fields (missing parts: none)."""
    found: list[Any] = [value]
    for name in names:
        found = [item.get(name) for item in found if isinstance(item, dict)]
        found = [x for item in found for x in (item if isinstance(item, list) else [item]) if x is not None]
    return [item for item in found if isinstance(item, dict)]


def _schema_fields(urn: str, value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field URN, field record) of a schemaMetadata or editableSchemaMetadata value."""
    for field in _records(value, "fields") + _records(value, "editableSchemaFieldInfo"):
        if isinstance(field.get("fieldPath"), str):
            yield field_urn(urn, field["fieldPath"]), field


def _associations(label: str, array: str, key: str) -> Extractor:
    """Facts of an array of associations (`tags[].tag`), on the entity and its schema fields."""
    container = {"tags": "globalTags", "terms": "glossaryTerms"}.get(array)

    def extract(urn: str, value: Any) -> Iterator[Fact]:
        for item in _records(value, array):
            if isinstance(item.get(key), str):
                yield Fact(urn, item[key], item[key], label=label)
        if container is None:
            return
        for entity, field in _schema_fields(urn, value):
            for item in _records(field.get(container), array):
                if isinstance(item.get(key), str):
                    yield Fact(entity, item[key], item[key], label=label, field_path=field["fieldPath"])
    return extract


def _urn_list(label: str, array: str) -> Extractor:
    def extract(urn: str, value: Any) -> Iterator[Fact]:
        items = value.get(array) if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, str):
                yield Fact(urn, item, item, label=label)
    return extract


def _owners(urn: str, value: Any) -> Iterator[Fact]:
    for owner in _records(value, "owners"):
        if isinstance(owner.get("owner"), str):
            kind = owner.get("typeUrn") or owner.get("type") or "NONE"
            yield Fact(urn, f"{owner['owner']} {kind}", owner["owner"], owner.get("type") or kind, "Owner")


def _schema(urn: str, value: Any) -> Iterator[Fact]:
    for entity, field in _schema_fields(urn, value):
        kind = field.get("type", {}).get("type") if isinstance(field.get("type"), dict) else None
        shown = next(iter(kind), None) if isinstance(kind, dict) else None
        yield Fact(urn, field["fieldPath"], entity, (field.get("nativeDataType"), shown), "Field", field["fieldPath"])


def _descriptions(urn: str, value: Any) -> Iterator[Fact]:
    if isinstance(value, dict) and isinstance(value.get("description"), str) and value["description"]:
        yield Fact(urn, "description", None, value["description"], "Documentation")
    for entity, field in _schema_fields(urn, value):
        if isinstance(field.get("description"), str) and field["description"]:
            yield Fact(entity, "description", entity, field["description"], "Documentation", field["fieldPath"])
    for link in _records(value, "elements"):
        if isinstance(link.get("url"), str):
            yield Fact(urn, link["url"], link["url"], link.get("description"), "Link")


def _properties(urn: str, value: Any) -> Iterator[Fact]:
    for prop in _records(value, "properties"):
        if isinstance(prop.get("propertyUrn"), str):
            yield Fact(urn, prop["propertyUrn"], prop["propertyUrn"], prop.get("values"), "Structured property")


def _deprecation(urn: str, value: Any) -> Iterator[Fact]:
    if isinstance(value, dict) and value.get("deprecated") is True:
        yield Fact(urn, "deprecated", None, value.get("note"), "Deprecation")


_TAGS, _TERMS = _associations("Tag", "tags", "tag"), _associations("Glossary term", "terms", "urn")
# category -> (aspect, extractor); "*Properties" stands for every such aspect of the entity
CATEGORIES: dict[str, tuple[tuple[str, Extractor], ...]] = {
    "TAG": (("globalTags", _TAGS), ("schemaMetadata", _TAGS), ("editableSchemaMetadata", _TAGS)),
    "OWNERSHIP": (("ownership", _owners),),
    "GLOSSARY_TERM": (("glossaryTerms", _TERMS), ("schemaMetadata", _TERMS), ("editableSchemaMetadata", _TERMS)),
    "DOCUMENTATION": (("*Properties", _descriptions), ("schemaMetadata", _descriptions),
                      ("editableSchemaMetadata", _descriptions), ("institutionalMemory", _descriptions)),
    "TECHNICAL_SCHEMA": (("schemaMetadata", _schema),),
    "DOMAIN": (("domains", _urn_list("Domain", "domains")),),
    "STRUCTURED_PROPERTY": (("structuredProperties", _properties),),
    "APPLICATION": (("applications", _urn_list("Application", "applications")),),
    "DEPRECATION": (("deprecation", _deprecation),),
}
