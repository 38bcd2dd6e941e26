"""A custom pipeline plugin (the field-lineage seed's IdGenerator): adds a field `output` (default
`id`), a stable id made from the field `field`, and records that one operation."""

from __future__ import annotations

from typing import Any

from spark_emitter.pipeline import FieldTransform, PluginError


class IdGenerator:
    types = ("transform",)
    required = ("field",)
    optional = ("output",)
    keeps_rows = True  # one record out per record in (lets the runner carry row counts across it)
    properties: dict[str, Any]  # set by the runner, with the stage

    def configure(self, input_fields: list[str] | None) -> list[str] | None:
        source = self.properties["field"]
        if input_fields is not None and source not in input_fields:
            raise PluginError(f"field: {source!r} is not an input field")
        output = self.properties.get("output") or "id"
        return None if input_fields is None else [output, *(f for f in input_fields if f != output)]

    def prepare_run(self, context: Any) -> None:
        output = self.properties.get("output") or "id"
        context.record([FieldTransform("create", "generated unique id", [self.properties["field"]], [output])])

    def transform(self, df: Any) -> Any:
        from pyspark.sql import functions as F

        output = self.properties.get("output") or "id"
        return df.select(F.sha1(F.col(self.properties["field"])).substr(1, 16).alias(output),
                         *[c for c in df.columns if c != output])
