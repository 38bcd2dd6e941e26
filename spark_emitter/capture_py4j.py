"""`PlanReader` over plain Py4J calls: a round trip per fact (about 12 for a file write), for a
driver JVM that cannot compile `PlanCapture.java` (a JRE without javac)."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from spark_emitter.capture import FILE_WRITE, QUERY_FIELD, SEP, V2_WRITES, WRITES, Plan, PlanReader, ReadPlan
from spark_emitter.plan import Node, parse


class Py4jPlanReader(PlanReader):
    """Reads each fact with a Py4J call, all on the listener thread; the plan's JSON through a file
    of the reader's directory (two round trips)."""

    def __init__(self, jvm: Any):
        super().__init__()
        self._mapper = getattr(jvm.org.json4s.jackson, "JsonMethods$").__getattr__("MODULE$").mapper()
        self._plan_path = self.directory / "plan.json"
        self._plan_file = jvm.java.io.File(str(self._plan_path))

    def start(self, execution: Any) -> ReadPlan | None:
        plan = self._read(execution)
        return None if plan is None else ReadPlan(plan)

    def _read(self, execution: Any) -> Plan | None:
        analyzed = execution.analyzed()
        command = analyzed.nodeName()
        if command not in WRITES:
            return None
        self._mapper.writeValue(self._plan_file, analyzed.jsonValue())
        nodes = orjson.loads(self._plan_path.read_bytes())
        plan = Plan(command, execution.id(), nodes)
        schema = analyzed.query().schema().json()
        if command == FILE_WRITE:
            plan.write = {"path": analyzed.outputPath().toString(), "format": _format(analyzed.fileFormat()),
                          "columns": _output_columns(analyzed, nodes[0], schema)}
        elif command in V2_WRITES:
            plan.write = _v2_facts(analyzed.table())
        plan.write["schema"] = schema
        wanted = _relations_needing_facts(parse(nodes))
        if wanted:
            roots = [analyzed.query()] if command in QUERY_FIELD else [analyzed]
            plan.relations = _relation_facts(roots, wanted)
        return plan


def _relation_facts(roots: list[Any], wanted: set[int]) -> dict[int, dict[str, Any]]:
    facts: dict[int, dict[str, Any]] = {}
    pending = list(roots)
    while pending and len(facts) < len(wanted):
        root = pending.pop(0)
        leaves = root.collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            kind = leaf.getClass().getSimpleName()
            if kind not in ("LogicalRelation", "DataSourceV2Relation"):
                continue
            output = leaf.output()
            if output.isEmpty():
                continue
            expr_id = output.head().exprId().id()
            if expr_id in wanted and expr_id not in facts:
                facts[expr_id] = _leaf_facts(leaf, kind)
        if len(facts) < len(wanted):
            subqueries = root.subqueriesAll()
            pending.extend(subqueries.apply(i) for i in range(subqueries.size()))
    return facts


def _output_columns(plan: Any, command: dict[str, Any], schema: str) -> list[str]:
    """The written column names. The JSON renders them as one string, `[a, b]`, ambiguous when a
    name holds ", ": when that string is exactly the query's column names so rendered and no name
    holds ", ", they are the names (a file write has one per query column), and the two round
    trips that fetch them are saved."""
    names = [column["name"] for column in orjson.loads(schema)["fields"]]
    if command.get("outputColumnNames") == f"[{', '.join(names)}]" and not any(", " in name for name in names):
        return names
    joined = plan.outputColumnNames().mkString(SEP)
    return joined.split(SEP) if joined else []


def _format(file_format: Any) -> str:
    try:
        return file_format.shortName()
    except Exception:  # a format that is not a registered data source has no short name
        return file_format.toString().lower()


def _leaf_facts(leaf: Any, kind: str) -> dict[str, Any]:
    if kind == "DataSourceV2Relation":
        return {"kind": "v2", **_v2_facts(leaf)}
    relation = leaf.relation()
    relation_class = relation.getClass().getSimpleName()
    if relation_class == "HadoopFsRelation":
        return {"kind": "files", "paths": relation.location().rootPaths().mkString(SEP).split(SEP),
                "format": _format(relation.fileFormat())}
    if relation_class == "JDBCRelation":
        options = relation.jdbcOptions()
        return {"kind": "jdbc", "url": options.url(), "table": options.tableOrQuery()}
    return {"kind": "other", "name": relation_class}


def _v2_facts(relation: Any) -> dict[str, Any]:
    """A DataSource V2 relation's table name and, when a catalog resolved it, the catalog's name and
    the identifier's namespace and name (about ten round trips): `name()` alone is whatever the
    table says (`db2.T` may be catalog `db2`'s table `T`, or a table of namespace `db2`)."""
    facts: dict[str, Any] = {"name": relation.name()}
    with contextlib.suppress(Exception):  # a NamedRelation that is not a DataSourceV2Relation
        catalog, identifier = relation.catalog(), relation.identifier()
        if catalog.isDefined() and identifier.isDefined():
            identifier = identifier.get()
            facts.update(catalog=catalog.get().name(), namespace=list(identifier.namespace()),
                         table=identifier.name())
    return facts


def _relations_needing_facts(root: Node) -> set[int]:
    """First output exprIds of the relations the JSON does not name: file, JDBC and V2 relations."""
    wanted: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if (node.cls == "LogicalRelation" and "catalogTable" not in node.fields) or node.cls == "DataSourceV2Relation":
            output = node.trees("output")
            if output and output[0].expr_id is not None:
                wanted.add(output[0].expr_id)
        stack.extend(node.children)
        stack.extend(tree for _, tree in node.nested_trees())  # expressions, and the subqueries in them
    return wanted
