"""The registry and the schemas agree, and cover what the product needs."""

from __future__ import annotations

import random

import pytest

from schemas.registry import EntityRegistry, RegistryError, load_registry
from schemas.urns import Urn, UrnError, encode_part

REQUIRED_ENTITIES = {"dataPlatform", "dataset", "schemaField", "dataFlow", "dataJob", "dataProcessInstance",
                     "container", "tag", "corpuser"}


def test_entities_and_their_key_aspects(registry: EntityRegistry):
    assert set(registry.entities) >= REQUIRED_ENTITIES
    for entity in registry.entities.values():
        assert entity.aspects[0] == entity.key_aspect
        assert registry.aspect(entity.key_aspect).key_for == entity.name


def test_aspects_the_seeds_need(registry: EntityRegistry):
    dataset = registry.entity("dataset").aspects
    for aspect in ("datasetProperties", "schemaMetadata", "userScopeMetadata", "systemScopeMetadata", "status",
                   "upstreamLineage", "globalTags"):
        assert aspect in dataset
    assert "dataJobInputOutput" in registry.entity("dataJob").aspects
    assert registry.aspect("dataProcessInstanceRunEvent").is_timeseries
    assert not registry.aspect("datasetProperties").is_timeseries


def test_schema_annotations_mark_search_and_lineage(registry: EntityRegistry):
    upstream = registry.named_types["com.linkedin.dataset.Upstream"]
    dataset_field = next(f for f in upstream["fields"] if f["name"] == "dataset")
    assert dataset_field["Relationship"]["isLineage"] is True
    properties = registry.aspect("datasetProperties").schema
    assert any("Searchable" in f for f in properties["fields"])


def test_registry_and_schemas_must_agree(tmp_path):
    bad = tmp_path / "registry.yml"
    bad.write_text("entities: []\naspects:\n  noSuchAspect: {kind: versioned}\n")
    with pytest.raises(RegistryError, match="noSuchAspect"):
        load_registry(bad)
    wrong_kind = tmp_path / "kind.yml"
    wrong_kind.write_text("entities: []\naspects:\n  webhookInfo: {kind: timeseries}\n")
    with pytest.raises(RegistryError, match="registry says timeseries, schema says versioned"):
        load_registry(wrong_kind)
    datahubs = tmp_path / "datahubs.yml"
    datahubs.write_text("entities: []\naspects:\n  status: {kind: versioned}\n")
    with pytest.raises(RegistryError, match="aspect 'status' is DataHub's"):
        load_registry(datahubs)


def test_urns_round_trip_with_nested_tuples_and_encoded_parts(registry: EntityRegistry):
    dataset = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    field = f"urn:li:schemaField:({dataset},{encode_part('a,b(c)')})"
    urn = registry.parse_urn(field)
    assert urn.parts == (dataset, "a%2Cb%28c%29")
    assert str(urn) == field
    assert registry.key_value(registry.parse_urn(dataset)) == {
        "platform": "urn:li:dataPlatform:hive", "name": "db.t", "origin": "PROD"}
    assert str(Urn.create("tag", "pii")) == "urn:li:tag:pii"


@pytest.mark.parametrize(("text", "message"), [
    ("dataset:x", "does not start with 'urn:li:'"),
    ("urn:li::x", "has no entity type"),
    ("urn:li:tag:", "empty id"),
    ("urn:li:dataset:(a,,b)", "empty part"),
    ("urn:li:dataset:(a,b", "not closed"),
    ("urn:li:tag:a)b", "unbalanced"),
])
def test_malformed_urns(text, message):
    with pytest.raises(UrnError, match=message.replace("(", r"\(")):
        Urn.parse(text)


def plain_parse(text: str) -> tuple[str, tuple[str, ...]] | str:
    """A URN's (entity type, parts) read character by character, or the first words of the
    error it raises: what the parser's quicker paths must agree with."""
    if not text.startswith("urn:li:"):
        return "does not start"
    entity_type, sep, ident = text[len("urn:li:"):].partition(":")
    if not sep or not entity_type.isidentifier():
        return "has no entity type"
    if not ident:
        return "has an empty id"
    tupled = ident.startswith("(")
    if tupled and not ident.endswith(")"):
        return "tuple id is not closed"
    body = ident[1:-1] if tupled else ident
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return "unbalanced ')'"
        if ch == "," and depth == 0 and tupled:
            parts.append(body[start:i])
            start = i + 1
    if depth:
        return "unbalanced '('"
    parts.append(body[start:])
    if not all(parts):
        return "empty part"
    return entity_type, tuple(parts)


@pytest.mark.parametrize("seed", range(5))
def test_urn_parsing_agrees_with_a_plain_reading(seed):
    rng = random.Random(seed)
    shapes = ["urn:li:dataset:(urn:li:dataPlatform:hive,{a},PROD)",
              "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,{a},PROD),{b})",
              "urn:li:dataJob:(urn:li:dataFlow:(airflow,{a},PROD),{b})", "urn:li:tag:{a}", "urn:li:corpuser:{a}{b}"]
    for _ in range(3000):
        text = rng.choice(shapes).format(a="".join(rng.choices("ab(),", k=rng.randint(0, 4))),
                                         b="".join(rng.choices("xy(),", k=rng.randint(0, 3))))
        if rng.random() < 0.3:  # a character dropped, doubled or moved
            i = rng.randrange(len(text))
            text = rng.choice([text[:i] + text[i + 1:], text[:i] + text[i] + text[i:], text[i:] + text[:i]])
        expected = plain_parse(text)
        try:
            urn = Urn._parse(text)
        except UrnError as err:
            assert isinstance(expected, str) and expected in str(err), (text, expected, err)
            continue
        assert (urn.entity_type, urn.parts) == expected, text
        assert urn == Urn(urn.entity_type, urn.parts) and str(urn) == str(Urn(urn.entity_type, urn.parts))
        assert hash(urn) == hash(Urn(urn.entity_type, urn.parts))
