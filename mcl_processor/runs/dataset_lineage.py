"""Dataset lineage over time, as CDAP computes it: a breadth-first search over the access rows
of the runs that ran during a window, from a dataset (or a program) to the programs that
accessed it and on to the datasets those programs accessed, `levels` times. UNKNOWN accesses
are dropped where the same data, program and run has a known one; `rollup` puts workflow runs
in place of the program runs they enclosed; `collapse` merges relations that differ only in
access, run or component."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from mcl_processor.runs import RunLineageStore
from mcl_processor.runs.model import UNKNOWN, Access, Window

COLLAPSE = ("access", "run", "component")


@dataclass
class Relation:
    """Data accessed by a program: the accesses, runs and components of the merged rows."""

    data: str
    program: str
    accesses: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)
    components: set[str] = field(default_factory=set)


def dataset_lineage(store: RunLineageStore, root: str, window: Window, levels: int = 10,
                    collapse: Collection[str] = (), rollup: bool = False, from_program: bool = False) -> list[Relation]:
    """The relations reached from `root` within `levels` hops, sorted. With `from_program` the
    root is a program: its runs' accesses are the first hop, and the walk goes on from their data."""
    rows: set[Access] = set()
    seen_data: set[str] = set()
    seen_programs: set[str] = set()
    data, programs = (set(), {root}) if from_program else ({root}, set())
    for _ in range(levels):
        if data:
            seen_data |= data
            found = store.accesses(data, "dataset", window)
            rows.update(found)
            programs = {a.program for a in found if a.program} - seen_programs
        seen_programs |= programs
        found = store.accesses(programs, "program", window) if programs else []
        rows.update(found)
        data = {a.dataset for a in found} - seen_data
        if not data:
            break
    rows = _known(rows)
    if rollup:
        rows = _rolled_up(store, rows)
    return _merged(rows, set(collapse))


def _known(rows: set[Access]) -> set[Access]:
    known = {(a.dataset, a.program, a.run) for a in rows if a.access != UNKNOWN}
    return {a for a in rows if a.access != UNKNOWN or (a.dataset, a.program, a.run) not in known}


def _rolled_up(store: RunLineageStore, rows: set[Access]) -> set[Access]:
    """Rows of runs inside a workflow run become rows of the workflow run and its program."""
    runs = store.runs({a.run for a in rows})
    parents = store.runs({r.parent for r in runs.values() if r.parent})
    out = set()
    for a in rows:
        run = runs.get(a.run)
        parent = parents.get(run.parent) if run and run.parent else None
        if parent is not None and parent.program:
            a = Access(a.dataset, parent.urn, parent.program, a.access, a.component, a.start_ms, a.end_ms)
        out.add(a)
    return out


def _merged(rows: set[Access], collapse: set[str]) -> list[Relation]:
    merged: dict[tuple[str, ...], Relation] = {}
    for a in rows:
        key = (a.dataset, a.program, "" if "access" in collapse else a.access, "" if "run" in collapse else a.run,
               "" if "component" in collapse else a.component)
        relation = merged.setdefault(key, Relation(a.dataset, a.program))
        relation.accesses.add(a.access)
        relation.runs.add(a.run)
        if a.component:
            relation.components.add(a.component)
    return [merged[key] for key in sorted(merged)]
