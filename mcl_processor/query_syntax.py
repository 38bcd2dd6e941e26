"""The search query language, parsed independently of any index.

    orders customer     free-text terms, OR-ed, relevance ranked (a term also matches as a prefix)
    cust*               prefix only
    "daily orders"      a phrase
    tier:gold           property (or index field) equals, case-insensitively; `tier:gol*` for a prefix,
                        `tier:*` for any value
    tags:pii            the entity carries the tag (globalTags, USER or SYSTEM scope tags)
    upstreamTags:pii    a field derived from a field that carries the tag (mcl_processor/upstream_tags.py)
    schema:customer_id  the entity's schema has the field (a bare `customer_id` also finds it)
    *                   everything

`key:value`, `tags:` and `schema:` terms are filters that every result must satisfy; free-text
terms rank among the results. Text splits into tokens at anything that is not a letter or a
digit (so at - _ : , . / and whitespace), like the index does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[^\W_]+")
_PART = re.compile(r'([A-Za-z][\w.-]*):"([^"]*)"|"([^"]*)"|(\S+)')
_KEY = re.compile(r"[A-Za-z][\w.-]*")
TAG_KEYS = frozenset({"tags", "tag"})
SCHEMA_KEYS = frozenset({"schema", "field"})


def tokens(text: str) -> list[str]:
    """Lower-case tokens: runs of letters and digits."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True, slots=True)
class Term:
    """Free text: a phrase of tokens; `prefix` lets the last token match as a prefix only."""

    tokens: tuple[str, ...]
    prefix: bool
    text: str  # lower-cased, as typed without '*': compared with whole names for the exact boost


@dataclass(frozen=True, slots=True)
class Filter:
    """`key:value`: an exact (or prefix) match of a whole value, lower-cased."""

    key: str
    value: str
    prefix: bool


@dataclass
class Query:
    terms: list[Term] = field(default_factory=list)
    schema: list[Term] = field(default_factory=list)
    filters: list[Filter] = field(default_factory=list)
    tags: list[Filter] = field(default_factory=list)
    match_all: bool = False

    @property
    def matches_nothing(self) -> bool:
        return not (self.terms or self.schema or self.filters or self.tags or self.match_all)


def parse(text: str) -> Query:
    query = Query()
    for key, quoted_value, phrase, bare in _PART.findall(text):
        if phrase:
            _add_term(query.terms, phrase, quoted=True)
        elif key:
            _add_filter(query, key, quoted_value, quoted=True)
        elif bare == "*":
            query.match_all = True
        elif ":" in bare and _KEY.fullmatch(bare.partition(":")[0]) and bare.partition(":")[2]:
            bare_key, _, value = bare.partition(":")
            _add_filter(query, bare_key, value, quoted=False)
        else:
            _add_term(query.terms, bare, quoted=False)
    return query


def _add_term(terms: list[Term], raw: str, quoted: bool) -> None:
    prefix = not quoted and raw.endswith("*")
    found = tuple(tokens(raw))
    term = Term(found, prefix, raw.rstrip("*").lower())
    if found and term not in terms:
        terms.append(term)


def _add_filter(query: Query, key: str, value: str, quoted: bool) -> None:
    key = key.lower()
    if key in SCHEMA_KEYS:
        _add_term(query.schema, value, quoted)
        return
    prefix = not quoted and value.endswith("*")
    value = value.rstrip("*").lower() if prefix else value.lower()
    if not value.strip() and not prefix:
        return
    (query.tags if key in TAG_KEYS else query.filters).append(Filter(key, value, prefix))
