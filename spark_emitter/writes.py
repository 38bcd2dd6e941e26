"""One write action's plan -> its target, sources and column lineage (`WriteLineage`)."""

from __future__ import annotations

from typing import Any

import orjson

from spark_emitter.capture import FILE_WRITE, QUERY_FIELD, V2_WRITES, Plan
from spark_emitter.lineage import LOCAL_RELATIONS, Analyzer, WriteLineage
from spark_emitter.plan import Node, parse
from spark_emitter.urns import Dataset, Naming


def analyze(plan: Plan, naming: Naming) -> WriteLineage | None:
    """The lineage of a write; None for a plan that is not a write Lodestar names."""
    root = parse(plan.nodes)
    write = plan.write
    columns: list[str] | None = None
    if root.cls == FILE_WRITE:
        table = root.get("catalogTable")
        platform, name = (naming.table(_identifier(table)) if table
                          else naming.path(write["path"], write.get("format")))
        query = root.children[0]
        columns = write.get("columns") or None
        properties = {"format": write.get("format", ""), "path": write.get("path", "")}
    elif root.cls in V2_WRITES:
        platform, name = _v2(naming, write)
        query, properties = root.children[0], {"table": write["name"]}
    else:
        table = root.get("table") or root.get("tableDesc")
        if not isinstance(table, dict):
            return None
        platform, name = naming.table(_identifier(table))
        query = root.tree("query") if root.cls in QUERY_FIELD else (root.children or [None])[0]
        properties = {"format": str(table.get("provider") or "")}
    if query is None:
        return None
    schema = _schema(write.get("schema"), columns)
    target = Dataset(platform, name, naming.env, schema, tuple(sorted(properties.items())))
    return Analyzer(_Resolver(naming, plan.relations)).write(target, query, [c for c, _ in schema])


class _Resolver:
    """Names the dataset of a leaf relation from its JSON and the facts captured for it."""

    def __init__(self, naming: Naming, facts: dict[int, dict[str, Any]]):
        self.naming, self.facts = naming, facts

    def __call__(self, node: Node, view: str | None) -> Dataset | None:
        output = node.trees("output")
        schema = tuple((a.get("name"), _type_name(a.get("dataType"))) for a in output)
        facts = self.facts.get(output[0].expr_id, {}) if output else {}
        properties: dict[str, str] = {}
        if node.cls in LOCAL_RELATIONS:
            platform, name = self.naming.local([c for c, _ in schema], view)
        elif node.cls == "LogicalRelation" and node.get("catalogTable"):
            platform, name = self.naming.table(_identifier(node.get("catalogTable")))
        elif node.cls == "HiveTableRelation" and node.get("tableMeta"):
            platform, name = self.naming.table(_identifier(node.get("tableMeta")))
        elif facts.get("kind") == "files":
            platform, name = self.naming.path(facts["paths"][0], facts.get("format"))
            properties = {"format": facts.get("format", ""), "path": ",".join(facts["paths"])}
        elif facts.get("kind") == "jdbc":
            platform, name = self.naming.jdbc(facts["url"], facts["table"])
            properties = {"format": "jdbc"}
        elif facts.get("kind") == "v2":
            platform, name = _v2(self.naming, facts)
        else:
            return None
        return Dataset(platform, name, self.naming.env, schema, tuple(sorted(properties.items())))


def _identifier(table: dict[str, Any]) -> list[str]:
    ident = table.get("identifier") or {}
    return [ident.get("catalog") or "", ident.get("database") or "", ident.get("table") or ""]


def _v2(naming: Naming, facts: dict[str, Any]) -> tuple[str, str]:
    """A V2 table of a catalog is named by its catalog and identifier (the session catalog's as
    `saveAsTable` names it); a table without a catalog (the `noop` sink, a path-based source) by
    its `name()` on platform `spark`."""
    if facts.get("catalog"):
        return naming.table([*facts.get("namespace", []), facts["table"]], facts["catalog"])
    return "spark", facts["name"]


def _schema(struct_json: str | None, names: list[str] | None) -> tuple[tuple[str, str], ...]:
    """The written columns (name, Spark type): the query's schema, renamed by position when given."""
    fields = orjson.loads(struct_json)["fields"] if struct_json else []
    out = [(f["name"], _type_name(f["type"])) for f in fields]
    if names and len(names) == len(out):
        out = [(n, t) for n, (_, t) in zip(names, out, strict=True)]
    return tuple(out)


def _type_name(data_type: Any) -> str:
    if data_type is None:
        return "unknown"
    if isinstance(data_type, str):
        return data_type
    return orjson.dumps(data_type).decode()
