"""PATCH: RFC 6902 JSON Patch, with the keyed array paths of DataHub's patch builders.

DataHub's builders address an array's elements by key, not by index:

- a GenericJsonPatch envelope, `{"arrayPrimaryKeys": {"tags": ["attribution\u241fsource", "tag"]},
  "patch": [ops]}`, names the fields that key each array's elements (U+241F separates the
  names of a nested field: `attribution.source`); `/tags/<source>/<tag urn>` is then the
  element with those key values (an element without a key field has the key "");
- a plain list of ops uses the keys DataHub's server gives some aspects' arrays (`TEMPLATES`):
  `/upstreams/<dataset urn>`, `/owners/<owner>/<type>`, `/siblings/<urn>`,
  `/fineGrainedLineages/<transform>/<downstream>/<query>/<upstream>`, ...

Each keyed array an op goes into is turned into a map view (objects nested one level per key
field, keyed by the elements' key values, in their order; keyed arrays inside its elements too),
the ops are applied to the views with `jsonpatch`, and each view is turned back into an array
(elements in their order, added ones last; key fields an added element lacks are filled from its
path). Inside a view an `add` makes the levels it needs, a `remove` of what is not there does
nothing (a builder's patch applies again without failing), and `*` in a remove path stands for
every key at its level. A path whose segment after an array is an index or `-` (`/tags/0`) is
plain RFC 6902 on the array, as before. Path segments are JSON Pointer tokens (`~1` is `/`, `~0`
is `~`). A patch of an aspect that does not exist applies to the aspect's default value
(`default_value`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from gms.errors import ProposalFailed

SEPARATOR = "\u241f"  # between the names of a nested key field, as DataHub's builders write them
OPS = ("add", "remove", "replace", "move", "copy", "test")
MAX_OPS = 10_000  # ops of one patch
AUDIT_STAMP = "com.linkedin.common.AuditStamp"
FINE_GRAINED = "fineGrained"


@dataclass(frozen=True)
class Keys:
    """How an array's elements are keyed: by these fields of each element (nested names
    separated by SEPARATOR), or by the element itself when `fields` is empty (arrays of URNs);
    `nested`: keyed arrays inside each element, by their path in it; `special` names a
    conversion of its own (FINE_GRAINED)."""

    fields: tuple[str, ...] = ()
    nested: Mapping[tuple[str, ...], Keys] = field(default_factory=dict)
    special: str | None = None

    @property
    def depth(self) -> int:
        return 4 if self.special == FINE_GRAINED else max(1, len(self.fields))


_EDGE = Keys(("destinationUrn",))
_URNS = Keys()
_FINE_GRAINED = Keys(special=FINE_GRAINED)
_TAGS, _TERMS = Keys(("tag",)), Keys(("urn",))
#: The keyed arrays of aspects whose plain patches DataHub's builders key (its server's templates).
TEMPLATES: Mapping[str, Mapping[tuple[str, ...], Keys]] = {
    "globalTags": {("tags",): _TAGS},
    "glossaryTerms": {("terms",): _TERMS},
    "ownership": {("owners",): Keys(("owner", "type"))},
    "upstreamLineage": {("upstreams",): Keys(("dataset",)), ("fineGrainedLineages",): _FINE_GRAINED},
    "editableSchemaMetadata": {("editableSchemaFieldInfo",): Keys(("fieldPath",), {
        ("globalTags", "tags"): _TAGS, ("glossaryTerms", "terms"): _TERMS})},
    "institutionalMemory": {("elements",): Keys(("url",))},
    "siblings": {("siblings",): _URNS},
    "domains": {("domains",): _URNS},
    "structuredProperties": {("properties",): Keys(("propertyUrn",))},
    "dataJobInputOutput": {
        ("inputDatasetEdges",): _EDGE, ("outputDatasetEdges",): _EDGE, ("inputDatajobEdges",): _EDGE,
        ("inputDatasets",): _URNS, ("outputDatasets",): _URNS, ("inputDatajobs",): _URNS,
        ("inputDatasetFields",): _URNS, ("outputDatasetFields",): _URNS, ("fineGrainedLineages",): _FINE_GRAINED},
    "chartInfo": {("inputEdges",): _EDGE},
    "dashboardInfo": {("chartEdges",): _EDGE, ("datasetEdges",): _EDGE, ("charts",): _URNS, ("datasets",): _URNS},
    "dataProductProperties": {("assets",): _EDGE},
}


@dataclass(frozen=True)
class PatchDocument:
    """A PATCH value: its operations and the keys its envelope gives arrays (by path)."""

    ops: tuple[dict[str, Any], ...]
    array_keys: Mapping[tuple[str, ...], Keys]


def parse_patch(value: Any) -> PatchDocument:
    """A PATCH value: a JSON Patch array, or `{"patch": [...]}` with optional `arrayPrimaryKeys`
    (and DataHub's `forceGenericPatch`, which changes nothing here). Raises ProposalFailed."""
    keys: dict[tuple[str, ...], Keys] = {}
    ops = value
    if isinstance(value, dict):
        ops = value.get("patch")
        primary = value.get("arrayPrimaryKeys") or {}
        if not isinstance(primary, dict) or not all(
                isinstance(path, str) and path and isinstance(names, list) and names
                and all(isinstance(n, str) and n for n in names) for path, names in primary.items()):
            raise ProposalFailed("invalid_patch", "aspect: arrayPrimaryKeys must map array fields to lists of"
                                 " key field names, e.g. {\"tags\": [\"tag\"]}")
        keys = {tuple(path.strip("/").split("/")): Keys(tuple(names)) for path, names in primary.items()}
    if not isinstance(ops, list) or not all(isinstance(op, dict) and isinstance(op.get("path"), str)
                                            and op.get("op") in OPS for op in ops):
        raise ProposalFailed("invalid_patch", "aspect: a PATCH value must be a JSON Patch array of"
                             " {\"op\", \"path\", ...} (op one of " + ", ".join(OPS) + "), or"
                             " {\"patch\": [...], \"arrayPrimaryKeys\": {...}}")
    if len(ops) > MAX_OPS:
        raise ProposalFailed("too_large", f"aspect: a JSON Patch of {len(ops)} ops, over the limit of {MAX_OPS}", 413)
    for op in ops:
        if op["path"] and not op["path"].startswith("/"):
            raise ProposalFailed("invalid_patch", f"aspect: path {op['path']!r} must start with '/'")
    return PatchDocument(tuple(ops), keys)


def apply_patch(value: dict[str, Any], document: PatchDocument, aspect: str, max_bytes: int | None = None) -> Any:
    """The value after the patch (value itself is not changed). With `max_bytes`, the patch stops
    (413 too_large) as soon as the value it builds would pass twice that size (as JSON; the result
    is checked against the limit itself afterwards): a `copy` onto its own array doubles it, so a
    few dozen ops would otherwise take gigabytes. Raises ProposalFailed."""
    keyed = {**TEMPLATES.get(aspect, {}), **document.array_keys}
    views = _views_entered(document.ops, keyed)
    doc = copy.deepcopy(value)
    for path in views:
        current = _get(doc, path)
        if isinstance(current, list):
            _set(doc, path, _to_map(current, keyed[path]))
    growth = None if max_bytes is None else _Growth(doc, max_bytes)
    try:
        for number, op in enumerate(copy.deepcopy(document.ops), 1):  # op values end up in the changed document
            for concrete in _concrete(doc, op, views, keyed):
                if growth is not None:
                    growth.check(doc, concrete, number)
                jsonpatch.JsonPatch([concrete]).apply(doc, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError, KeyError) as err:
        raise ProposalFailed("invalid_patch", f"aspect: JSON Patch does not apply: {err}") from None
    for path in views:
        current = _get(doc, path)
        if isinstance(current, dict):
            _set(doc, path, _from_map(current, keyed[path]))
    return doc


class _Growth:
    """The size (bytes of JSON) of the value a patch builds, followed op by op: each op's change
    is measured on what it adds, copies or takes away, so the check costs what the op does."""

    def __init__(self, doc: Any, max_bytes: int):
        self.size = _size(doc)
        self.max_bytes = max_bytes

    def check(self, doc: Any, op: dict[str, Any], number: int) -> None:
        """Count op's change in size before it is applied (op `number` of the patch, from 1); 413
        when the value would pass twice the aspect limit."""
        kind, segments = op["op"], _segments(op["path"])
        if kind not in ("add", "replace", "copy", "remove"):  # move, test: no change
            return
        if kind == "remove":
            change = -_current(doc, segments)
        else:
            added = _get(doc, _segments(op["from"])) if kind == "copy" and isinstance(op.get("from"), str) \
                else op.get("value")
            inserted = kind != "replace" and isinstance(_get(doc, segments[:-1]), list)
            change = _size(added) + _member(segments) - (0 if inserted else _current(doc, segments))
        self.size += change
        if self.size > 2 * self.max_bytes:
            raise ProposalFailed("too_large", f"aspect: JSON Patch op {number} ({kind} {op['path']}) would make the"
                                 f" value about {self.size} bytes, over twice the aspect limit of {self.max_bytes}",
                                 413)


def _current(doc: Any, segments: Sequence[str]) -> int:
    """The size of what a pointer names now, with its key (0: nothing)."""
    if not segments:
        return _size(doc)
    parent = _get(doc, segments[:-1])
    if isinstance(parent, dict):
        return _size(parent[segments[-1]]) + _member(segments) if segments[-1] in parent else 0
    if isinstance(parent, list) and segments[-1].isdigit() and int(segments[-1]) < len(parent):
        return _size(parent[int(segments[-1])]) + _member(segments)
    return 0


def _member(segments: Sequence[str]) -> int:
    """What a member takes in JSON beside its value: its key, quotes, colon and comma."""
    return len(segments[-1]) + 4 if segments else 0


def _size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except (orjson.JSONEncodeError, TypeError):  # (an integer past 64 bits)
        return len(json.dumps(value, default=str))


def _segments(pointer: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]] if pointer else []


def _pointer(segments: Sequence[str]) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


def _is_index(segment: str) -> bool:
    return segment == "-" or segment.isdigit()


def _field_of(segments: Sequence[str], keyed: Mapping[tuple[str, ...], Keys]) -> tuple[str, ...] | None:
    """The keyed array a path goes through (the longest one that is a prefix of it)."""
    best = None
    for path in keyed:
        if tuple(segments[:len(path)]) == path and (best is None or len(path) > len(best)):
            best = path
    return best


def _views_entered(ops: Sequence[dict[str, Any]], keyed: Mapping[tuple[str, ...], Keys]) -> list[tuple[str, ...]]:
    """The keyed arrays some op addresses by key (those become map views)."""
    by_key: set[tuple[str, ...]] = set()
    by_index: set[tuple[str, ...]] = set()
    for op in ops:
        for pointer in (op["path"], op.get("from")):
            if not isinstance(pointer, str):
                continue
            segments = _segments(pointer)
            path = _field_of(segments, keyed)
            if path is not None and len(segments) > len(path):
                (by_index if _is_index(segments[len(path)]) else by_key).add(path)
    mixed = by_key & by_index
    if mixed:
        raise ProposalFailed("invalid_patch", f"aspect: /{'/'.join(sorted(mixed)[0])} is addressed both by"
                             " index and by key in one patch")
    return sorted(by_key, key=len)


def _concrete(doc: Any, op: dict[str, Any], views: Sequence[tuple[str, ...]],
              keyed: Mapping[tuple[str, ...], Keys]) -> list[dict[str, Any]]:
    """The operations to apply for `op` on the current document (see the module docstring)."""
    segments = _segments(op["path"])
    path = _field_of(segments, keyed)
    if path is None or path not in views:
        return [op]
    if len(segments) == len(path):  # the whole array: a list value becomes a view
        value = op.get("value")
        return [{**op, "value": _to_map(value, keyed[path])} if isinstance(value, list) else op]
    if op["op"] == "remove":
        return [{"op": "remove", "path": _pointer(found)} for found in _matches(doc, segments)]
    if op["op"] == "add":
        _make_parents(doc, segments)
    return [op]


def _matches(doc: Any, segments: Sequence[str]) -> list[list[str]]:
    """The existing paths a remove path names (`*` matching every key at its level)."""
    found: list[list[str]] = [[]]
    for segment in segments:
        nxt = []
        for prefix in found:
            node = _get(doc, prefix)
            if isinstance(node, dict):
                keys = list(node) if segment == "*" else [segment] if segment in node else []
                nxt += [[*prefix, key] for key in keys]
            elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
                nxt.append([*prefix, segment])
        found = nxt
    return found


def _make_parents(doc: Any, segments: Sequence[str]) -> None:
    node = doc
    for segment in segments[:-1]:
        if isinstance(node, dict):
            if not isinstance(node.get(segment), dict | list):
                node[segment] = {}
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return


def _get(doc: Any, path: Sequence[str]) -> Any:
    node = doc
    for segment in path:
        if isinstance(node, dict):
            node = node.get(segment)
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return None
    return node


def _set(doc: dict[str, Any], path: Sequence[str], value: Any) -> None:
    node = _get(doc, path[:-1])
    if isinstance(node, dict):
        node[path[-1]] = value


def _field(element: Any, name: str) -> Any:
    for part in name.split(SEPARATOR):
        element = element.get(part) if isinstance(element, dict) else None
    return element


def _key(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _to_map(items: list[Any], keys: Keys) -> dict[str, Any]:
    if keys.special == FINE_GRAINED:
        return _fine_grained_to_map(items)
    view: dict[str, Any] = {}
    for item in items:
        if not keys.fields:
            view[_key(item)] = item
            continue
        node = view
        for name in keys.fields[:-1]:
            node = node.setdefault(_key(_field(item, name)), {})
        node[_key(_field(item, keys.fields[-1]))] = _nested_to_map(item, keys)
    return view


def _nested_to_map(item: Any, keys: Keys) -> Any:
    """An element with its own keyed arrays as views (in place: the patched value is a copy)."""
    if isinstance(item, dict):
        for path, inner in keys.nested.items():
            current = _get(item, path)
            if isinstance(current, list):
                _set(item, path, _to_map(current, inner))
    return item


def _from_map(view: dict[str, Any], keys: Keys) -> list[Any]:
    if keys.special == FINE_GRAINED:
        return _fine_grained_from_map(view)
    if not keys.fields:
        return list(view.values())
    items: list[Any] = []

    def walk(node: Any, found: list[str]) -> None:
        if len(found) == len(keys.fields):
            items.append(_with_keys(node, keys, found))
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, [*found, key])

    walk(view, [])
    return items


def _with_keys(item: Any, keys: Keys, found: list[str]) -> Any:
    """An element back from a view: its nested views as arrays, missing key fields from its path."""
    if not isinstance(item, dict):
        return item
    for path, inner in keys.nested.items():
        current = _get(item, path)
        if isinstance(current, dict):
            _set(item, path, _from_map(current, inner))
    for name, key in zip(keys.fields, found, strict=True):
        if key == "" or _field(item, name) is not None:
            continue
        node = item
        *parents, last = name.split(SEPARATOR)
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = key
    return item


_FG_AS_IS = "\u0000as-is"  # where a fine-grained lineage that has no one view position is kept


def _fine_grained_to_map(items: list[Any]) -> dict[str, Any]:
    """transformOperation -> downstream -> query -> upstream -> {"confidenceScore"} (DataHub's keys;
    "NONE" for no operation or query); one with several downstreams or no upstreams is kept aside."""
    view: dict[str, Any] = {}
    for item in items:
        downstreams = item.get("downstreams") or [] if isinstance(item, dict) else []
        upstreams = item.get("upstreams") or [] if isinstance(item, dict) else []
        if len(downstreams) != 1 or not upstreams:
            view.setdefault(_FG_AS_IS, []).append(item)
            continue
        queries = view.setdefault(item.get("transformOperation") or "NONE", {}).setdefault(downstreams[0], {})
        leaf = queries.setdefault(item.get("query") or "NONE", {})
        for upstream in upstreams:
            leaf[upstream] = {"confidenceScore": item.get("confidenceScore", 1.0)}
    return view


def _fine_grained_from_map(view: dict[str, Any]) -> list[Any]:
    items = list(view.get(_FG_AS_IS) or [])
    for operation, downstreams in view.items():
        if operation == _FG_AS_IS or not isinstance(downstreams, dict):
            continue
        for downstream, queries in downstreams.items():
            for query, upstreams in (queries or {}).items():
                if not isinstance(upstreams, dict) or not upstreams:
                    continue
                scores = [u.get("confidenceScore") for u in upstreams.values() if isinstance(u, dict)]
                item: dict[str, Any] = {
                    "upstreamType": "FIELD_SET" if all(u.startswith("urn:li:schemaField:") for u in upstreams)
                    else "DATASET",
                    "upstreams": list(upstreams), "downstreamType": "FIELD", "downstreams": [downstream],
                    "confidenceScore": max((s for s in scores if isinstance(s, int | float)), default=1.0)}
                if operation != "NONE":
                    item["transformOperation"] = operation
                if query != "NONE":
                    item["query"] = query
                items.append(item)
    return items


def default_value(schema: Mapping[str, Any], named: Mapping[str, Any], actor: str, now_ms: int) -> dict[str, Any]:
    """The value a patch of an absent aspect starts from: each field's default, an empty array
    or map for a required one, and a required audit stamp without a default made of `now_ms`
    and `actor` (what DataHub's templates start from)."""
    value: dict[str, Any] = {}
    for spec in schema.get("fields", ()):
        kind = spec["type"]
        if "default" in spec:
            if spec["default"] is not None:
                value[spec["name"]] = copy.deepcopy(spec["default"])
            continue
        if isinstance(kind, dict) and kind.get("type") == "array":
            value[spec["name"]] = []
        elif isinstance(kind, dict) and kind.get("type") == "map":
            value[spec["name"]] = {}
        elif kind == AUDIT_STAMP or (isinstance(kind, dict) and kind.get("name") == "AuditStamp"):
            value[spec["name"]] = {"time": now_ms, "actor": actor}
    return value
