"""The generated acceptor (schemas.jsonform_accept), validation's quick path, says yes to
exactly the values the checker (schemas.jsonform) accepts: valid ones from the examples and the
benchmark's datasets, and every value one edit away from them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.datasets import generate
from schemas.jsonform import AspectValueError, compile_validator
from schemas.jsonform_accept import compile_acceptor, compile_fast_validator
from schemas.registry import EntityRegistry, default_registry

EXAMPLES = Path(__file__).parents[2] / "examples"
# Values of other JSON types (and an int beyond a long) that each node is replaced with in turn.
OTHERS = (None, True, 0, 2**63, 1.5, "x", "urn:li:corpuser:x", "COPY", [], {}, ["x"], {"x": "y"})


def samples() -> list[tuple[str, Any]]:
    """(aspect name, valid value): the examples' proposals and a few benchmark datasets'."""
    proposals = [p for file in sorted(EXAMPLES.glob("*.json")) for p in json.loads(file.read_text())]
    proposals += generate(8)
    return [(p["aspectName"], p["aspect"]["json"]) for p in proposals if "json" in p.get("aspect", {})]


def one_edit_away(node: Any, rebuild: Callable[[Any], Any] = lambda value: value) -> Iterator[Any]:
    """Each value with one change: a key dropped or added, an array emptied, one node replaced
    by a value of another type."""
    for other in OTHERS:
        if other != node or type(other) is not type(node):
            yield rebuild(other)
    if isinstance(node, dict):
        for key in node:
            yield rebuild({k: v for k, v in node.items() if k != key})
        yield rebuild({**node, "notAField": "x"})
        for key, value in node.items():
            yield from one_edit_away(value, lambda new, key=key: rebuild({**node, key: new}))
    elif isinstance(node, list) and node:
        yield rebuild([])
        for i, value in enumerate(node):
            yield from one_edit_away(value, lambda new, i=i: rebuild([*node[:i], new, *node[i + 1:]]))


def checker_accepts(check: Callable[[Any], None], value: Any) -> bool:
    try:
        check(value)
    except AspectValueError:
        return False
    return True


@pytest.fixture(scope="module")
def registry() -> EntityRegistry:
    return default_registry()


def test_every_aspect_of_the_model_gets_an_acceptor(registry: EntityRegistry):
    for spec in registry.aspects.values():
        assert callable(compile_acceptor(spec.schema, spec.named)), spec.name


def test_the_acceptor_agrees_with_the_checker_on_valid_values_and_every_one_edit_away(registry: EntityRegistry):
    compiled: dict[str, tuple[Callable[[Any], bool], Callable[[Any], None]]] = {}
    edits = rejected = 0
    for aspect, value in samples():
        spec = registry.aspect(aspect)
        assert spec is not None, aspect
        if aspect not in compiled:
            compiled[aspect] = compile_acceptor(spec.schema, spec.named), compile_validator(spec.schema, spec.named)
        accepts, check = compiled[aspect]
        assert accepts(value) and checker_accepts(check, value), (aspect, value)
        for edited in one_edit_away(value):
            edits += 1
            agreed = checker_accepts(check, edited)
            rejected += not agreed
            assert accepts(edited) == agreed, (aspect, edited)
    assert len(compiled) >= 15 and rejected > 1000 and edits - rejected > 100  # both answers were exercised


def test_the_fast_validator_raises_the_checkers_error(registry: EntityRegistry):
    spec = registry.aspect("upstreamLineage")
    check = compile_fast_validator(spec.schema, spec.named)
    check({"upstreams": []})
    with pytest.raises(AspectValueError) as raised:
        check({"upstreams": [{"dataset": "urn:li:corpuser:x", "type": "COPY"}]})
    assert str(raised.value) == "field 'upstreams[0].dataset': URN 'urn:li:corpuser:x' is a corpuser, expected dataset"
    with pytest.raises(AspectValueError, match=r"field 'upstreams\[0\].type': an array is not one of COPY"):
        check({"upstreams": [{"dataset": "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)", "type": [],
                              "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"}}]})
