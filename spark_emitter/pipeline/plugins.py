"""The plugins a pipeline stage runs: built-ins with CDAP's names and properties, and custom
ones (`"plugin": {"name": "module:Class", ...}`).

A plugin records its own field operations in `prepare_run(context)` with field names only, as
CDAP's plugins do (`FieldRead`, `FieldTransform`, `FieldWrite`); the runner, knowing the DAG,
works out which operation produced each input field and which datasets the fields end in.

Each built-in records exactly:
- `File` / `Table` source: a READ of its dataset whose outputs are the fields it reads;
- `File` / `Table` sink: a WRITE of every field it receives into its dataset;
- `Projection`: per dropped field (`drop`, or not in `keep`) a TRANSFORM without outputs, per
  converted field a TRANSFORM from the field to itself, per rename a TRANSFORM old -> new;
- `CSVParser`: a TRANSFORM from `field` to the fields of `schema`;
- `PythonEvaluator`: the stage's `fieldMutations`, each one TRANSFORM (no `outputField`: a drop);
- `Joiner`: a TRANSFORM of the join keys (inputs and outputs `<stage>.<field>`), then per
  selected field a TRANSFORM from `<stage>.<field>` to its output name;
- `GroupByAggregate`: a TRANSFORM of the grouping fields to themselves, and per aggregate a
  TRANSFORM from its field (none for `count(*)`) to the aggregate's name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from spark_emitter.pipeline.counts import Scan
from spark_emitter.pipeline.model import FieldMutation, Stage
from spark_emitter.urns import Naming, dataset_urn

SOURCE, SINK, TRANSFORM, JOINER, AGGREGATOR = "batchsource", "batchsink", "transform", "batchjoiner", "batchaggregator"


class PluginError(ValueError):
    """A stage whose plugin or properties are wrong; the message names the property."""


@dataclass(frozen=True)
class FieldRead:
    name: str
    description: str
    source: str  # dataset URN
    outputs: Sequence[str] = ()


@dataclass(frozen=True)
class FieldTransform:
    name: str
    description: str
    inputs: Sequence[str] = ()
    outputs: Sequence[str] = ()


@dataclass(frozen=True)
class FieldWrite:
    name: str
    description: str
    destination: str  # dataset URN
    inputs: Sequence[str] = ()


StageOperation = FieldRead | FieldTransform | FieldWrite


@dataclass
class StageContext:
    """What a plugin sees in `prepare_run`: its stage, the fields coming in (per input stage for a
    joiner), the session, the run's metadata context, and `record` for its field operations."""

    stage: str
    spark: Any
    input_fields: list[str]
    inputs: dict[str, list[str]]
    arguments: Mapping[str, str]
    metadata: Any
    naming: Naming
    mutations: tuple[FieldMutation, ...] = ()
    operations: list[StageOperation] = field(default_factory=list)
    reads: dict[str, str] = field(default_factory=dict)  # dataset URN -> display name
    writes: dict[str, str] = field(default_factory=dict)

    def record(self, operations: Iterable[StageOperation]) -> None:
        self.operations.extend(operations)


class Plugin:
    """A plugin: `configure` checks the properties (and says which fields come out, when it can
    tell without running), `prepare_run` records field operations, then `read(spark)` (a source),
    `transform(df)` (a transform; a dict of input stage -> DataFrame for a joiner) or `write(df)`
    (a sink) does the work."""

    types: tuple[str, ...] = (TRANSFORM,)
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    description = ""
    multi_input = False

    def __init__(self, properties: Mapping[str, Any], stage: Stage):
        self.properties = dict(properties)
        self.stage = stage

    def prop(self, name: str, default: Any = None) -> Any:
        value = self.properties.get(name)
        return default if value is None or value == "" else value

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        return input_fields

    def prepare_run(self, context: StageContext) -> None:
        pass


# schemas: CDAP's JSON record schema, or "name type, ..." / "name:type, ..."

_CDAP_TYPES = {"string": "string", "int": "int", "long": "bigint", "float": "float", "double": "double",
               "boolean": "boolean", "bytes": "binary", "date": "date", "timestamp": "timestamp"}


def parse_schema(value: Any) -> list[tuple[str, str]]:
    """[(field, Spark type)] of a schema property; PluginError when it is none."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as err:
            raise PluginError(f"schema: not JSON: {err}") from None
    if isinstance(value, dict):
        out = []
        for f in value.get("fields") or []:
            kind = f.get("type")
            if isinstance(kind, list):  # a nullable union
                kind = next((k for k in kind if k != "null"), "string")
            if isinstance(kind, dict):
                kind = kind.get("logicalType") or kind.get("type")
            out.append((f["name"], _CDAP_TYPES.get(str(kind), str(kind))))
        if not out:
            raise PluginError("schema: a record schema with fields is required")
        return out
    if isinstance(value, str) and value.strip():
        out = []
        for part in value.split(","):
            pieces = part.replace(":", " ").split()
            if len(pieces) != 2:
                raise PluginError(f"schema: {part.strip()!r} is not 'name type'")
            out.append((pieces[0], _CDAP_TYPES.get(pieces[1].lower(), pieces[1].lower())))
        return out
    raise PluginError("schema: a schema is required (CDAP's JSON record schema, or 'name type, ...')")


def _ddl(schema: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{name}` {kind}" for name, kind in schema)


def _pairs(text: str, what: str, sep: str = ":") -> list[tuple[str, str]]:
    out = []
    for part in (p.strip() for p in str(text).split(",") if p.strip()):
        left, found, right = part.partition(sep)
        if not found or not left.strip() or not right.strip():
            raise PluginError(f"{what}: {part!r} is not 'a{sep}b'")
        out.append((left.strip(), right.strip()))
    return out


def _names(text: Any) -> list[str]:
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


# sources and sinks

_FORMATS = ("text", "csv", "json", "parquet")


class File(Plugin):
    types = (SOURCE, SINK)
    required = ("referenceName", "path")
    optional = ("format", "schema", "delimiter", "header")
    description = "files at a path (format text | csv | json | parquet): the file platform's dataset of the path"

    def _format(self) -> str:
        fmt = str(self.prop("format", "text")).lower()
        if fmt not in _FORMATS:
            raise PluginError(f"format: {fmt!r} is none of {', '.join(_FORMATS)}")
        return fmt

    def urn(self, naming: Naming) -> str:
        platform, name = naming.path(str(self.prop("path")), self._format())
        return dataset_urn(platform, name, naming.env)

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        fmt = self._format()
        if self.stage.plugin.type == SINK:
            return None
        if fmt == "text":
            return ["body"]
        schema = self.prop("schema")
        if schema is None:
            if fmt == "csv":
                raise PluginError("schema: a csv source needs its schema")
            return None  # json, parquet: the files say
        return [name for name, _ in parse_schema(schema)]

    def prepare_run(self, context: StageContext) -> None:
        urn = self.urn(context.naming)
        name = str(self.prop("referenceName"))
        if self.stage.plugin.type == SINK:
            context.writes[urn] = name
            context.record([FieldWrite("write", f"wrote to {self.prop('path')}", urn, context.input_fields)])
        else:
            context.reads[urn] = name
            context.record([FieldRead("read", f"read from {self.prop('path')}", urn, self._outputs(context))])

    def _outputs(self, context: StageContext) -> list[str]:
        fields = self.configure(None)
        if fields is None:
            fields = self.read(context.spark).columns
        return fields

    def scanned(self, scan: Scan) -> bool:
        """Whether Spark's scan read this path (its location names it)."""
        path = re.escape(str(self.prop("path")).rstrip("/"))
        return re.search(rf"[\[,:]{path}[\],/ ]", scan.description) is not None

    def read(self, spark: Any) -> Any:
        fmt, path = self._format(), str(self.prop("path"))
        if fmt == "text":
            return spark.read.text(path).withColumnRenamed("value", "body")
        reader = spark.read
        schema = self.prop("schema")
        if schema is not None:
            reader = reader.schema(_ddl(parse_schema(schema)))
        if fmt == "csv":
            reader = reader.option("header", str(self.prop("header", "false")).lower()) \
                .option("sep", str(self.prop("delimiter", ",")))
        return reader.format(fmt).load(path)

    def write(self, df: Any) -> None:
        fmt, path = self._format(), str(self.prop("path"))
        writer = df.write.mode("overwrite")
        if fmt == "csv":
            writer = writer.option("header", str(self.prop("header", "false")).lower()) \
                .option("sep", str(self.prop("delimiter", ",")))
        if fmt == "text" and len(df.columns) != 1:
            raise PluginError(f"format: a text sink writes one string field; it gets {', '.join(df.columns)}")
        writer.format(fmt).save(path)


class Table(Plugin):
    types = (SOURCE, SINK)
    required = ("name",)
    optional = ("referenceName", "schema")
    description = "a table of the session's catalog: the listener's catalog-table dataset"

    def urn(self, naming: Naming) -> str:
        """The session catalog's name as Spark resolves it (lower case: its catalog is not case
        sensitive), so the listener and the pipeline name one entity."""
        platform, name = naming.table(str(self.prop("name")).lower().split("."))
        return dataset_urn(platform, name, naming.env)

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        if self.stage.plugin.type == SINK:
            return None
        schema = self.prop("schema")
        return [name for name, _ in parse_schema(schema)] if schema is not None else None

    def prepare_run(self, context: StageContext) -> None:
        urn = self.urn(context.naming)
        name = str(self.prop("referenceName", self.prop("name")))
        if self.stage.plugin.type == SINK:
            context.writes[urn] = name
            context.record([FieldWrite("write", f"wrote to table {self.prop('name')}", urn, context.input_fields)])
        else:
            context.reads[urn] = name
            fields = self.configure(None) or context.spark.table(str(self.prop("name"))).columns
            context.record([FieldRead("read", f"read from table {self.prop('name')}", urn, fields)])

    def scanned(self, scan: Scan) -> bool:
        """Whether Spark's scan read this table (it ends the scan's name)."""
        table = str(self.prop("name")).lower()
        return scan.name.strip().lower().rsplit(" ", 1)[-1].endswith(f".{table}")

    def read(self, spark: Any) -> Any:
        return spark.table(str(self.prop("name")))

    def write(self, df: Any) -> None:
        df.write.mode("overwrite").saveAsTable(str(self.prop("name")))


# transforms

class Projection(Plugin):
    keeps_rows = True  # one record out per record in
    optional = ("drop", "keep", "rename", "convert")
    description = "drops, keeps, converts and renames fields"

    def _plan(self) -> tuple[list[str], list[str], list[tuple[str, str]], list[tuple[str, str]]]:
        drop, keep = _names(self.prop("drop")), _names(self.prop("keep"))
        if drop and keep:
            raise PluginError("drop, keep: give one of them, not both")
        return (drop, keep, _pairs(self.prop("convert", ""), "convert"), _pairs(self.prop("rename", ""), "rename"))

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        drop, keep, convert, rename = self._plan()
        if input_fields is None:
            return None
        for name in [*drop, *keep, *(f for f, _ in convert), *(f for f, _ in rename)]:
            if name not in input_fields:
                raise PluginError(f"{name!r} is not an input field (inputs: {', '.join(input_fields)})")
        fields = [f for f in input_fields if f not in drop and (not keep or f in keep)]
        renamed = dict(rename)
        return [renamed.get(f, f) for f in fields]

    def prepare_run(self, context: StageContext) -> None:
        drop, keep, convert, rename = self._plan()
        dropped = drop or [f for f in context.input_fields if keep and f not in keep]
        ops: list[StageOperation] = [FieldTransform(f"drop {f}", f"dropped {f}", [f], []) for f in dropped]
        ops += [FieldTransform(f"convert {f}", f"converted {f} to {kind}", [f], [f]) for f, kind in convert]
        ops += [FieldTransform(f"rename {old}", f"renamed {old} to {new}", [old], [new]) for old, new in rename]
        context.record(ops)

    def transform(self, df: Any) -> Any:
        from pyspark.sql import functions as F

        drop, keep, convert, rename = self._plan()
        if drop:
            df = df.drop(*drop)
        if keep:
            df = df.select(*keep)
        kinds = dict(convert)
        renamed = dict(rename)
        return df.select(*[(F.col(c).cast(_CDAP_TYPES.get(kinds[c].lower(), kinds[c])) if c in kinds else F.col(c))
                           .alias(renamed.get(c, c)) for c in df.columns])


_DELIMITERS = {"default": ",", "csv": ",", "tdf": "\t", "pdl": "|", "excel": ",", "mysql": "\t", "rfc4180": ","}


class CSVParser(Plugin):
    keeps_rows = True  # one record out per record in
    required = ("field", "schema")
    optional = ("format", "delimiter")
    description = "parses a field of CSV text into the fields of its schema"

    def _delimiter(self) -> str:
        if self.prop("delimiter") is not None:
            return str(self.prop("delimiter"))
        fmt = str(self.prop("format", "DEFAULT")).lower()
        if fmt not in _DELIMITERS:
            raise PluginError(f"format: {fmt!r} is none of {', '.join(k.upper() for k in _DELIMITERS)}")
        return _DELIMITERS[fmt]

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        self._delimiter()
        if input_fields is not None and self.prop("field") not in input_fields:
            raise PluginError(f"field: {self.prop('field')!r} is not an input field")
        return [name for name, _ in parse_schema(self.prop("schema"))]

    def prepare_run(self, context: StageContext) -> None:
        outputs = [name for name, _ in parse_schema(self.prop("schema"))]
        context.record([FieldTransform("parse", f"parsed {self.prop('field')} as CSV", [str(self.prop("field"))],
                                       outputs)])

    def transform(self, df: Any) -> Any:
        from pyspark.sql import functions as F

        schema = parse_schema(self.prop("schema"))
        parsed = F.from_csv(F.col(str(self.prop("field"))), _ddl(schema), {"sep": self._delimiter()})
        return df.select(parsed.alias("__parsed")).select(*[F.col(f"__parsed.`{n}`").alias(n) for n, _ in schema])


class PythonEvaluator(Plugin):
    required = ("script",)
    optional = ("schema",)
    description = ("runs `transform(record, emitter, context)` on each record; its field operations are the "
                   "stage's fieldMutations")

    def _function(self) -> Any:
        scope: dict[str, Any] = {}
        try:
            exec(compile(str(self.prop("script")), f"<{self.stage.name} script>", "exec"), scope)  # noqa: S102
        except SyntaxError as err:
            raise PluginError(f"script: {err}") from None
        function = scope.get("transform")
        if not callable(function):
            raise PluginError("script: it must define transform(record, emitter, context)")
        return function

    def _output(self, input_fields: list[str]) -> list[tuple[str, str]]:
        if self.prop("schema") is not None:
            return parse_schema(self.prop("schema"))
        out = [(f, "string") for f in input_fields]
        for m in self.stage.field_mutations:
            if m.output is None:
                out = [(f, k) for f, k in out if f not in {i.name for i in m.inputs}]
        for m in self.stage.field_mutations:
            if m.output is not None:
                out = [(f, k) for f, k in out if f != m.output.name] + [(m.output.name, m.output.type)]
        return out

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        self._function()
        if self.prop("schema") is None and input_fields is None:
            return None
        return [name for name, _ in self._output(input_fields or [])]

    def prepare_run(self, context: StageContext) -> None:
        context.record(mutation_operations(context.mutations))

    def transform(self, df: Any) -> Any:
        from pyspark.sql.types import _parse_datatype_string

        script, stage = str(self.prop("script")), self.stage.name
        schema = self._output(df.columns)
        if self.prop("schema") is None:  # the input's types for fields passed on
            types = dict((f.name, f.dataType.simpleString()) for f in df.schema.fields)
            declared = {m.output.name: m.output.type for m in self.stage.field_mutations if m.output}
            schema = [(f, _CDAP_TYPES.get(declared[f], declared[f]) if f in declared else types.get(f, "string"))
                      for f, _ in schema]
        names = [n for n, _ in schema]
        counted = self.rows_in = df.sparkSession.sparkContext.accumulator(0)

        def run(rows: Any) -> Any:
            scope: dict[str, Any] = {}
            exec(compile(script, f"<{stage} script>", "exec"), scope)  # noqa: S102
            function, out = scope["transform"], _Emitter()
            context = {"stage": stage}
            for row in rows:
                counted.add(1)
                function(row.asDict(), out, context)
                while out.records:
                    record = out.records.pop(0)
                    yield tuple(record.get(n) for n in names)

        return df.sparkSession.createDataFrame(df.rdd.mapPartitions(run), _parse_datatype_string(_ddl(schema)))


class _Emitter:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def emit(self, record: dict[str, Any]) -> None:
        self.records.append(record)


def mutation_operations(mutations: Iterable[FieldMutation]) -> list[StageOperation]:
    """A stage's declared fieldMutations as its operations (a mutation name repeated gets ' (2)')."""
    ops: list[StageOperation] = []
    taken: set[str] = set()
    for m in mutations:
        name, n = m.mutation, 1
        while name in taken:
            n += 1
            name = f"{m.mutation} ({n})"
        taken.add(name)
        ops.append(FieldTransform(name, m.description, [i.name for i in m.inputs],
                                  [m.output.name] if m.output else []))
    return ops


_KEY = re.compile(r"^\s*([^.\s=]+)\.([^=\s]+)\s*$")


class Joiner(Plugin):
    types = (JOINER,)
    required = ("joinKeys", "selectedFields")
    optional = ("requiredInputs",)
    description = "joins its inputs on joinKeys (`A.k = B.k & ...`) and selects `A.f as g, ...`"
    multi_input = True

    def _keys(self) -> list[list[tuple[str, str]]]:
        out = []
        for part in (p for p in str(self.prop("joinKeys")).split("&") if p.strip()):
            sides = []
            for side in part.split("="):
                match = _KEY.match(side)
                if match is None:
                    raise PluginError(f"joinKeys: {side.strip()!r} is not '<stage>.<field>'")
                sides.append((match.group(1), match.group(2)))
            if len(sides) < 2:
                raise PluginError(f"joinKeys: {part.strip()!r} is not '<stage>.<field> = <stage>.<field>'")
            out.append(sides)
        return out

    def _selected(self) -> list[tuple[str, str, str]]:
        out = []
        for part in _names(self.prop("selectedFields")):
            words = part.split()
            ref, alias = (words[0], words[2]) if len(words) == 3 and words[1].lower() == "as" else (part, None)
            match = _KEY.match(ref)
            if match is None or (len(words) not in (1, 3)):
                raise PluginError(f"selectedFields: {part!r} is not '<stage>.<field> [as <name>]'")
            out.append((match.group(1), match.group(2), alias or match.group(2)))
        return out

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        self._keys()
        return [alias for _, _, alias in self._selected()]

    def check_inputs(self, inputs: list[str]) -> None:
        named = {stage for sides in self._keys() for stage, _ in sides} | {s for s, _, _ in self._selected()}
        named |= set(_names(self.prop("requiredInputs")))
        unknown = sorted(named - set(inputs))
        if unknown:
            raise PluginError(f"{', '.join(unknown)}: not an input of this joiner (inputs: {', '.join(inputs)})")

    def prepare_run(self, context: StageContext) -> None:
        keys = [f"{stage}.{name}" for sides in self._keys() for stage, name in sides]
        ops: list[StageOperation] = [FieldTransform("join", "joined on " + str(self.prop("joinKeys")), keys, keys)]
        ops += [FieldTransform(f"select {alias}", f"{stage}.{name} as {alias}", [f"{stage}.{name}"], [alias])
                for stage, name, alias in self._selected()]
        context.record(ops)

    def transform(self, dfs: dict[str, Any]) -> Any:
        from pyspark.sql import functions as F

        stages = list(dfs)
        self.check_inputs(stages)
        required = set(_names(self.prop("requiredInputs"))) or set(stages)
        aliased = {s: df.alias(s) for s, df in dfs.items()}
        keys = self._keys()
        joined, done = aliased[stages[0]], {stages[0]}
        for stage in stages[1:]:
            condition = None
            for sides in keys:
                left = [(s, f) for s, f in sides if s in done]
                right = [(s, f) for s, f in sides if s == stage]
                if left and right:
                    term = F.col(f"`{left[0][0]}`.`{left[0][1]}`") == F.col(f"`{stage}`.`{right[0][1]}`")
                    condition = term if condition is None else condition & term
            if condition is None:
                raise PluginError(f"joinKeys: no key joins {stage} to {', '.join(sorted(done))}")
            how = {(True, True): "inner", (True, False): "left", (False, True): "right",
                   (False, False): "full"}[(bool(done & required), stage in required)]
            joined = joined.join(aliased[stage], condition, how)
            done.add(stage)
        return joined.select(*[F.col(f"`{s}`.`{f}`").alias(a) for s, f, a in self._selected()])


_AGGREGATE = re.compile(r"^\s*(\w+)\s*\(\s*([^()]*?)\s*\)\s*$")
_FUNCTIONS = {"count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max", "first": "first",
              "last": "last", "countdistinct": "count_distinct", "collectlist": "collect_list",
              "collectset": "collect_set", "stddev": "stddev", "variance": "variance"}


class GroupByAggregate(Plugin):
    types = (AGGREGATOR,)
    required = ("groupByFields", "aggregates")
    description = "groups by groupByFields and computes aggregates `name:fn(field), ...`"

    def _aggregates(self) -> list[tuple[str, str, str | None]]:
        out = []
        for name, call in _pairs(self.prop("aggregates"), "aggregates"):
            match = _AGGREGATE.match(call)
            if match is None or match.group(1).lower() not in _FUNCTIONS:
                raise PluginError(f"aggregates: {call!r} is not fn(field) with fn one of {', '.join(_FUNCTIONS)}")
            argument = match.group(2)
            out.append((name, match.group(1).lower(), None if argument in ("*", "") else argument))
        return out

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        groups, aggregates = _names(self.prop("groupByFields")), self._aggregates()
        if input_fields is not None:
            for f in [*groups, *(a for _, _, a in aggregates if a)]:
                if f not in input_fields:
                    raise PluginError(f"{f!r} is not an input field (inputs: {', '.join(input_fields)})")
        return groups + [name for name, _, _ in aggregates]

    def prepare_run(self, context: StageContext) -> None:
        groups = _names(self.prop("groupByFields"))
        ops: list[StageOperation] = [FieldTransform("group by", "grouped by " + ", ".join(groups), groups, groups)]
        ops += [FieldTransform(f"{fn} {name}", f"{name} = {fn}({arg or '*'})", [arg] if arg else [], [name])
                for name, fn, arg in self._aggregates()]
        context.record(ops)

    def transform(self, df: Any) -> Any:
        from pyspark.sql import functions as F

        columns = []
        for name, fn, arg in self._aggregates():
            function = getattr(F, _FUNCTIONS[fn])
            columns.append((function(F.lit(1)) if arg is None else function(F.col(arg))).alias(name))
        return df.groupBy(*_names(self.prop("groupByFields"))).agg(*columns)


BUILT_INS: dict[str, type[Plugin]] = {p.__name__: p for p in (File, Table, Projection, CSVParser, PythonEvaluator,
                                                               Joiner, GroupByAggregate)}


def plugin_class(name: str) -> type[Plugin]:
    """A built-in by name, or a custom plugin `module:Class`; PluginError otherwise."""
    if name in BUILT_INS:
        return BUILT_INS[name]
    if ":" not in name:
        raise PluginError(f"unknown plugin {name!r} (built-ins: {', '.join(BUILT_INS)}; a custom plugin is "
                          "'module:Class')")
    module_name, _, class_name = name.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        raise PluginError(f"custom plugin {name!r} cannot be loaded: {err}") from None
    missing = [m for m in ("configure", "prepare_run", "transform") if not callable(getattr(found, m, None))]
    if missing:
        raise PluginError(f"custom plugin {name!r} does not implement {', '.join(missing)}")
    return found
