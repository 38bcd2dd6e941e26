"""URNs: `urn:li:<entityType>:<id>` where <id> is one value or a tuple `(part,part,...)`.

Tuple parts may themselves be URNs with parentheses (a dataJob's flow, a schemaField's
dataset), nested at most MAX_NESTING deep; commas and parentheses inside a part are
percent-encoded, as DataHub does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

PREFIX = "urn:li:"
MAX_NESTING = 20  # tuples within tuples of one URN (DataHub's deepest, a schemaField's dataset's, is 2)
URN_CACHE = 8192  # parsed URNs kept per process (about 600 bytes each): the URNs of a few requests' batches
_ENCODE = {"%": "%25", "(": "%28", ")": "%29", ",": "%2C"}
_STRUCTURE = re.compile(r"[(),]")
_set = object.__setattr__
_PARENTHESES = re.compile(r"[()]")


class UrnError(ValueError):
    """A string that is not a well-formed URN."""


def encode_part(text: str) -> str:
    """Percent-encode the characters that would break a URN tuple."""
    return "".join(_ENCODE.get(ch, ch) for ch in text)


@dataclass(frozen=True, slots=True)
class Urn:
    entity_type: str
    parts: tuple[str, ...]
    _text: str = field(init=False, repr=False, compare=False)  # the string form, made once

    def __post_init__(self) -> None:
        if len(self.parts) == 1 and not self.parts[0].startswith("("):
            text = f"{PREFIX}{self.entity_type}:{self.parts[0]}"
        else:
            text = f"{PREFIX}{self.entity_type}:({','.join(self.parts)})"
        object.__setattr__(self, "_text", text)

    def __str__(self) -> str:
        return self._text

    @classmethod
    def create(cls, entity_type: str, *parts: str) -> Urn:
        return cls(entity_type, tuple(parts))

    @classmethod
    def parse(cls, text: str) -> Urn:
        """Parse a URN; raises UrnError saying what is wrong. Results are cached."""
        if not isinstance(text, str):
            raise UrnError(f"{text!r} is not a string")
        return _parse(text)

    @classmethod
    def _parse(cls, text: str) -> Urn:
        if not text.startswith(PREFIX):
            raise UrnError(f"{text!r} does not start with {PREFIX!r}")
        rest = text[len(PREFIX):]
        entity_type, sep, ident = rest.partition(":")
        if not sep or not entity_type or not entity_type.isidentifier():
            raise UrnError(f"{text!r} has no entity type (expected urn:li:<type>:<id>)")
        if not ident:
            raise UrnError(f"{text!r} has an empty id")
        if ident.startswith("("):
            if not ident.endswith(")"):
                raise UrnError(f"{text!r}: tuple id is not closed by ')'")
            parts = _split_tuple(ident[1:-1], text)
            if len(parts) == 1:  # written without its parentheses
                return cls(entity_type, parts)
        else:
            _check_balanced(ident, text)
            parts = (ident,)
        urn = object.__new__(cls)  # `text` is the string form __post_init__ would make
        _set(urn, "entity_type", entity_type)
        _set(urn, "parts", parts)
        _set(urn, "_text", text)
        return urn


@lru_cache(maxsize=URN_CACHE)
def _parse(text: str) -> Urn:
    return Urn._parse(text)


def _split_tuple(body: str, whole: str) -> tuple[str, ...]:
    if "(" not in body and ")" not in body:  # no nested URN: every comma separates (the usual case)
        flat = tuple(body.split(","))
        if not all(flat):
            raise UrnError(f"{whole!r}: empty part in tuple")
        return flat
    if body.count("(") == 1 and body.count(")") == 1 and (opened := body.index("(")) < (closed := body.index(")")):
        # one nested URN without tuples of its own inside (a schemaField's dataset): the commas outside it separate
        head, tail = body[:opened].split(","), body[closed + 1:].split(",")
        found = (*head[:-1], head[-1] + body[opened:closed + 1] + tail[0], *tail[1:])
        if not all(found):
            raise UrnError(f"{whole!r}: empty part in tuple")
        return found
    parts: list[str] = []
    depth = 0
    start = 0
    for match in _STRUCTURE.finditer(body):  # only the parentheses and commas
        ch = match[0]
        if ch == "(":
            depth += 1
            if depth >= MAX_NESTING:
                raise UrnError(f"{whole[:200]!r}...: tuples nested over {MAX_NESTING} deep")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise UrnError(f"{whole!r}: unbalanced ')'")
        elif depth == 0:
            i = match.start()
            parts.append(body[start:i])
            start = i + 1
    if depth != 0:
        raise UrnError(f"{whole!r}: unbalanced '('")
    parts.append(body[start:])
    if any(not p for p in parts):
        raise UrnError(f"{whole!r}: empty part in tuple")
    return tuple(parts)


def _check_balanced(ident: str, whole: str) -> None:
    if "(" not in ident and ")" not in ident:
        return
    depth = 0
    for match in _PARENTHESES.finditer(ident):
        depth += 1 if match[0] == "(" else -1
        if depth > MAX_NESTING:
            raise UrnError(f"{whole[:200]!r}...: tuples nested over {MAX_NESTING} deep")
        if depth < 0:
            raise UrnError(f"{whole!r}: unbalanced ')'")
    if depth:
        raise UrnError(f"{whole!r}: unbalanced '('")
