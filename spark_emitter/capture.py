"""What the listener thread takes from the JVM for one write: the analyzed plan's JSON and the
few facts the JSON leaves out (output path, file format, output column names, file
relations' root paths, JDBC and DataSource V2 table names). Nothing here keeps a JVM object of
the plan.

Costs: each py4j round trip is ~0.05-0.2 ms on a quiet machine and a millisecond or more on a
busy one (both processes wait to be scheduled), so round trips are what the listener thread
pays for. The JSON is not returned through py4j (a JVM string over ~8 KB costs a fixed ~44 ms
there: the JVM side writes it in 8 KB pieces without TCP_NODELAY), nor fetched in slices (a
round trip each): the JVM writes it to a file the reader owns, read back from here (the JVM of a
classic session always runs on this machine). Two round trips, whatever the plan's size.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from spark_emitter.plan import Node, parse

SEP = "\u0001"
FILE_WRITE = "InsertIntoHadoopFsRelationCommand"
V2_WRITES = frozenset({"AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic"})
TABLE_WRITES = frozenset({"CreateDataSourceTableAsSelectCommand", "InsertIntoHiveTable",
                          "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand"})
WRITES = frozenset({FILE_WRITE, *V2_WRITES, *TABLE_WRITES})
QUERY_FIELD = frozenset({"CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
                         "OptimizedCreateHiveTableAsSelectCommand"})  # the query is a field, not a child
NESTED_WRITE = "file source write"  # the inner file write of a CTAS, reported again by the CTAS itself


@dataclass
class Captured:
    """One write action as the worker gets it."""

    func: str
    command: str
    plan: list[dict[str, Any]]
    end_ms: int
    duration_ms: int
    write: dict[str, Any] = field(default_factory=dict)
    relations: dict[int, dict[str, Any]] = field(default_factory=dict)  # first output exprId -> facts
    error: dict[str, str] | None = None


class JvmReader:
    """Reads plans from the JVM of one gateway; holds the JSON mapper and the file the plans'
    JSON passes through (the JVM's view of it), which `close` removes."""

    def __init__(self, jvm: Any):
        self._mapper = getattr(jvm.org.json4s.jackson, "JsonMethods$").__getattr__("MODULE$").mapper()
        shared_memory = Path("/dev/shm")
        handle, name = tempfile.mkstemp(prefix="lodestar-plan-", suffix=".json",
                                        dir=shared_memory if os.access(shared_memory, os.W_OK) else None)
        os.close(handle)
        self._plan_path = Path(name)
        self._plan_file = jvm.java.io.File(name)

    def close(self) -> None:
        self._plan_path.unlink(missing_ok=True)

    def command(self, plan: Any) -> str:
        """The plan node's name (its class's simple name): one round trip."""
        return plan.nodeName()

    def plan_json(self, plan: Any) -> list[dict[str, Any]]:
        """The plan's pre-order node list (`TreeNode.toJSON`): two round trips."""
        self._mapper.writeValue(self._plan_file, plan.jsonValue())
        return orjson.loads(self._plan_path.read_bytes())

    def capture(self, func: str, plan: Any, command: str, end_ms: int, duration_ms: int) -> Captured:
        nodes = self.plan_json(plan)
        captured = Captured(func, command, nodes, end_ms, duration_ms)
        schema = plan.query().schema().json()
        if command == FILE_WRITE:
            captured.write = {"path": plan.outputPath().toString(), "format": _format(plan.fileFormat()),
                              "columns": _output_columns(plan, nodes[0], schema)}
        elif command in V2_WRITES:
            captured.write = _v2_facts(plan.table())
        captured.write["schema"] = schema
        wanted = _relations_needing_facts(parse(nodes))
        if wanted:
            roots = [plan.query()] if command in QUERY_FIELD else [plan]
            captured.relations = self._relation_facts(roots, wanted)
        return captured

    def _relation_facts(self, roots: list[Any], wanted: set[int]) -> dict[int, dict[str, Any]]:
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


def _output_columns(plan: Any, command: dict[str, Any], schema: str) -> str:
    """The written column names, joined by SEP. The JSON renders them as one string, `[a, b]`,
    ambiguous when a name holds ", ": when that string is exactly the query's column names so
    rendered and no name holds ", ", they are the names (a file write has one per query column),
    and the two round trips that fetch them are saved."""
    names = [column["name"] for column in orjson.loads(schema)["fields"]]
    if command.get("outputColumnNames") == f"[{', '.join(names)}]" and not any(", " in name for name in names):
        return SEP.join(names)
    return plan.outputColumnNames().mkString(SEP)


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
