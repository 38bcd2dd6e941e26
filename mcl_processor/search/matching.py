"""Which values of a document a query matched (a hit's `matches`) and the tags it carries (a hit's
`tags`), shared by every adapter."""

from __future__ import annotations

from collections.abc import Sequence

from mcl_processor.query_syntax import Query, tokens
from mcl_processor.search import TAG_FIELDS, USER_SCOPE_FIELDS
from mcl_processor.search.document import KEYWORDS, SCHEMA, TAGS_KEY, Fragment, line_fields

MAX_MATCHES = 5


def hit_matches(parts: Sequence[Fragment], parsed: Query) -> list[dict[str, str]]:
    """The values the free-text and schema terms matched, then the filters, at most MAX_MATCHES."""
    filters = [{"field": f.key, "value": f.value + ("*" if f.prefix else "")} for f in parsed.filters]
    filters += [{"field": TAGS_KEY, "value": f.value + ("*" if f.prefix else "")} for f in parsed.tags]
    return (matched_lines(parts, parsed) + filters)[:MAX_MATCHES]


def matched_lines(parts: Sequence[Fragment], parsed: Query) -> list[dict[str, str]]:
    """The values of a document the free-text and schema terms matched, with their index fields."""
    out: list[dict[str, str]] = []
    for column in range(4):
        terms = [list(t.tokens) for t in parsed.terms]
        if column == SCHEMA:
            terms += [list(t.tokens) for t in parsed.schema]
        if not terms:
            continue
        lines = [line for p in parts if p.texts[column] for line in p.texts[column].split("\n")]
        for field, line in zip(line_fields(parts, column), lines, strict=True):
            if any(has_tokens(line, wanted) for wanted in terms):
                out.append({"field": field, "value": line})
    return out


def has_tokens(value: str, wanted: list[str]) -> bool:
    """Whether the wanted tokens occur in order in value's tokens, the last as a prefix."""
    have = tokens(value)
    n = len(wanted)
    return any(have[i:i + n - 1] == wanted[:-1] and have[i + n - 1].startswith(wanted[-1])
               for i in range(len(have) - n + 1))


def hit_tags(parts: Sequence[Fragment]) -> list[dict[str, str]]:
    """The entity's tags as the document holds them (CDAP's USER and SYSTEM tags, DataHub's tags
    by name), each once per index field, with the field and its scope."""
    lines = [line for p in parts if p.texts[KEYWORDS] for line in p.texts[KEYWORDS].split("\n")]
    found = dict.fromkeys((field, line) for field, line in zip(line_fields(parts, KEYWORDS), lines, strict=True)
                          if field in TAG_FIELDS)
    return [{"field": field, "value": value, "scope": "USER" if field in USER_SCOPE_FIELDS else "SYSTEM"}
            for field, value in found]
