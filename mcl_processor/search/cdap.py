"""CDAP's metadata search: what an entity's metadata offers it, and its query language.

Index side: each aspect version adds CDAP terms to its fragment, as tokens of the `meta`
column (so SQLite's FTS5 and OpenSearch's `cdap` keyword field hold the same). A term is a
scope (USER or SYSTEM), a key (or none: any key) and a value token, written so that prefixes
are kept (`term`): the terms of `key:val*` are the tokens starting with the term of `val`.
Values are split into tokens at `-`, `_`, `:`, `,` and white space, lower-cased.

    USER / SYSTEM scope aspects   every property (under its key and any key), every tag (`tags`)
    schemaMetadata (SYSTEM)       `schema:<field>`, `<field>:<TYPE>` (nullable unions unwrapped)
    descriptions (SYSTEM)         `description:<token>`
    the key aspect (SYSTEM)       the entity's name (`<type>:<name>`, `entity-name:`), its type,
                                  namespace, the resources authorization checks it against
                                  (gms/access/controlled.py `search_resources`), and
                                  `hidden` when its name starts with `_`
    subTypes (SYSTEM)             a subtype (a CDAP stream is a dataset of subtype stream), and
                                  the first as `type:` (as GET shows it)
    datasetProperties (SYSTEM)    `ttl:` of the `ttl` custom property

The derived SYSTEM properties lodestar/metadata/system.py shows that these aspects' values hold
(`ttl`, `type`; `description`, `schema` and `entity-name` above) are searchable as CDAP's
SYSTEM properties are: under their key (`ttl:3600`, `properties:ttl`) and, but for
descriptions, schema field names and names, under any key. `type:` holds the metadata
entity's type (from the key aspect) and the first subtype, so a stream is found by
`type:stream` and by `type:dataset`. `creation-time` and `last-updated-*` come from the
versions' system metadata, which terms never see: they are not searchable (a sort by
creation time reads them from the store).

Schema field names, descriptions and names are not written under any key (the largest share
of terms): a plain term looks for them under their own keys as well.

Query side: `parse` turns CDAP's query into an `Expr` of `Atom`s that every adapter compiles.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Union

from gms.access.controlled import search_resources
from schemas.field_types import field_type
from schemas.metadata_entity import URN_KEY, EntityError, from_urn
from schemas.registry import default_registry
from schemas.urns import Urn, UrnError

SCOPE_LETTER = {"USER": "u", "SYSTEM": "s"}
TYPE, SUBTYPE, NAME, NAMESPACE, RESOURCE, HIDDEN = "~type", "~subtype", "~name", "~ns", "~res", "~hidden"
_SEPARATORS = re.compile(r"[-_:,\s]+")
SYSTEM_TEXT_KEYS = ("schema", "description", NAME)  # a plain term also looks for these (not indexed under any key)
_SCOPE_ASPECTS = {"userScopeMetadata": "USER", "systemScopeMetadata": "SYSTEM"}
_DESCRIBED = frozenset({"datasetProperties", "editableDatasetProperties", "dataFlowInfo", "dataJobInfo",
                        "containerProperties"})


def value_tokens(text: str) -> list[str]:
    """CDAP's tokens of a value: split at - _ : , and white space, lower-cased."""
    return [t for t in _SEPARATORS.split(text.lower()) if t]


TERM_PREFIX = "c"  # the other meta tokens start with "m"


def term(scope: str, key: str, token: str) -> str:
    """The meta token of one term (key "" for any key): `c`, the scope's letter, `a` for any key
    or `k` and 8 hex digits of the key's hash, then the token with every character but a-w, y,
    z and digits written `x` and 6 hex digits, so that the term of a prefix is a prefix."""
    keyed = "a" if not key else _key_code(key)
    written = token if _PLAIN_TOKEN.fullmatch(token) else token.translate(_ESCAPES)
    return f"{TERM_PREFIX}{SCOPE_LETTER[scope]}{keyed}{written}"


@lru_cache(maxsize=4096)  # keys are the users' own: a plain cache would grow with every new one
def _key_code(key: str) -> str:
    return "k" + hashlib.blake2b(key.encode(), digest_size=4).hexdigest()


class _Escapes(dict[int, str]):
    """`str.translate`'s table of `term`: a character kept as it is, or written `x` and 6 hex
    digits; each character's entry is made when first met (a table of every code point would
    be large, a function per character slow), up to MEMO_SIZE of them."""

    def __missing__(self, code: int) -> str:
        if len(self) >= MEMO_SIZE:
            self.clear()
        char = chr(code)
        written = self[code] = char if char in _PLAIN else f"x{code:06x}"
        return written


_PLAIN = frozenset("abcdefghijklmnopqrstuvwyz0123456789")
_PLAIN_TOKEN = re.compile("[a-wyz0-9]*")
_ESCAPES = _Escapes()


# -- index side -----------------------------------------------------------------------------

def terms(aspect: str, value: Any) -> set[str]:
    """The CDAP terms an aspect version adds to its entity."""
    if not isinstance(value, dict):
        return set()
    out: set[str] = set()
    scope = _SCOPE_ASPECTS.get(aspect)
    if scope is not None:
        for key, text in (value.get("properties") or {}).items():
            _add(out, scope, key.lower(), str(text))
        for tag in value.get("tags") or []:
            _add(out, scope, "tags", str(tag))
    elif aspect == "schemaMetadata":
        memo = _FIELD_TERMS  # (read here: a call per field cost more than its terms' lookup)
        for field in value.get("fields") or []:
            found = None
            if isinstance(field, dict):
                path, native = field.get("fieldPath"), field.get("nativeDataType")
                if path.__class__ is str and native.__class__ is str:
                    found = memo.get((path, native))
            out.update(_field_terms(field) if found is None else found)
    elif aspect == "subTypes":
        names = [str(t) for t in value.get("typeNames") or []]
        out.update(term("SYSTEM", SUBTYPE, name.lower()) for name in names)
        if names:
            _add(out, "SYSTEM", "type", names[0].lower())
    elif aspect in _DESCRIBED:
        if isinstance(value.get("description"), str):
            _add(out, "SYSTEM", "description", value["description"], any_key=False)
        ttl = (value.get("customProperties") or {}).get("ttl") if aspect == "datasetProperties" else None
        if ttl:
            _add(out, "SYSTEM", "ttl", str(ttl))
    elif (urn := _key_urn(aspect, value)) is not None:
        out |= _entity_terms(urn)
    return out


def _add(out: set[str], scope: str, key: str, text: str, any_key: bool = True) -> None:
    """The terms of a value: each token under its key, and under any key (schema field names,
    descriptions and names need not: a plain term looks for them under their keys too)."""
    found = _TEXT_TERMS.get((scope, key, text, any_key))
    if found is None:
        if len(_TEXT_TERMS) >= MEMO_SIZE:
            _TEXT_TERMS.clear()
        keys = (key, "") if any_key else (key,)
        found = _TEXT_TERMS[(scope, key, text, any_key)] = tuple(
            term(scope, k, token) for token in value_tokens(text) for k in keys)
    out.update(found)


def _field_terms(field: Any) -> set[str] | frozenset[str]:
    """A schema field's terms: its name's tokens under `schema` and `<name>:<TYPE>`; kept for
    the (name, native type) pairs that decide them."""
    name = str(field.get("fieldPath") or "")
    native = field.get("nativeDataType")
    memo = (name, native) if isinstance(native, str) and native.strip() else None
    found = _FIELD_TERMS.get(memo) if memo else None
    if found is None:
        found = set()
        _add(found, "SYSTEM", "schema", name, any_key=False)
        kind = field_type(field)
        if name and kind:
            found.add(term("SYSTEM", name.lower(), kind.lower()))
        if memo:
            if len(_FIELD_TERMS) >= MEMO_SIZE:
                _FIELD_TERMS.clear()
            found = _FIELD_TERMS[memo] = frozenset(found)
    return found


MEMO_SIZE = 100_000  # catalogs repeat field names, types, tags and keys: their terms are kept (bounded)
_TEXT_TERMS: dict[tuple[str, str, str, bool], tuple[str, ...]] = {}
_FIELD_TERMS: dict[tuple[str, str], frozenset[str]] = {}


def _entity_terms(urn: str) -> set[str]:
    try:
        entity = from_urn(urn)
    except EntityError:
        return set()
    if entity.keys() == (URN_KEY,):  # outside CDAP's names: a dataset's name, else the URN's last part
        parsed = Urn.parse(urn)
        name = parsed.parts[1] if parsed.entity_type == "dataset" and len(parsed.parts) == 3 else parsed.parts[-1]
    else:
        name = entity.get(entity.type) or entity.details[-1][1]
    out = {term("SYSTEM", TYPE, entity.type.lower()), *(term("SYSTEM", RESOURCE, r) for r in search_resources(urn))}
    out.update(term("SYSTEM", NAME, token) for token in value_tokens(name))
    _add(out, "SYSTEM", "type", entity.type.lower())
    if entity.get("namespace"):
        out.add(term("SYSTEM", NAMESPACE, entity.get("namespace").lower()))  # type: ignore[union-attr]
    if name.startswith("_"):
        out.add(term("SYSTEM", HIDDEN, "true"))
    return out


@cache
def _key_aspects() -> dict[str, tuple[str, tuple[str, ...]]]:
    registry = default_registry()
    return {entity.key_aspect: (entity.name, tuple(p.name for p in registry.key_parts(entity.name)))
            for entity in registry.entities.values()}


def _key_urn(aspect: str, value: dict[str, Any]) -> str | None:
    found = _key_aspects().get(aspect)
    if found is None:
        return None
    entity_type, names = found
    try:
        return str(Urn.parse(str(Urn.create(entity_type, *(str(value[n]) for n in names)))))
    except (KeyError, UrnError):
        return None


# -- query side -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Atom:
    """Terms of `key` (any key: "") in `scopes` equal to `token`, or starting with it (`prefix`)."""

    key: str
    token: str
    prefix: bool = False
    scopes: tuple[str, ...] = ("USER", "SYSTEM")

    def tokens(self) -> list[str]:
        return [term(scope, self.key, self.token) for scope in self.scopes]


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Any_:
    parts: tuple[Expr, ...]


Expr = Union[Atom, All, Any_]  # noqa: UP007 (a recursive alias)
EVERYTHING = All(())  # the query `*`


def system(key: str, token: str, prefix: bool = False) -> Atom:
    return Atom(key, token, prefix, ("SYSTEM",))


def parse(query: str, scope: str | None = None) -> Expr:
    """CDAP's query: terms separated by white space, OR-ed; `*` alone is everything."""
    scopes = (scope,) if scope else ("USER", "SYSTEM")
    words = query.split()
    if "*" in words:
        return EVERYTHING
    return Any_(tuple(e for e in (_term(w, scopes) for w in words) if e is not None))


def _term(word: str, scopes: tuple[str, ...]) -> Expr | None:
    system_scope = ("SYSTEM",) if "SYSTEM" in scopes else ()
    key, sep, value = word.partition(":")
    if not sep:  # any value, a schema field name, a description, a name
        return _tokens(word, ("", scopes), *((k, system_scope) for k in SYSTEM_TEXT_KEYS))
    key = NAME if key.lower() == "entity-name" else key.lower()
    if value == "*":
        return Atom(key, "", True, system_scope if key == NAME else scopes)  # the key, with any value
    if key == "properties":
        return Atom(value.lower(), "", True, scopes)
    matches = _tokens(value, (key, system_scope if key == NAME else scopes))
    named = _tokens(value, (NAME, system_scope))
    if matches is None or named is None or key in ("tags", "schema", NAME):
        return matches
    kind = Any_((system(TYPE, key), system(SUBTYPE, key)))
    return Any_((matches, All((kind, named))))  # or `<entityType>:<name>`


def _tokens(text: str, *keys: tuple[str, tuple[str, ...]]) -> Expr | None:
    """Every token of `text` as a term of one of `keys` (key, scopes), the last token as a
    prefix after `*`; None when there is no token or no scope."""
    prefix = text.endswith("*")
    found = value_tokens(text.rstrip("*"))
    keys = tuple((key, scopes) for key, scopes in keys if scopes)
    if not found or not keys:
        return None

    def one(token: str, is_prefix: bool) -> Expr:
        atoms = tuple(Atom(key, token, is_prefix, scopes) for key, scopes in keys)
        return atoms[0] if len(atoms) == 1 else Any_(atoms)

    parts = tuple(one(t, prefix and i == len(found) - 1) for i, t in enumerate(found))
    return parts[0] if len(parts) == 1 else All(parts)


def fts5(expr: Expr) -> str | None:
    """An FTS5 expression of the terms (for the `meta` column); None when nothing can match,
    "" for everything."""
    if isinstance(expr, Atom):
        return " OR ".join(f'"{t}"' + (" *" if expr.prefix else "") for t in expr.tokens())
    parts = [fts5(part) for part in expr.parts]
    if isinstance(expr, All):
        if any(p is None for p in parts):
            return None
        return " AND ".join(f"({p})" for p in parts if p)
    live = [p for p in parts if p is not None]
    if "" in live:
        return ""
    return " OR ".join(f"({p})" for p in live) if live else None


def any_of(key: str, tokens: Sequence[str]) -> Expr:
    """A SYSTEM term of `key` equal to one of `tokens` (nothing matches when there are none)."""
    return Any_(tuple(system(key, t) for t in tokens))
