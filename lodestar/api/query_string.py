"""Elasticsearch's query-string syntax (as DataHub's OpenAPI scroll takes it) as Lodestar searches.

    field:"exact value"   field:value   field:prefix*   free text   *
    a AND b   a OR b   a && b   a || b   NOT a   -a   !a   +a   (groups)

Terms next to each other are AND-ed (DataHub's default operator). Backslash escapes a
character; a field's `.keyword` suffix is dropped (Lodestar's filters match whole values
already). A query becomes the clauses of its disjunctive normal form: an entity matches when it
matches some clause's positive parts (Lodestar query-language terms, `mcl_processor/query_syntax.py`)
and none of its negative ones. Ranges, fuzzy terms, boosts and wildcards other than one
trailing `*` are refused (`QueryStringError`, naming what and where)."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CLAUSES = 16  # clauses a query may multiply out to
_FIELD = re.compile(r"[A-Za-z_@][\w.@-]*")
_OPERATORS = {"AND": "AND", "&&": "AND", "OR": "OR", "||": "OR", "NOT": "NOT"}
_UNSUPPORTED = set("~^[]{}?")


class QueryStringError(ValueError):
    """A query outside the supported syntax; the message names what and where."""


@dataclass(frozen=True)
class Clause:
    """Lodestar query-language terms that must all hold, and terms none of which may hold."""

    positive: tuple[str, ...]
    negative: tuple[str, ...] = ()


# -- the tree -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Atom:
    term: str  # one Lodestar query-language term


@dataclass(frozen=True)
class _Not:
    part: _Node


@dataclass(frozen=True)
class _Both:
    parts: tuple[_Node, ...]


@dataclass(frozen=True)
class _Either:
    parts: tuple[_Node, ...]


_Node = _Atom | _Not | _Both | _Either


# -- tokens ---------------------------------------------------------------------------------


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position): kinds "(", ")", "op" (AND, OR, NOT), "sign" (+, -, !), "word"
    (a term as typed, escapes and quotes kept)."""
    out: list[tuple[str, str, int]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "()":
            out.append((char, char, i))
            i += 1
        elif text.startswith(("&&", "||"), i):
            out.append(("op", _OPERATORS[text[i:i + 2]], i))
            i += 2
        elif char in "+-!":
            out.append(("sign", char, i))
            i += 1
        else:
            start, quoted = i, False
            while i < len(text):
                char = text[i]
                if char == "\\":
                    if i + 1 == len(text):
                        raise QueryStringError(f"query: a backslash ends the query at position {i}")
                    i += 2
                    continue
                if char == '"':
                    quoted = not quoted
                elif not quoted and (char.isspace() or char in "()"):
                    break
                i += 1
            if quoted:
                raise QueryStringError(f"query: the quote opened at or after position {start} is not closed")
            word = text[start:i]
            out.append(("op", _OPERATORS[word], start) if word in _OPERATORS else ("word", word, start))
    return out


def _unescaped(text: str, where: str) -> str:
    """The text without its backslash escapes; refuses the special characters left unescaped."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            out.append(text[i + 1])
            i += 2
            continue
        if text[i] in _UNSUPPORTED or text[i] == "*" and i != len(text) - 1:
            raise QueryStringError(f"query: {where}: {text[i]!r} (ranges, fuzzy terms, boosts and wildcards but one"
                                   " trailing '*' are not supported; escape it with a backslash)")
        out.append(text[i])
        i += 1
    return "".join(out)


def _term(word: str, position: int) -> str:
    """The Lodestar query-language term of one word (`field:value`, free text or `*`)."""
    where = f"{word!r} at position {position}"
    field, value = "", word
    match = _FIELD.match(word)
    if match and word[match.end():match.end() + 1] == ":":
        field, value = match.group().removesuffix(".keyword"), word[match.end() + 1:]
    if value == "*":
        return f"{field}:*" if field else "*"
    quoted = len(value) >= 2 and value[0] == value[-1] == '"'
    if '"' in (value[1:-1] if quoted else value).replace('\\"', ""):
        raise QueryStringError(f"query: {where}: a quote inside a term")
    prefix = not quoted and value.endswith("*") and not value.endswith("\\*")
    text = _unescaped(value[1:-1] if quoted else value.removesuffix("*") if prefix else value, where)
    if '"' in text or not text.strip():
        raise QueryStringError(f"query: {where}: an empty value or a value holding a quote is not supported")
    if field:
        if prefix and (not text or any(c.isspace() for c in text)):
            raise QueryStringError(f"query: {where}: a prefix is one word")
        return f"{field}:{text}*" if prefix else f'{field}:"{text}"'
    return f"{text}*" if prefix else f'"{text}"'


# -- parsing --------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str):
        self.tokens, self.at = _tokens(text), 0

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def either(self) -> _Node:
        parts = [self.both()]
        while (token := self._peek()) is not None and token[:2] == ("op", "OR"):
            self.at += 1
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else _Either(tuple(parts))

    def both(self) -> _Node:
        parts = [self.unary()]
        while (token := self._peek()) is not None and token[0] != ")" and token[:2] != ("op", "OR"):
            if token[:2] == ("op", "AND"):
                self.at += 1
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else _Both(tuple(parts))

    def unary(self) -> _Node:
        token = self._peek()
        if token is None:
            raise QueryStringError("query: a term is missing at its end")
        kind, text, position = token
        self.at += 1
        if kind == "sign" or (kind, text) == ("op", "NOT"):
            part = self.unary()
            return part if text == "+" else _Not(part)
        if kind == "(":
            inner = self.either()
            closing = self._peek()
            if closing is None or closing[0] != ")":
                raise QueryStringError(f"query: the parenthesis at position {position} is not closed")
            self.at += 1
            return inner
        if kind == "word":
            return _Atom(_term(text, position))
        raise QueryStringError(f"query: unexpected {text!r} at position {position}")


def _clauses(node: _Node, negated: bool) -> list[tuple[frozenset[str], frozenset[str]]]:
    """The node's (or its negation's) disjunctive normal form: (positive, negative) term sets."""
    if isinstance(node, _Atom):
        return [(frozenset(), frozenset({node.term}))] if negated else [(frozenset({node.term}), frozenset())]
    if isinstance(node, _Not):
        return _clauses(node.part, not negated)
    alternatives = isinstance(node, _Either) != negated  # De Morgan
    parts = [_clauses(part, negated) for part in node.parts]
    if alternatives:
        out = [clause for part in parts for clause in part]
    else:
        out = [(frozenset(), frozenset())]
        for part in parts:
            out = [(a[0] | b[0], a[1] | b[1]) for a in out for b in part]
            if len(out) > MAX_CLAUSES * 4:
                break
    if len(out) > MAX_CLAUSES:
        raise QueryStringError(f"query: multiplies out to more than {MAX_CLAUSES} alternatives")
    return out


def parse(text: str) -> list[Clause]:
    """The clauses of a query (an empty query or `*`: everything), duplicates and clauses that
    contradict themselves left out."""
    if not text.strip():
        return [Clause(("*",))]
    parser = _Parser(text)
    tree = parser.either()
    if parser.at < len(parser.tokens):
        _, extra, position = parser.tokens[parser.at]
        raise QueryStringError(f"query: unexpected {extra!r} at position {position}")
    out: list[Clause] = []
    for positive, negative in _clauses(tree, False):
        if positive & negative:
            continue
        clause = Clause(tuple(sorted(positive)) or ("*",), tuple(sorted(negative)))
        if clause not in out:
            out.append(clause)
    return out
