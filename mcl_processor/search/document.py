"""How an aspect's searchable values become its share of the entity document, and how shares merge.

An aspect version is analysed once into a `Fragment`: lines of text per full-text column
(with the index field of each line, to tell which values a query matched), filter tokens,
the candidate shown name and description, the soft-delete flag, facets, property rows (for
`key:value*` prefix filters), suggested values (for autocomplete) and CDAP's search terms
(`cdap.py`). An entity's document is the merge of its aspects' fragments.

Exact filters (`key:value`, `tags:`) are entries [key, lower-cased value, scope]
(`Analysis.filters`). A full-text engine without keyword fields (FTS5) keeps them, with the
entity type, soft-deleted state and exact names, as opaque tokens in a `meta` text column,
so it evaluates them together with the text query; that encoding is the fragment's `meta`.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, pairwise
from typing import Any, NamedTuple

import orjson

from mcl_processor.annotations import REMOVED_FIELD, Annotations, AspectAnnotations, SearchField, simple_id
from mcl_processor.query_syntax import tokens
from mcl_processor.search import (
    DESCRIPTION_FIELDS,
    NAME_FIELD,
    SCHEMA_FIELDS,
    TAG_FIELDS,
    USER_SCOPE_FIELDS,
    cdap,
    structured_properties,
)
from schemas.urns import Urn, UrnError

COLUMNS = ("name", "schema", "text", "keywords", "meta")
NAME, SCHEMA, TEXT, KEYWORDS = range(4)
BM25_WEIGHTS = (10.0, 4.0, 1.0, 2.0, 0.0)  # in COLUMNS order
TAGS_KEY = "tags"
KEYS_FACET = "keys"  # the keys of properties maps annotated as facets (USER and SYSTEM metadata)
_TEXT_TYPES = frozenset({"TEXT", "TEXT_PARTIAL"})
_UNTEXTED_TYPES = frozenset({"BOOLEAN", "COUNT"})  # filterable, but not found by free text
NO_RANK = 1e9
DERIVED_PREFIX = "~"  # the names of a document's derived parts (not aspects of the store) start with it
UPSTREAM_TAGS = "~upstreamTags"  # the derived part of a field's upstream tags (mcl_processor/upstream_tags.py)
UPSTREAM_TAGS_KEY = "upstreamtags"  # its filter key (`upstreamTags:pii`; keys are compared lower-cased)
DERIVED_TITLE_RANK = 1e6  # a derived part's shown name yields to any aspect's


class Fragment(NamedTuple):
    """What one aspect version adds to its entity's document."""

    texts: tuple[str, str, str, str]  # lines of the name, schema, text and keywords columns
    fields: tuple[list[list[Any]], ...]  # per column, the index field of the lines as runs [[field, count]]
    meta: str  # filter tokens
    title: str | None
    title_rank: float
    description: str | None
    description_rank: float
    removed: bool
    facets: list[list[str]]  # [facet, value]
    properties: list[list[str]]  # [key, lower-cased value, scope]
    suggestions: list[list[str]]  # [lower-cased value, kind, value]
    terms: str = ""  # CDAP search terms (see cdap.py); a fragment stored before this field keeps them in meta

    def encode(self) -> bytes:
        return orjson.dumps(tuple(self))

    @classmethod
    def decode(cls, data: bytes) -> Fragment:
        fields = orjson.loads(data)
        # every field given: made as the tuple it is (a call of the generated __new__ costs more)
        return tuple.__new__(cls, fields) if len(fields) == len(cls._fields) else cls(*fields)


class Analysis(NamedTuple):
    """One aspect version analysed: its fragment and its exact-filter entries
    [key, lower-cased value, scope], sorted (the fragment holds those only as meta tokens)."""

    fragment: Fragment
    filters: list[list[str]]


class Document(NamedTuple):
    name: str | None
    description: str | None
    removed: bool
    columns: tuple[str, str, str, str, str]  # in COLUMNS order (meta without the CDAP terms)
    facets: list[tuple[str, str]]
    name_meta: str  # the meta tokens of the entity type, the soft-deleted state and the exact names
    terms: str  # the CDAP terms of its fragments


_TOKENS: dict[str, str] = {}  # a bounded memo (no per-entry objects for the garbage collector)
MEMO_SIZE = 100_000  # tokens repeat across a catalog (keys, values, schema words): the memos keep this many
_PROPERTY_TOKENS: dict[tuple[str, str, str], str] = {}  # by (scope, key, lower-cased value)
_SUGGESTION_TOKENS: dict[tuple[str, str], str | None] = {}  # by (lower-cased value, kind)


def meta_token(name: str) -> str:
    """An opaque single token for an exact filter term (letters and digits only)."""
    token = _TOKENS.get(name)
    if token is None:
        if len(_TOKENS) >= MEMO_SIZE:
            _TOKENS.clear()
        token = _TOKENS[name] = "m" + hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
    return token


def property_token(scope: str, key: str, lvalue: str) -> str:
    token = _PROPERTY_TOKENS.get((scope, key, lvalue))
    if token is None:
        if len(_PROPERTY_TOKENS) >= MEMO_SIZE:
            _PROPERTY_TOKENS.clear()
        token = _PROPERTY_TOKENS[(scope, key, lvalue)] = meta_token(f"{scope}:{key}={lvalue}")
    return token


def type_token(entity_type: str) -> str:
    return meta_token(f"@type={entity_type.lower()}")


def removed_token() -> str:
    return meta_token("@removed")


def everything_token() -> str:
    return meta_token("@all")


def name_token(lvalue: str) -> str:
    return meta_token(f"@name={lvalue}")


SUGGESTION_PREFIX = "s"  # suggested values' tokens start with it, as CDAP terms do with "c" and meta tokens with "m"
SUGGESTION_KINDS = ("field", "key", "name", "tag")
_KIND_DIGITS = {kind: str(number) for number, kind in enumerate(SUGGESTION_KINDS, 1)}
_KINDS_BY_DIGIT = {digit: kind for kind, digit in _KIND_DIGITS.items()}
_HEX_AS_LETTERS = str.maketrans("0123456789abcdef", "ghijklmnopqrstuv")
_LETTERS_AS_HEX = str.maketrans("ghijklmnopqrstuv", "0123456789abcdef")
SUGGESTED_BYTES = 8000  # longer values are not suggested: FTS5 cuts a token at 32 KiB (OpenSearch: KEYWORD_LIMIT)


def suggestion_prefix(lvalue: str) -> str:
    """What the tokens of every suggested value starting with `lvalue` start with: `s`, then
    each UTF-8 byte as two letters g-v. Tokens sort as their values do, a value before the
    longer ones it starts (a kind's digit sorts before any letter)."""
    return _spelled(lvalue.encode())


def suggestion_token(lvalue: str, kind: str) -> str | None:
    """The token of a suggested (lower-cased value, kind): the value's prefix and the kind's
    digit (kinds in SUGGESTION_KINDS order); None for a value too long to suggest."""
    key = (lvalue, kind)
    token = _SUGGESTION_TOKENS.get(key, "")
    if token == "":
        if len(_SUGGESTION_TOKENS) >= MEMO_SIZE:
            _SUGGESTION_TOKENS.clear()
        data = lvalue.encode()
        token = _SUGGESTION_TOKENS[key] = None if len(data) > SUGGESTED_BYTES else _spelled(data) + _KIND_DIGITS[kind]
    return token


def _spelled(data: bytes) -> str:
    return SUGGESTION_PREFIX + data.hex().translate(_HEX_AS_LETTERS)


def suggested(token: str) -> tuple[str, str]:
    """The (lower-cased value, kind) of a suggestion token."""
    return bytes.fromhex(token[1:-1].translate(_LETTERS_AS_HEX)).decode(), _KINDS_BY_DIGIT[token[-1]]


def suggestion_tokens(fragments: Iterable[Fragment]) -> str:
    """A document's suggestion tokens, from its fragments."""
    return suggestion_text(chain.from_iterable(fragment.suggestions for fragment in fragments))


def suggestion_text(suggestions: Iterable[Sequence[str]]) -> str:
    """The tokens of suggestions, (lower-cased value, kind, ...), each once, in order."""
    memo, found = _SUGGESTION_TOKENS, set()
    for suggestion in suggestions:  # (the memo read here: a call per value cost a fifth more)
        lvalue, kind = suggestion[0], suggestion[1]
        token = memo.get((lvalue, kind), "")
        found.add(suggestion_token(lvalue, kind) if token == "" else token)
    found.discard(None)
    return " ".join(sorted(found))  # type: ignore[arg-type]


def pair_token(first: str, second: str) -> str:
    """The token of two adjacent words of the schema column (see `pair_tokens`)."""
    return meta_token(f"@pair={first} {second}")


def pair_tokens(schema_text: str) -> list[str]:
    """The tokens of every two adjacent words of a document's schema column whose words are
    ASCII once diacritics are dropped, as FTS5's tokenizer drops them: a phrase of a schema
    filter (`schema:order_id`) must match where its pairs of words are all present, so the
    index finds those few documents by the pairs instead of checking the words' positions in
    every document holding both words."""
    if not schema_text.isascii():
        schema_text = "".join(c for c in unicodedata.normalize("NFKD", schema_text) if not unicodedata.combining(c))
    found = _PAIR_TOKENS
    if len(found) >= MEMO_SIZE:
        found.clear()
    out = set()
    for pair in pairwise(tokens(schema_text)):
        token = found.get(pair)
        if token is None:
            first, second = pair
            token = found[pair] = pair_token(first, second) if first.isascii() and second.isascii() else ""
        out.add(token)
    out.discard("")
    return sorted(out)


_PAIR_TOKENS: dict[tuple[str, str], str] = {}  # "": a pair that has no token


class _Parts:
    """A fragment being built."""

    __slots__ = ("lines", "runs", "tokens", "names", "properties", "suggestions", "facets", "title", "title_rank",
                 "description", "description_rank", "removed", "cdap")

    def __init__(self) -> None:
        self.lines: tuple[list[str], ...] = ([], [], [], [])
        self.runs: tuple[list[list[Any]], ...] = ([], [], [], [])  # per column, [[index field, lines]]
        self.tokens: set[tuple[str, str, str]] = set()
        self.names: set[str] = set()
        self.properties: set[tuple[str, str, str]] = set()
        self.suggestions: set[tuple[str, str, str]] = set()
        self.facets: set[tuple[str, str]] = set()
        self.title: str | None = None
        self.title_rank = NO_RANK
        self.description: str | None = None
        self.description_rank = NO_RANK
        self.removed = False
        self.cdap: set[str] = set()  # CDAP search terms (mcl_processor/search/cdap.py)

    def add_lines(self, column: int, field: str, texts: list[str]) -> None:
        """Lines of one index field, their line breaks made spaces."""
        if not texts:
            return
        self.lines[column].extend([text.replace("\n", " ") if "\n" in text else text for text in texts])
        runs = self.runs[column]
        if runs and runs[-1][0] == field:
            runs[-1][1] += len(texts)
        else:
            runs.append([field, len(texts)])

    def fragment(self, entries: list[tuple[str, str, str]] | None = None) -> Fragment:
        memo = _PROPERTY_TOKENS  # (read here: a call per entry cost more than the rest of this)
        meta = [memo.get((scope, key, lvalue)) or property_token(scope, key, lvalue)
                for key, lvalue, scope in entries or sorted(self.tokens)]
        meta += [name_token(n) for n in sorted(self.names)]
        return Fragment(
            tuple("\n".join(lines) for lines in self.lines),  # type: ignore[arg-type]
            self.runs, " ".join(meta), self.title, self.title_rank,
            self.description, self.description_rank, self.removed, sorted(self.facets),  # type: ignore[arg-type]
            sorted(self.properties), sorted(self.suggestions), " ".join(sorted(self.cdap)))  # type: ignore[arg-type]

    def analysis(self) -> Analysis:
        entries = sorted(self.tokens)
        return Analysis(self.fragment(entries), [[key, lvalue, scope] for key, lvalue, scope in entries])


Handler = Callable[[list[Any], _Parts], None]


def _scalars(found: list[Any]) -> list[str]:
    """The strings, booleans and numbers found, as strings (`found` itself when all are strings)."""
    for item in found:
        if item.__class__ is not str:
            break
    else:
        return found
    out = []
    for item in found:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, _NUMBERS):
            out.append(str(item))
    return out


_NUMBERS = (int, float)


def field_filter_key(spec: SearchField) -> str | None:
    """The key of the exact-filter entries a field's values add (`key:value`), or None: a map's
    entries are keyed by the map's own keys, and schema field names and plain text add none."""
    if spec.field_type == "MAP" or spec.name in SCHEMA_FIELDS \
            or (spec.field_type in _TEXT_TYPES and spec.boost <= 1):
        return None
    return TAGS_KEY if spec.name in TAG_FIELDS else spec.name.lower()


def field_filter_keys(annotations: Iterable[AspectAnnotations]) -> frozenset[str]:
    """Every key under which some field (not a map's entries) adds exact-filter entries: a
    filter on any other key can only match map entries (and upstream tags), which the
    fragments' `properties` hold too."""
    return frozenset(key for aspect in annotations for spec in aspect.searchable
                     if (key := field_filter_key(spec)) is not None)


def facet_name(spec: SearchField) -> str | None:
    """The facet a searchable field's values count in (None: not a facet). Every tag field
    counts in `tags`; a faceted map's keys count in `keys`."""
    if not spec.facet:
        return None
    return TAGS_KEY if spec.name in TAG_FIELDS else KEYS_FACET if spec.field_type == "MAP" else spec.name


def _handler(spec: SearchField) -> Handler:
    """How values of one searchable field enter a fragment, decided once per field."""
    field, scope = spec.name, "USER" if spec.name in USER_SCOPE_FIELDS else "SYSTEM"
    facet = facet_name(spec)

    if spec.field_type == "MAP":
        def on_map(found: list[Any], parts: _Parts) -> None:
            for item in found:
                if isinstance(item, dict):
                    for key, value in item.items():
                        if value is None:
                            continue
                        value = value if isinstance(value, str) else str(value)
                        entry = (key.lower(), value.lower(), scope)
                        parts.add_lines(KEYWORDS, key, [f"{key} {value}"])
                        parts.tokens.add(entry)
                        parts.properties.add(entry)
                        if facet is not None:  # a faceted map: its keys are listed and suggested
                            parts.facets.add((facet, key))
                            parts.suggestions.add((key.lower(), "key", key))
        return on_map

    if field in SCHEMA_FIELDS:
        def on_field_name(found: list[Any], parts: _Parts) -> None:
            values = _scalars(found)
            parts.add_lines(SCHEMA, field, values)
            parts.suggestions.update([(value.lower(), "field", value) for value in values])
        return on_field_name

    if spec.field_type in _TEXT_TYPES and spec.boost > 1:  # a name
        key, rank = field_filter_key(spec), (0 if field == NAME_FIELD else 100) - spec.boost

        def on_name(found: list[Any], parts: _Parts) -> None:
            for value in _scalars(found):
                lvalue = value.lower()
                parts.add_lines(NAME, field, [value])
                parts.tokens.add((key, lvalue, scope))
                parts.names.add(lvalue)
                parts.suggestions.add((lvalue, "name", value))
                if rank < parts.title_rank:
                    parts.title, parts.title_rank = value, rank
        return on_name

    if spec.field_type in _TEXT_TYPES:  # a description or other text
        rank = DESCRIPTION_FIELDS.index(field) if field in DESCRIPTION_FIELDS else NO_RANK

        def on_text(found: list[Any], parts: _Parts) -> None:
            values = _scalars(found)
            parts.add_lines(TEXT, field, values)
            if values and rank < parts.description_rank:  # the first value of the best-ranked field
                parts.description, parts.description_rank = values[0], rank
        return on_text

    is_tag, texted = field in TAG_FIELDS, spec.field_type not in _UNTEXTED_TYPES
    key = field_filter_key(spec)

    def on_keyword(found: list[Any], parts: _Parts) -> None:  # keywords, URNs, flags, counts
        texts, tokens = [], parts.tokens
        for value in _scalars(found):
            shown = simple_id(value) if value.startswith("urn:li:") else value
            if texted and shown is not None:
                texts.append(shown)
            tokens.add((key, value.lower(), scope))
            if shown is not None and shown is not value:
                tokens.add((key, shown.lower(), scope))
            if is_tag and shown is not None:
                parts.properties.add((key, shown.lower(), scope))
                parts.suggestions.add((shown.lower(), "tag", shown))
            if facet is not None:
                parts.facets.add((facet, shown or value))
            if field == REMOVED_FIELD and value == "true":
                parts.removed = True
        parts.add_lines(KEYWORDS, field, texts)
    return on_keyword


class Analyzer:
    """Turns values of one aspect into fragments."""

    def __init__(self, annotations: AspectAnnotations):
        self.annotations = annotations
        # by the field's identity: a SearchField hashes its whole path at every lookup
        self.handlers = {id(spec): _handler(spec) for spec in annotations.searchable}

    def fragment(self, value: Any) -> Fragment:
        return self._parts(value).fragment()

    def analyse(self, value: Any) -> Analysis:
        """The fragment and the exact-filter entries of a value."""
        return self._parts(value).analysis()

    def _parts(self, value: Any) -> _Parts:
        parts = _Parts()
        for spec, found in self.annotations.found(value):
            self.handlers[id(spec)](found, parts)
        if self.annotations.aspect == structured_properties.ASPECT:
            for key, lvalue in structured_properties.entries(value):
                parts.tokens.add((key, lvalue, "SYSTEM"))
                parts.properties.add((key, lvalue, "SYSTEM"))
        parts.cdap = cdap.terms(self.annotations.aspect, value)
        return parts


SMALL_VALUE = 256  # what is made of a value JSON this short is kept, for up to SMALL_VALUES of them
SMALL_VALUES = 5_000  # (a few MiB per process; the values that repeat are found again after a clear)


class FragmentPreparer:
    """Computes the prepared values of (aspect, value JSON, parsed value or None) items away
    from the database; it carries only annotations, so it can be sent to worker processes.
    What it makes of a small value is kept: small aspects (tags, status, ownership) repeat
    across a catalog, and are then neither parsed nor analysed again."""

    def __init__(self, annotations: Mapping[str, AspectAnnotations]):
        self.annotations = dict(annotations)
        self._analyzers: dict[str, Analyzer] = {}
        self._made: dict[tuple[str, str], Any] = {}  # by (aspect, small value JSON)

    def __call__(self, items: Sequence[tuple[str, str | None, Any]],
                 entities: Sequence[tuple[str, str]] | None = None) -> list[Any]:
        """Each item's prepared value (None: nothing to index); `entities`, each item's (URN,
        entity type), is for preparers that also prepare per entity."""
        return [self.made(*item) for item in items]

    def made(self, aspect: str, value_json: str | None, value: Any = None) -> Any:
        """What `make` makes of a value (parsed here if not given); None for a deleted value or
        an aspect not searched."""
        analyzer = self.analyzers().get(aspect)
        if analyzer is None or value_json is None:
            return None
        key = (aspect, value_json) if len(value_json) <= SMALL_VALUE else None
        found = self._made.get(key) if key else None
        if found is None:
            found = self.make(analyzer, orjson.loads(value_json) if value is None else value)
            if key:
                if len(self._made) >= SMALL_VALUES:
                    self._made.clear()
                self._made[key] = found
        return found

    def analyzers(self) -> dict[str, Analyzer]:
        """The analyzer of each searched aspect (made once per process)."""
        if not self._analyzers:
            self._analyzers = {name: Analyzer(a) for name, a in self.annotations.items()}
        return self._analyzers

    def make(self, analyzer: Analyzer, value: Any) -> Any:
        """What is prepared of one parsed value (see `encode`)."""
        return self.encode(analyzer, value)

    @staticmethod
    def encode(analyzer: Analyzer, value: Any) -> Any:
        """What is prepared of one value: its encoded fragment (adapters storing more override this)."""
        return analyzer.fragment(value).encode()

    def __getstate__(self) -> dict[str, Any]:
        return {"annotations": self.annotations}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["annotations"])  # type: ignore[misc]


def is_derived(part: str) -> bool:
    """Whether a document part is derived by the read models rather than an aspect of the store."""
    return part.startswith(DERIVED_PREFIX)


def tags_of(fragment: Fragment, upstream: bool = False) -> set[str]:
    """The tags an aspect's fragment carries, as `tags:` finds them (lower-cased, without
    `urn:li:tag:`); with `upstream`, the upstream tags an upstream-tags part holds."""
    key = UPSTREAM_TAGS_KEY if upstream else TAGS_KEY
    return {lvalue for found, lvalue, _ in fragment.properties if found == key}


def upstream_tags_part(annotations: Annotations, analyzers: Mapping[str, Analyzer], urn: str,
                       tags: Iterable[str]) -> Analysis | None:
    """A field's upstream-tags part (None for no tags, or a URN of no registered entity): the
    filter entries `upstreamtags` = each tag (SYSTEM scope, also kept for `upstreamTags:pi*`),
    and, from what the entity's key aspect would add, its shown name and CDAP terms, so that a
    field known only from lineage has a name and the terms searches are restricted by. No
    text: free-text terms never match upstream tags."""
    tags = sorted(set(tags))
    if not tags:
        return None
    registry = annotations.registry
    try:
        parsed = Urn.parse(urn)
        key = analyzers[registry.entities[parsed.entity_type].key_aspect].fragment(registry.key_value(parsed))
    except (UrnError, KeyError, ValueError):
        return None
    parts = _Parts()
    for tag in tags:
        entry = (UPSTREAM_TAGS_KEY, tag, "SYSTEM")
        parts.tokens.add(entry)
        parts.properties.add(entry)
    parts.title, parts.title_rank = key.title, DERIVED_TITLE_RANK
    parts.cdap = set(key.terms.split())  # computed here, so never of the old layout
    return parts.analysis()


def merge(entity_type: str, parts: Sequence[Fragment]) -> Document:
    """An entity's document from its aspects' fragments (in aspect order)."""
    title = min(parts, key=lambda p: p.title_rank)
    description = min(parts, key=lambda p: p.description_rank)
    removed = any(p.removed for p in parts)
    texts = tuple("\n".join(p.texts[i] for p in parts if p.texts[i]) for i in range(4))
    split = [_meta_and_terms(p) for p in parts]
    meta = [everything_token(), type_token(entity_type), *(m for m, _ in split if m)]
    name_meta = [type_token(entity_type)]
    name_meta += sorted({name_token(lvalue) for p in parts for lvalue, kind, _ in p.suggestions if kind == "name"})
    if removed:
        meta.insert(0, removed_token())
        name_meta.insert(0, removed_token())
    facets = sorted({("entityType", entity_type), *((f, v) for p in parts for f, v in p.facets)})
    return Document(title.title, description.description, removed, (*texts, " ".join(meta)), facets,  # type: ignore[arg-type]
                    " ".join(name_meta), " ".join(t for _, t in split if t))


def _meta_and_terms(fragment: Fragment) -> tuple[str, str]:
    """A fragment's meta tokens without its CDAP terms, and its CDAP terms (taken out of meta
    in a fragment stored before they had a field of their own)."""
    if fragment.terms or not fragment.meta:
        return fragment.meta, fragment.terms
    tokens = fragment.meta.split()
    return (" ".join(t for t in tokens if not t.startswith(cdap.TERM_PREFIX)),
            " ".join(t for t in tokens if t.startswith(cdap.TERM_PREFIX)))


def line_fields(parts: Sequence[Fragment], column: int) -> list[str]:
    """The index field of each line of a merged document's column."""
    return [field for p in parts if p.texts[column] for field, count in p.fields[column] for _ in range(count)]
