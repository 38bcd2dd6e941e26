"""What the listener takes from the JVM for one write action (`Plan`), and the port that takes
it (`PlanReader`): the analyzed plan's JSON and the few facts the JSON leaves out (output path,
file format, output column names, file relations' root paths, JDBC and DataSource V2 table
names). Nothing here keeps a JVM object of the plan.

A reader's `start` runs on Spark's listener thread, which every listener of the session shares,
and the pending plan's `result` on the listener's worker thread: what `start` leaves to `result`
costs Spark nothing. Two adapters: `capture_compiled.CompiledPlanReader` (a class the driver JVM
compiles reads the plan on a JVM thread of its own; `start` is one Py4J round trip that hands it
the action) and `capture_py4j.Py4jPlanReader` (a round trip per fact, all in `start`; for a JVM
without a compiler). Round trips are what the listener thread pays for: each is ~0.05-0.2 ms on
a quiet machine and a millisecond or more on a busy one (both processes wait to be scheduled).

The plan's JSON is not returned through Py4J (a JVM string over ~8 KB costs a fixed ~44 ms there:
the JVM side writes it in 8 KB pieces without TCP_NODELAY): the JVM writes it to a file in the
reader's directory, read back from here (the JVM of a classic session always runs on this
machine).
"""

from __future__ import annotations

import os
import shutil
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


class PendingPlan(ABC):
    """A write action's plan being read."""

    @abstractmethod
    def result(self) -> Plan:
        """The plan, once read (raises what reading it raised)."""

    @abstractmethod
    def discard(self) -> None:
        """The plan will not be asked for (e.g. the listener's queue was full)."""


class ReadPlan(PendingPlan):
    """A plan read already."""

    def __init__(self, plan: Plan):
        self._plan = plan

    def result(self) -> Plan:
        return self._plan

    def discard(self) -> None:
        pass


@dataclass
class Captured:
    """One write action as the worker gets it."""

    func: str
    plan: PendingPlan
    end_ms: int
    duration_ms: int
    error: dict[str, str] | None = None


class PlanReader(ABC):
    """Reads finished actions' plans from the JVM of one gateway, through files in a directory of
    its own that the JVM writes the plans' JSON to (`close` removes it)."""

    def __init__(self) -> None:
        shared_memory = Path("/dev/shm")
        self.directory = Path(tempfile.mkdtemp(
            prefix="lodestar-plans-", dir=shared_memory if os.access(shared_memory, os.W_OK) else None))

    @abstractmethod
    def start(self, execution: Any) -> PendingPlan | None:
        """Begin reading the plan of a finished action (a JVM QueryExecution), on Spark's listener
        thread; None when it is not a write in WRITES."""

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
