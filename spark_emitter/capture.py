"""What the listener thread takes from the JVM for one write action (`Plan`), and the port that
takes it (`PlanReader`): the analyzed plan's JSON and the few facts the JSON leaves out (output
path, file format, output column names, file relations' root paths, JDBC and DataSource V2 table
names). Nothing here keeps a JVM object of the plan.

Two adapters: `capture_compiled.CompiledPlanReader` (one Py4J round trip per action, its reading
done inside the JVM by a class the driver JVM compiles) and `capture_py4j.Py4jPlanReader` (a
round trip per fact; for a JVM without a compiler). Round trips are what Spark's listener thread
pays for: each is ~0.05-0.2 ms on a quiet machine and a millisecond or more on a busy one (both
processes wait to be scheduled).

The plan's JSON is not returned through Py4J (a JVM string over ~8 KB costs a fixed ~44 ms there:
the JVM side writes it in 8 KB pieces without TCP_NODELAY): the JVM writes it to a file the
reader owns, read back from here (the JVM of a classic session always runs on this machine).
"""

from __future__ import annotations

import os
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
class Plan:
    """One write action's plan, as a reader takes it from the JVM.

    `write` holds the query's `schema` (Spark's struct JSON) and, for a file write, its `path`,
    `format` and `columns` (names), for a V2 write its table's `name` (and `catalog`, `namespace`,
    `table` when a catalog resolved it). `relations` maps a leaf relation's first output exprId to
    what the JSON does not say of it: `kind` files (`paths`, `format`), jdbc (`url`, `table`), v2
    (as a V2 write's table) or other (`name`); at least the file, JDBC and V2 relations are there."""

    command: str
    execution_id: int
    nodes: list[dict[str, Any]]  # the analyzed plan's pre-order node list (TreeNode.toJSON)
    write: dict[str, Any] = field(default_factory=dict)
    relations: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Captured:
    """One write action as the worker gets it."""

    func: str
    plan: Plan
    end_ms: int
    duration_ms: int
    error: dict[str, str] | None = None


class PlanReader(ABC):
    """Reads finished actions' plans from the JVM of one gateway, through a file of its own that
    the JVM writes the plans' JSON to (`close` removes it)."""

    def __init__(self) -> None:
        shared_memory = Path("/dev/shm")
        handle, name = tempfile.mkstemp(prefix="lodestar-plan-", suffix=".json",
                                        dir=shared_memory if os.access(shared_memory, os.W_OK) else None)
        os.close(handle)
        self.plan_path = Path(name)

    @abstractmethod
    def read(self, execution: Any) -> Plan | None:
        """The plan of a finished action (a JVM QueryExecution); None when it is not a write in WRITES."""

    def close(self) -> None:
        self.plan_path.unlink(missing_ok=True)
