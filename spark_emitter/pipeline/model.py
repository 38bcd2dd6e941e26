"""A pipeline file: CDAP's exported pipeline JSON (`{"name", "artifact", "config": {"stages",
"connections"}}`) or its bare config (`{"name", "stages", "connections"}`).

    stage:      {"name", "plugin": {"name", "type", "properties": {...}}, "fieldMutations"?: [...]}
    connection: {"from", "to"}          (several connections into one stage union its inputs)
    mutation:   {"inputFields": [{"name", "type"}], "mutation", "description", "outputField"?: {"name", "type"}}

A property value may hold `${macro}`s, filled from the runtime arguments when the pipeline runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

MACRO = re.compile(r"\$\{([^${}]+)\}")


class PipelineError(ValueError):
    """A pipeline file that cannot be run; `errors` lists every problem found."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str = "string"


@dataclass(frozen=True)
class FieldMutation:
    """A field operation a stage declares (for plugins running code Lodestar cannot read)."""

    inputs: tuple[FieldSpec, ...]
    mutation: str
    description: str = ""
    output: FieldSpec | None = None  # none: the inputs are dropped


@dataclass(frozen=True)
class PluginSpec:
    name: str
    type: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Stage:
    name: str
    plugin: PluginSpec
    field_mutations: tuple[FieldMutation, ...] = ()


@dataclass(frozen=True)
class Pipeline:
    name: str
    stages: tuple[Stage, ...]
    connections: tuple[tuple[str, str], ...]
    checksum: str = ""
    artifact: dict[str, Any] | None = None

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def inputs_of(self, name: str) -> list[str]:
        return [a for a, b in self.connections if b == name]

    def outputs_of(self, name: str) -> list[str]:
        return [b for a, b in self.connections if a == name]

    def upstream_of(self, name: str) -> set[str]:
        """The stage and every stage whose records reach it."""
        found, stack = set(), [name]
        while stack:
            current = stack.pop()
            if current not in found:
                found.add(current)
                stack.extend(self.inputs_of(current))
        return found

    def order(self) -> list[str]:
        """The stages so that each comes after its inputs; PipelineError naming a cycle's stages."""
        names = [s.name for s in self.stages]
        pending = {n: {a for a in self.inputs_of(n) if a in names} for n in names}
        done: list[str] = []
        ready = [n for n in names if not pending[n]]
        while ready:
            current = ready.pop(0)
            done.append(current)
            for n in names:
                if current in pending[n]:
                    pending[n].discard(current)
                    if not pending[n]:
                        ready.append(n)
        if len(done) != len(names):
            left = [n for n in names if pending[n]]
            raise PipelineError([f"connections: a cycle among the stages {' -> '.join(_cycle(self, left))}"])
        return done

    def macros(self) -> set[str]:
        """The macros the stages' properties use."""
        found: set[str] = set()
        for stage in self.stages:
            for value in stage.plugin.properties.values():
                if isinstance(value, str):
                    found.update(MACRO.findall(value))
        return found


def _cycle(pipeline: Pipeline, left: list[str]) -> list[str]:
    """One cycle among the stages left, as a path that returns to its start (a -> b -> a). Each
    stage left waits for an input that is left too: going back along inputs must close a cycle."""
    path, current = [left[0]], left[0]
    while True:
        current = next(a for a, b in pipeline.connections if b == current and a in left)
        if current in path:
            cycle = path[path.index(current):] + [current]
            return cycle[::-1]
        path.append(current)


def resolve(value: Any, arguments: Mapping[str, str]) -> Any:
    """`value` with its macros filled from `arguments` (KeyError naming a missing one)."""
    if not isinstance(value, str):
        return value
    previous = None
    while previous != value:  # a value may hold a macro again
        previous = value
        value = MACRO.sub(lambda m: str(arguments[m.group(1)]), value)
    return value


def load(path: str | Path) -> Pipeline:
    """The pipeline of a file; PipelineError naming what is wrong with its form."""
    raw = Path(path).read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise PipelineError([f"{path}: not JSON: {err}"]) from None
    return parse(data, hashlib.sha256(raw).hexdigest())


def parse(data: Any, checksum: str = "") -> Pipeline:
    """The pipeline of a decoded file (the export or the bare config)."""
    errors: list[str] = []
    if not isinstance(data, dict):
        raise PipelineError(["the pipeline must be a JSON object"])
    name = data.get("name")
    config = data.get("config", data) if isinstance(data.get("config"), dict) else data
    if not isinstance(name, str) or not name:
        errors.append("name: the pipeline needs a name")
    if not checksum:
        checksum = hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
    stages: list[Stage] = []
    raw_stages = config.get("stages")
    if not isinstance(raw_stages, list) or not raw_stages:
        errors.append("stages: a non-empty list of stages is required")
        raw_stages = []
    for i, raw in enumerate(raw_stages):
        where = f"stages[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw.get("name"):
            errors.append(f"{where}: a stage needs a name")
            continue
        where = f"stage {raw['name']!r}"
        plugin = raw.get("plugin")
        if not isinstance(plugin, dict) or not isinstance(plugin.get("name"), str):
            errors.append(f"{where}: plugin: {{\"name\", \"type\", \"properties\"}} is required")
            continue
        properties = plugin.get("properties") or {}
        if not isinstance(properties, dict):
            errors.append(f"{where}: plugin properties must be an object")
            properties = {}
        try:
            mutations = tuple(_mutation(m) for m in raw.get("fieldMutations") or [])
        except (TypeError, KeyError, AttributeError) as err:
            errors.append(f"{where}: fieldMutations: each needs inputFields [{{name, type}}] and a mutation ({err})")
            mutations = ()
        stages.append(Stage(raw["name"], PluginSpec(plugin["name"], str(plugin.get("type") or ""),
                                                    dict(properties)), mutations))
    connections: list[tuple[str, str]] = []
    for i, raw in enumerate(config.get("connections") or []):
        if not isinstance(raw, dict) or not isinstance(raw.get("from"), str) or not isinstance(raw.get("to"), str):
            errors.append(f"connections[{i}]: a connection is {{\"from\": stage, \"to\": stage}}")
            continue
        connections.append((raw["from"], raw["to"]))
    if errors:
        raise PipelineError(errors)
    artifact = data.get("artifact") if isinstance(data.get("artifact"), dict) else None
    return Pipeline(name, tuple(stages), tuple(connections), checksum, artifact)


def _mutation(raw: dict[str, Any]) -> FieldMutation:
    inputs = tuple(FieldSpec(f["name"], f.get("type") or "string") for f in raw["inputFields"])
    output = raw.get("outputField")
    if not isinstance(raw["mutation"], str):
        raise TypeError("mutation must be a string")
    return FieldMutation(inputs, raw["mutation"], raw.get("description") or "",
                         FieldSpec(output["name"], output.get("type") or "string") if output else None)
