"""Which values of a document a query matched (a hit's `matches`), shared by every adapter."""

from __future__ import annotations

from collections.abc import Sequence

from mcl_processor.query_syntax import Query, tokens
from mcl_processor.search.document import SCHEMA, TAGS_KEY, Fragment, line_fields

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
