"""Column lineage of one write, from its analyzed plan.

The plan is walked bottom-up. Every node yields its output columns in order, each column a
`Ref`: the field of the operation that produced it. A relation's columns come from a READ of
its dataset; an alias of an expression, an aggregate, a window function, a generator's
output, a union's column or an expansion with several inputs is a TRANSFORM (named after the
expression: `concat`, `sum`, `cast`, the UDF's name, ...) whose inputs are the columns the
expression refers to, including the outputs of its subqueries; a plain reference passes the
child's column through (a rename is a TRANSFORM of label `rename`, an identity). Conditions
of filters and joins and grouping keys are control operations (`filter`, `join`, `group by`):
their columns are recorded as such, not as sources of any value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from spark_emitter.plan import Node, attributes, parse, subquery_plans
from spark_emitter.urns import Dataset

READ, TRANSFORM = "READ", "TRANSFORM"
IDENTITY = "identity"
# expressions that pick a part of their child: the transformation is named after the child
_EXTRACTORS = {"GetArrayItem", "GetStructField", "GetMapValue", "GetArrayStructFields", "ElementAt",
               "KnownNotNull", "KnownFloatingPointNormalized", "PromotePrecision", "CheckOverflow",
               "AggregateExpression", "Alias", "WindowExpression", "ScalarSubquery"}
_LABELS = {"PythonUDF": "name", "ScalaUDF": "udfName", "ScalaUDAF": "udafName"}  # field naming the function
# Spark's names where the class says otherwise
_NAMES = {"StringSplit": "split", "Average": "avg", "RegExpReplace": "regexp_replace",
          "RegExpExtract": "regexp_extract", "UnaryMinus": "negative", "ScalarSubquery": IDENTITY}
# nodes whose output is their (first) child's output, values unchanged
_PASS_THROUGH = {"SubqueryAlias", "View", "Sort", "Distinct", "Deduplicate", "DeduplicateWithinWatermark",
                 "GlobalLimit", "LocalLimit", "Limit", "Offset", "Tail", "Sample", "Repartition",
                 "RepartitionByExpression", "RebalancePartitions", "ResolvedHint", "WithCTE", "Subquery",
                 "CollectMetrics", "EventTimeWatermark", "Intersect", "Except", "ReturnAnswer"}
LOCAL_RELATIONS = {"LocalRelation", "LogicalRDD", "Range", "ExternalRDD"}


@dataclass(eq=False)
class Operation:
    """A READ (of `dataset`) or a TRANSFORM (of `inputs` into the field `output`; none for a control)."""

    kind: str
    label: str
    output: str | None = None
    inputs: list[Ref] = field(default_factory=list)
    dataset: Dataset | None = None
    identity: bool = False


@dataclass(frozen=True, eq=False)
class Ref:
    """A column: the field `name` of operation `op`."""

    op: Operation
    name: str


@dataclass(frozen=True)
class Edge:
    """An output column derived from a source column through `operations` (in order applied)."""

    column: str
    source: Dataset
    source_field: str
    operations: tuple[str, ...]

    @property
    def transform(self) -> str:
        return ",".join(self.operations) or IDENTITY


@dataclass(frozen=True)
class ControlUse:
    """Source columns used only to decide which rows flow (`filter`, `join`, `group by`)."""

    label: str
    source: Dataset
    source_field: str


@dataclass
class WriteLineage:
    """What one write did: its target and columns, what it read, and how each column came to be."""

    target: Dataset
    columns: list[Ref]
    operations: list[Operation]  # every operation, in creation order (inputs before users)
    controls: list[Operation]

    @property
    def sources(self) -> list[Dataset]:
        seen: dict[str, Dataset] = {}
        for op in self.operations:
            if op.kind == READ and op.dataset is not None:
                seen.setdefault(op.dataset.urn, op.dataset)
        return list(seen.values())

    def edges(self) -> list[Edge]:
        """Per output column, each source column it derives from and the operations between."""
        memo: dict[int, set[tuple[Dataset, str, tuple[str, ...]]]] = {}
        out: list[Edge] = []
        for ref in self.columns:
            for source, name, chain in sorted(_paths(ref, memo), key=lambda p: (p[0].urn, p[1], p[2])):
                out.append(Edge(ref.name, source, name, chain))
        return out

    def control_uses(self) -> list[ControlUse]:
        memo: dict[int, set[tuple[Dataset, str, tuple[str, ...]]]] = {}
        uses = {ControlUse(op.label, source, name)
                for op in self.controls for ref in op.inputs for source, name, _ in _paths(ref, memo)}
        return sorted(uses, key=lambda u: (u.label, u.source.urn, u.source_field))


def _paths(ref: Ref, memo: dict) -> set[tuple[Dataset, str, tuple[str, ...]]]:
    key = id(ref.op), ref.name
    if key in memo:
        return memo[key]
    op = ref.op
    if op.kind == READ:
        result = {(op.dataset, ref.name, ())}
    else:
        memo[key] = set()  # a cycle cannot occur in a plan; this only guards the recursion
        step = () if op.identity else (op.label,)
        result = {(source, name, chain + step) for inp in op.inputs for source, name, chain in _paths(inp, memo)}
    memo[key] = result
    return result


def label_of(expr: Node) -> str:
    """The transformation an expression performs, named after its outermost function."""
    while expr.cls in _EXTRACTORS and expr.children:
        expr = expr.children[0]
    if expr.cls in _LABELS and isinstance(expr.get(_LABELS[expr.cls]), str):
        return expr.get(_LABELS[expr.cls])
    if expr.cls == "Literal":
        return "literal"
    if expr.cls in ("AttributeReference", "OuterReference"):
        return IDENTITY
    if expr.cls in _NAMES:
        return _NAMES[expr.cls]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", expr.cls).lower()


Resolver = Callable[[Node, str | None], Dataset | None]


class Analyzer:
    """Walks one plan; `resolve(relation node, view name)` names the dataset of a leaf relation."""

    def __init__(self, resolve: Resolver):
        self.resolve = resolve
        self.operations: list[Operation] = []
        self.controls: list[Operation] = []
        self._reads: dict[str, Operation] = {}
        self._ctes: dict[int, list[Ref]] = {}

    def write(self, target: Dataset, query: Node, column_names: list[str] | None = None) -> WriteLineage:
        """The lineage of writing `query`'s output to `target` (columns renamed by position)."""
        columns = self.visit(query, {})
        refs = [ref for _, ref in columns]
        if column_names and len(column_names) == len(refs):
            refs = [self._rename(ref, name) for ref, name in zip(refs, column_names, strict=True)]
        return WriteLineage(target, refs, self.operations, self.controls)

    # plans

    def visit(self, node: Node, outer: dict[int, Ref], view: str | None = None) -> list[tuple[int, Ref]]:
        """The output columns of `node` as (expression id, Ref), in order."""
        cls = node.cls
        if cls in ("SubqueryAlias", "View"):
            name = _alias_name(node)
            return self.visit(node.children[0], outer, name or view) if node.children else []
        if cls == "WithCTE":
            for definition in node.children[1:]:
                self._ctes[definition.get("id")] = [r for _, r in self.visit(definition, outer, view)]
            return self.visit(node.children[0], outer, view)
        if cls == "CTERelationDef":
            return self.visit(node.children[0], outer, view)
        if cls == "CTERelationRef":
            refs = self._ctes.get(node.get("cteId"), [])
            return [(a.expr_id, r) for a, r in zip(node.trees("output"), refs, strict=False)]
        if not node.children:
            return self._relation(node, view)
        inputs = [self.visit(child, outer, view) for child in node.children]
        scope = {**outer, **{i: r for child in inputs for i, r in child}}
        if cls in ("Project", "Aggregate"):
            if cls == "Aggregate":
                keys = node.trees("groupingExpressions")
                if keys:
                    self._control("group by", keys, scope)
            items = node.trees("projectList" if cls == "Project" else "aggregateExpressions")
            return [self._named(expr, scope) for expr in items]
        if cls == "Filter":
            self._control("filter", node.trees("condition"), scope)
            return inputs[0]
        if cls in ("Join", "LateralJoin"):
            self._control("join", node.trees("condition"), scope)
            join_type = str((node.get("joinType") or {}).get("object", node.get("joinType")))
            return inputs[0] if "Semi" in join_type or "Anti" in join_type else inputs[0] + inputs[1]
        if cls == "Union":
            return [self._union(column, [child[i] for child in inputs[1:] if i < len(child)])
                    for i, column in enumerate(inputs[0])]
        if cls == "Window":  # a window function's inputs include its partition and order columns
            return inputs[0] + [self._named(expr, scope) for expr in node.trees("windowExpressions")]
        if cls == "Generate":
            return self._generate(node, inputs[0], scope)
        if cls == "Expand":
            return self._expand(node, scope)
        if cls in _PASS_THROUGH:
            return inputs[0]
        # an unknown node: its columns that a child produced keep their lineage
        ids = [a.expr_id for a in node.trees("output")]
        return [(i, scope[i]) for i in ids if i in scope] if ids else inputs[0]

    def _relation(self, node: Node, view: str | None) -> list[tuple[int, Ref]]:
        columns = [a for a in node.trees("output") if a.expr_id is not None]
        dataset = self.resolve(node, view if node.cls in LOCAL_RELATIONS else None)
        if dataset is None:
            return []
        read = self._reads.get(dataset.urn)
        if read is None:
            read = self._reads[dataset.urn] = Operation(READ, "read", dataset=dataset)
            self.operations.append(read)
        return [(a.expr_id, Ref(read, a.get("name"))) for a in columns]

    # expressions

    def _named(self, expr: Node, scope: dict[int, Ref]) -> tuple[int, Ref]:
        name = expr.get("name")
        inner = expr.children[0] if expr.cls == "Alias" and expr.children else expr
        if inner.cls == "AttributeReference" and inner.expr_id in scope:
            return expr.expr_id, self._rename(scope[inner.expr_id], name)
        label = label_of(inner)
        return expr.expr_id, self._transform(label, name, self._inputs([inner], scope), identity=label == IDENTITY)

    def _inputs(self, exprs: Iterable[Node], scope: dict[int, Ref]) -> list[Ref]:
        refs: list[Ref] = []
        for expr in exprs:
            refs.extend(scope[a.expr_id] for a in attributes(expr) if a.expr_id in scope)
            for plan in subquery_plans(expr):
                refs.extend(ref for _, ref in self.visit(plan, scope))
        return _unique(refs)

    def _transform(self, label: str, name: str | None, inputs: list[Ref], identity: bool = False) -> Ref:
        op = Operation(TRANSFORM, label, name, inputs, identity=identity)
        self.operations.append(op)
        return Ref(op, name)

    def _rename(self, ref: Ref, name: str) -> Ref:
        return ref if ref.name == name else self._transform("rename", name, [ref], identity=True)

    def _control(self, label: str, exprs: list[Node], scope: dict[int, Ref]) -> None:
        inputs = self._inputs(exprs, scope)
        if inputs:
            op = Operation(TRANSFORM, label, None, inputs)
            self.operations.append(op)
            self.controls.append(op)

    def _union(self, first: tuple[int, Ref], others: list[tuple[int, Ref]]) -> tuple[int, Ref]:
        refs = _unique([first[1], *(ref for _, ref in others)])
        if len(refs) == 1:
            return first
        return first[0], self._transform("union", first[1].name, refs, identity=True)

    def _generate(self, node: Node, child: list[tuple[int, Ref]], scope: dict[int, Ref]) -> list[tuple[int, Ref]]:
        generator = node.tree("generator")
        inputs = self._inputs([generator], scope) if generator else []
        label = label_of(generator) if generator else "generate"
        required = child
        unrequired = node.get("unrequiredChildIndex") or []
        if isinstance(unrequired, list) and unrequired:
            required = [c for i, c in enumerate(child) if i not in set(unrequired)]
        return required + [(a.expr_id, self._transform(label, a.get("name"), inputs))
                           for a in node.trees("generatorOutput")]

    def _expand(self, node: Node, scope: dict[int, Ref]) -> list[tuple[int, Ref]]:
        outputs = node.trees("output")
        projections = [[_tree(e) for e in row] for row in node.get("projections") or []]
        columns = []
        for i, attr in enumerate(outputs):
            refs = self._inputs([row[i] for row in projections if i < len(row) and row[i] is not None], scope)
            if len(refs) == 1:
                columns.append((attr.expr_id, self._rename(refs[0], attr.get("name"))))
            else:
                columns.append((attr.expr_id, self._transform("expand", attr.get("name"), refs)))
        return columns


def _tree(value: object) -> Node | None:
    return parse(value) if isinstance(value, list) and value and isinstance(value[0], dict) else None


def _alias_name(node: Node) -> str | None:
    if node.cls == "SubqueryAlias":
        return (node.get("identifier") or {}).get("name")
    return ((node.get("desc") or {}).get("identifier") or {}).get("table")


def _unique(refs: Iterable[Ref]) -> list[Ref]:
    seen: set[tuple[int, str]] = set()
    out = []
    for ref in refs:
        key = (id(ref.op), ref.name)
        if key not in seen:
            seen.add(key)
            out.append(ref)
    return out
