"""Checks a pipeline before it runs; every error names its stage or connection.

- connections between stages that exist, no cycle (the error says "cycle" and names its stages),
  sources without inputs and sinks without outputs, every other stage with inputs;
- a known plugin (a built-in, or a loadable `module:Class`) of a type it supports, its required
  properties present, the properties it checks itself (formats, schemas, field names);
- each field mutation's input fields produced by the stage's inputs (or an earlier mutation of
  the stage), where the fields coming in can be told without running;
- with runtime arguments (`arguments` given): every macro has a value. Without them (`lodestar
  pipeline validate`) unresolved macros are accepted, as CDAP does, and properties holding one
  are not checked further.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_emitter.pipeline.model import MACRO, Pipeline, PipelineError, Stage, resolve
from spark_emitter.pipeline.plugins import AGGREGATOR, JOINER, SINK, SOURCE, Plugin, PluginError, plugin_class

STAGE_TYPES = (SOURCE, SINK, "transform", JOINER, AGGREGATOR)


def instantiate(stage: Stage, properties: Mapping[str, Any]) -> Any:
    """The stage's plugin object (a custom one gets `properties` and `stage` as attributes)."""
    cls = plugin_class(stage.plugin.name)
    if isinstance(cls, type) and issubclass(cls, Plugin):
        plugin = cls(properties, stage)
    else:
        plugin = cls()
        plugin.properties, plugin.stage = dict(properties), stage
    types = getattr(plugin, "types", ("transform",))
    if stage.plugin.type not in types:
        raise PluginError(f"plugin {stage.plugin.name} is not of type {stage.plugin.type!r} "
                          f"(it is {' or '.join(types)})")
    return plugin


def check(pipeline: Pipeline, arguments: Mapping[str, str] | None = None) -> list[str]:
    """Every problem found ([] for a pipeline that may run)."""
    errors: list[str] = []
    names = [s.name for s in pipeline.stages]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"stage {name!r}: two stages have this name")
    for a, b in pipeline.connections:
        for end in (a, b):
            if end not in names:
                errors.append(f"connection {a} -> {b}: there is no stage {end!r}")
    order = names
    try:
        order = pipeline.order()
    except PipelineError as err:
        errors.extend(err.errors)
    fields: dict[str, list[str] | None] = {}
    plugins: dict[str, Any] = {}
    for name in order:
        stage = pipeline.stage(name)
        where = f"stage {name!r}"
        inputs, outputs = pipeline.inputs_of(name), pipeline.outputs_of(name)
        kind = stage.plugin.type
        if kind not in STAGE_TYPES:
            errors.append(f"{where}: plugin type {kind!r} is none of {', '.join(STAGE_TYPES)}")
        if kind == SOURCE and inputs:
            errors.append(f"{where}: a source takes no input (connected from {', '.join(inputs)})")
        if kind != SOURCE and not inputs:
            errors.append(f"{where}: no connection leads to this {kind or 'stage'}")
        if kind == SINK and outputs:
            errors.append(f"{where}: a sink has no output (connected to {', '.join(outputs)})")
        if kind == JOINER and len(inputs) < 2:
            errors.append(f"{where}: a joiner needs two inputs or more")
        properties, unresolved = _properties(stage, arguments, errors)
        try:
            plugin = instantiate(stage, properties)
        except PluginError as err:
            errors.append(f"{where}: {err}")
            fields[name] = None
            continue
        plugins[name] = plugin
        missing = [p for p in getattr(plugin, "required", ()) if properties.get(p) in (None, "")]
        if missing:
            errors.append(f"{where}: missing required propert{'y' if len(missing) == 1 else 'ies'} "
                          f"{', '.join(missing)} of plugin {stage.plugin.name}")
            fields[name] = None
            continue
        incoming = _incoming(pipeline, name, fields)
        errors.extend(_mutation_errors(stage, incoming))
        if unresolved:
            fields[name] = None
            continue
        try:
            if getattr(plugin, "multi_input", False):
                plugin.check_inputs(inputs)
            fields[name] = plugin.configure(incoming)
        except PluginError as err:
            errors.append(f"{where}: {err}")
            fields[name] = None
        except Exception as err:  # a custom plugin's own error
            errors.append(f"{where}: configure failed: {type(err).__name__}: {err}")
            fields[name] = None
    return errors


def validated(pipeline: Pipeline, arguments: Mapping[str, str] | None = None) -> Pipeline:
    errors = check(pipeline, arguments)
    if errors:
        raise PipelineError(errors)
    return pipeline


def _properties(stage: Stage, arguments: Mapping[str, str] | None,
                errors: list[str]) -> tuple[dict[str, Any], bool]:
    """The stage's properties with macros filled (when arguments are given), and whether any is left."""
    out: dict[str, Any] = {}
    unresolved = False
    for key, value in stage.plugin.properties.items():
        if isinstance(value, str) and MACRO.search(value):
            if arguments is None:
                unresolved = True
            else:
                try:
                    value = resolve(value, arguments)
                except KeyError as err:
                    errors.append(f"stage {stage.name!r}: property {key}: the macro ${{{err.args[0]}}} has no "
                                  "value (pass it as a runtime argument: --arg "
                                  f"{err.args[0]}=...)")
                    unresolved = True
        out[key] = value
    return out, unresolved


def _incoming(pipeline: Pipeline, name: str, fields: Mapping[str, list[str] | None]) -> list[str] | None:
    """The fields coming into a stage (None when some input's cannot be told without running)."""
    out: list[str] = []
    for a in pipeline.inputs_of(name):
        known = fields.get(a)
        if known is None:
            return None
        out.extend(f for f in known if f not in out)
    return out if pipeline.inputs_of(name) else []


def _mutation_errors(stage: Stage, incoming: list[str] | None) -> list[str]:
    if incoming is None:
        return []
    known = set(incoming)
    errors = []
    for m in stage.field_mutations:
        for f in m.inputs:
            if f.name not in known:
                errors.append(f"stage {stage.name!r}: field mutation {m.mutation!r}: no input produces the field "
                              f"{f.name!r} (inputs: {', '.join(incoming) or 'none'})")
        if m.output is not None:
            known.add(m.output.name)
    return errors
