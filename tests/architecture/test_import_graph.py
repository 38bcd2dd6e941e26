"""The packages' dependencies point one way, and no modules import each other in a circle.

Every `import` counts, also those inside functions: a deferred import hides a cycle from
Python's loader, not from a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Lowest first: a package may import its own modules and those of packages on lower layers.
LAYERS: Mapping[str, int] = {
    "schemas": 0,
    "ingest": 1,
    "gms": 2,
    "spark_emitter": 2,
    "mcl_processor": 3,
    "lodestar": 4,
}

Graph = dict[str, set[str]]


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages under root."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imported_names(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(found: Mapping[str, Path]) -> Graph:
    """Module -> the project modules it imports (a name imported from a package counts as the
    package, a submodule imported from it as the submodule)."""
    graph: Graph = {}
    for module, path in found.items():
        targets = set()
        for name in _imported_names(module, path):
            while name and name not in found:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward_imports(graph: Graph, layers: Mapping[str, int]) -> list[str]:
    """Imports of a package from a higher layer, or from another package on the same layer."""
    wrong = []
    for module, targets in sorted(graph.items()):
        own = module.split(".")[0]
        for target in sorted(targets):
            other = target.split(".")[0]
            if other != own and layers[other] >= layers[own]:
                wrong.append(f"{module} imports {target}")
    return wrong


def _project_graph() -> Graph:
    return import_graph(modules(ROOT, LAYERS))


def test_no_modules_import_each_other_in_a_circle():
    assert cycles(_project_graph()) == []


def test_no_package_imports_one_above_it_or_beside_it():
    assert upward_imports(_project_graph(), LAYERS) == []


def test_every_top_level_package_has_a_layer():
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages == set(LAYERS)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_find_a_cycle_through_a_deferred_import_and_an_upward_import(tmp_path: Path):
    _write(tmp_path, {
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from low import b\n",
        "low/b.py": "from .a import f\n",
        "high/__init__.py": "",
        "high/c.py": "import low.b\n",
        "low/d.py": "from high.c import x\n",
    })
    graph = import_graph(modules(tmp_path, ["low", "high"]))
    assert cycles(graph) == [["low.a", "low.b"]]
    assert upward_imports(graph, {"low": 0, "high": 1}) == ["low.d imports high.c"]
