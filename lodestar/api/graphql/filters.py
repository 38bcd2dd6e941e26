"""DataHub's search filters as Lodestar searches.

DataHub's clients send `orFilters`: alternatives (OR), each a list of conditions that must all
hold (AND), each condition a field, values (any of them), a condition and `negated`. Lodestar's
query language has exact `key:"value"` filters that all must hold (mcl_processor/query_syntax.py),
so the filters become a disjunction of `Branch`es, each one Lodestar search: a condition with
several values becomes one alternative per value, and the alternatives of an AND multiply out.

Fields: every index field of the registry's `Searchable` annotations that holds exact values
(keywords, URNs, booleans, counts and names; matched case-insensitively, a URN also by its id),
`tags`, `customProperties` (`key=value`, any properties map's entry), `structuredProperties.<qualified
name>` (EQUAL, IN or EXISTS; a property that is not defined holds no values, a soft-deleted one is
an error), `browsePathV2` (CONTAIN a
container: its browse path or its `container` aspect names it), `_entityType`, `urn`, `removed`
(soft deletion), and in lineage searches `degree`. Conditions: EQUAL, IN, IEQUAL, START_WITH,
EXISTS (and CONTAIN for browsePathV2); `negated` only for `_entityType`, `removed` and
`urn` EXISTS. Anything else is a GraphQL error that names the field, condition or value."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import BY_ENUM, lodestar_type
from mcl_processor.annotations import Annotations
from mcl_processor.search import SCHEMA_FIELDS, TAG_FIELDS
from mcl_processor.search.document import TAGS_KEY, UPSTREAM_TAGS_KEY
from mcl_processor.search.structured_properties import PROPERTY_PREFIX, filter_key

MAX_BRANCHES = 16  # alternatives a filter may multiply out to
STRUCTURED_FILTER = "structuredProperties."
PropertyState = Callable[[str], str]  # a structured property's URN -> "live" | "removed" | "absent"
EXACT = frozenset({"EQUAL", "IN", "IEQUAL"})
DEGREES = ("1", "2", "3+")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


@dataclass(frozen=True)
class Branch:
    """One alternative: Lodestar filter terms that must all hold, the entity types allowed
    (None: every type served), soft deletion ("live", "only", "any"; None: as the search flags
    say), exact URNs (None: any), and for lineage the degrees allowed (None: any)."""

    terms: tuple[str, ...] = ()
    types: frozenset[str] | None = None
    removed: str | None = None
    urns: frozenset[str] | None = None
    degrees: frozenset[str] | None = None

    def and_(self, other: Branch) -> Branch | None:
        """Both at once, or None when nothing can satisfy both."""
        removed = self.removed or other.removed
        if self.removed and other.removed and self.removed != other.removed:
            if "any" not in (self.removed, other.removed):
                return None
            removed = self.removed if other.removed == "any" else other.removed
        both = Branch(tuple(sorted(set(self.terms) | set(other.terms))), _meet(self.types, other.types), removed,
                      _meet(self.urns, other.urns), _meet(self.degrees, other.degrees))
        if any(s is not None and not s for s in (both.types, both.urns, both.degrees)):
            return None
        return both


def _meet(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    return b if a is None else a if b is None else a & b


@cache
def filterable_keys(annotations: Annotations) -> frozenset[str]:
    """The index keys that hold exact values (lower-cased, as `key:value` looks them up)."""
    keys = {TAGS_KEY, UPSTREAM_TAGS_KEY}
    for aspect in annotations.by_aspect.values():
        for spec in aspect.searchable:
            if spec.field_type == "MAP" or spec.name in SCHEMA_FIELDS:
                continue
            if spec.field_type in ("TEXT", "TEXT_PARTIAL") and spec.boost <= 1:
                continue  # text is found by free text, not by value
            keys.add(TAGS_KEY if spec.name in TAG_FIELDS else spec.name.lower())
    return frozenset(keys)


def branches(or_filters: Sequence[Mapping[str, Any]] | None, and_filters: Sequence[Mapping[str, Any]] | None,
             annotations: Annotations, lineage: bool = False,
             property_state: PropertyState = lambda urn: "live") -> list[Branch]:
    """The alternatives of `orFilters` (each AND-ed with the legacy `filters`); no filters: one
    branch of everything. An impossible alternative is left out (all impossible: none).
    `property_state` tells whether a structured property filtered on is live, removed
    (soft-deleted) or absent."""
    groups: list[list[Mapping[str, Any]]] = [list(g.get("and") or []) for g in or_filters or [] if g is not None]
    if not groups:
        groups = [[]]
    common = list(and_filters or [])
    keys = filterable_keys(annotations)
    out: list[Branch] = []
    for group in groups:
        choices = [_rule(rule, keys, lineage, property_state) for rule in [*common, *group]]
        count = 1
        for c in choices:
            count *= max(1, len(c))
        if count > MAX_BRANCHES * 4:
            raise _too_many(count)
        for combination in itertools.product(*choices):
            merged: Branch | None = Branch()
            for part in combination:
                merged = merged.and_(part) if merged is not None else None
            if merged is not None and merged not in out:
                out.append(merged)
                if len(out) > MAX_BRANCHES * 4:
                    raise _too_many(len(out))
    if len(out) > MAX_BRANCHES:
        raise _too_many(len(out))
    return out


def _too_many(count: int) -> GraphQLError:
    return GraphQLError(f"orFilters: the filters multiply out to {count} alternatives (a value list counts one per"
                        f" value); at most {MAX_BRANCHES} are supported")


def _rule(rule: Mapping[str, Any], keys: frozenset[str], lineage: bool, property_state: PropertyState
          ) -> list[Branch]:
    """The alternatives one condition allows (none: it matches nothing)."""
    name = rule.get("field")
    if not isinstance(name, str) or not name:
        raise GraphQLError("filter: a condition needs a field")
    condition = rule.get("condition") or "EQUAL"
    negated = bool(rule.get("negated"))
    values = rule.get("values")
    if values is None:
        values = [rule["value"]] if rule.get("value") is not None else []
    values = [v for v in values if v is not None]
    field = name.removesuffix(".keyword")
    where = f"filter on {name!r}"
    if condition != "EXISTS" and not values:
        raise GraphQLError(f"{where}: condition {condition} needs values")

    if field in ("_entityType", "entityType"):
        _expect(where, condition, EXACT)
        types = frozenset(lodestar_type(v) for v in values)
        return [Branch(types=frozenset(BY_ENUM.values()) - types if negated else types)]
    if field == "degree":
        if not lineage:
            raise GraphQLError(f"{where}: degree filters only lineage searches")
        _expect(where, condition, EXACT)
        wrong = [v for v in values if v not in DEGREES]
        if wrong or negated:
            raise GraphQLError(f"{where}: degrees are one of {', '.join(DEGREES)}, not negated"
                               + (f" (got {wrong[0]!r})" if wrong else ""))
        return [Branch(degrees=frozenset(values))]
    if field == "urn":
        if condition == "EXISTS":
            return [] if negated else [Branch()]
        _expect(where, condition, EXACT)
        if negated:
            raise GraphQLError(f"{where}: a negated urn filter is not supported")
        return [Branch(urns=frozenset(values))]
    if field == "removed":
        _expect(where, condition, EXACT)
        wanted = {str(v).lower() for v in values}
        if not wanted <= {"true", "false"}:
            raise GraphQLError(f"{where}: values are true or false")
        if negated:
            wanted = {"true", "false"} - wanted
        if not wanted:
            return []
        return [Branch(removed="any" if len(wanted) == 2 else "only" if wanted == {"true"} else "live")]
    if negated:
        raise GraphQLError(f"{where}: negated conditions are supported on _entityType, removed and urn only")
    if field == "customProperties":
        pairs = []
        for value in values:
            key, sep, text = str(value).partition("=")
            if condition != "EXISTS" and not sep:
                raise GraphQLError(f"{where}: values are key=value, not {value!r}")
            pairs.append((key, text))
        if condition == "EXISTS":
            raise GraphQLError(f"{where}: EXISTS is not supported on customProperties")
        return [Branch(terms=(_term(where, key.lower(), text, condition),)) for key, text in pairs]
    if field == "browsePathV2":
        _expect(where, condition, frozenset({"CONTAIN"}))
        return [Branch(terms=(_term(where, key, value, "EQUAL"),)) for value in values
                for key in ("browsepathv2", "container")]
    if field.startswith(STRUCTURED_FILTER):
        return _structured(where, field.removeprefix(STRUCTURED_FILTER), condition, values, property_state)
    key = TAGS_KEY if field in TAG_FIELDS else field.lower()
    if key not in keys:
        raise GraphQLError(f"{where}: Lodestar's search index has no field {field!r} holding exact values")
    _expect(where, condition, EXACT | {"START_WITH", "EXISTS"})
    if condition == "EXISTS":
        return [Branch(terms=(_term(where, key, "", condition),))]
    return [Branch(terms=(_term(where, key, str(value), condition),)) for value in values]


def _structured(where: str, qualified_name: str, condition: str, values: list[Any],
                property_state: PropertyState) -> list[Branch]:
    """The alternatives of a filter on a structured property's values."""
    urn = PROPERTY_PREFIX + qualified_name
    state = property_state(urn)
    if state == "removed":
        raise GraphQLError(f"{where}: structured property {urn} is soft-deleted; its values are not searched")
    _expect(where, condition, EXACT | {"EXISTS"})
    if state == "absent":
        return []  # nothing holds a value of a property that is not defined
    key = filter_key(qualified_name)
    if condition == "EXISTS":
        return [Branch(terms=(_term(where, key, "", condition),))]
    return [Branch(terms=(_term(where, key, str(value).lower(), condition),)) for value in values]


def _expect(where: str, condition: str, allowed: Iterable[str]) -> None:
    if condition not in allowed:
        raise GraphQLError(f"{where}: condition {condition} is not supported here (supported: "
                           f"{', '.join(sorted(allowed))})")


def _term(where: str, key: str, value: str, condition: str) -> str:
    """One filter term of Lodestar's query language."""
    if not key or not key[0].isalpha() or not set(key) <= _KEY_CHARS:
        raise GraphQLError(f"{where}: {key!r} is not a field name Lodestar can filter on")
    if condition == "EXISTS":
        return f"{key}:*"
    if '"' in value or "\n" in value:
        raise GraphQLError(f"{where}: a value with a double quote or a line break is not supported")
    if condition == "START_WITH":
        if not value or any(ch.isspace() for ch in value):
            raise GraphQLError(f"{where}: START_WITH needs a value without white space")
        return f"{key}:{value}*"
    if not value.strip():
        raise GraphQLError(f"{where}: an empty value is not supported")
    return f'{key}:"{value}"'


def with_flags(found: list[Branch], include_soft_deleted: bool | None) -> list[Branch]:
    """Each branch's soft-deletion state settled: one a filter did not settle follows the
    `includeSoftDeleted` search flag (default: live entities only)."""
    default = "any" if include_soft_deleted else "live"
    return [b if b.removed else replace(b, removed=default) for b in found]
