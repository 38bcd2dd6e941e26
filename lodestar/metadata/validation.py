"""CDAP's metadata validation: what a tag, a property key and a property value may hold.

Keys and tags: letters, digits, `_` and `-`. Values: those, spaces, and the common special
characters `. , : ; / @ # & + = ( ) ' ! ?` (CDAP's custom-entities design widens values so a
value can hold a list or a path). Search splits values into tokens at `-`, `_`, `:`, `,` and
white space only (mcl_processor/search/cdap.py `value_tokens`); every other character stays
in its token, so `/data/in (2020)` is the tokens `/data/in` and `(2020)`: `path:/data/in` and
`path:/dat*` find it, `path:data` does not. `tags` is no property key (it would shadow `tags:`
in search). Each is at most `max_length` characters
(50 unless configured, as CDAP's `metadata.max.characters.allowed`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

DEFAULT_MAX_LENGTH = 50
RESERVED_KEYS = frozenset({"tags"})
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_VALUE = re.compile(r"[A-Za-z0-9_\- .,:;/@#&+=()'!?]+")
_VALUE_CHARS = "letters, digits, spaces and _ - . , : ; / @ # & + = ( ) ' ! ?"


class InvalidMetadata(ValueError):
    """Metadata CDAP would refuse; the message names the offending key, value or tag."""


def check_tags(tags: Iterable[object], max_length: int = DEFAULT_MAX_LENGTH) -> list[str]:
    """The tags, each checked; raises InvalidMetadata naming the first bad one."""
    checked = []
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidMetadata(f"tag {tag!r} is not a string")
        _check_name("tag", tag, max_length)
        checked.append(tag)
    return checked


def check_properties(properties: Mapping[object, object], max_length: int = DEFAULT_MAX_LENGTH) -> dict[str, str]:
    """The properties, each key and value checked; raises InvalidMetadata naming the first bad one."""
    checked = {}
    for key, value in properties.items():
        if not isinstance(key, str):
            raise InvalidMetadata(f"property key {key!r} is not a string")
        _check_name("property key", key, max_length)
        if key.lower() in RESERVED_KEYS:
            raise InvalidMetadata(f"property key {key!r} is reserved (it names tags in search)")
        if not isinstance(value, str):
            raise InvalidMetadata(f"property {key!r}: value {value!r} is not a string")
        if not value.strip():
            raise InvalidMetadata(f"property {key!r}: value is empty")
        if len(value) > max_length:
            raise InvalidMetadata(f"property {key!r}: value is {len(value)} characters long, over the limit of"
                                  f" {max_length}")
        if not _VALUE.fullmatch(value):
            bad = next(ch for ch in value if not _VALUE.fullmatch(ch))
            raise InvalidMetadata(f"property {key!r}: value {value!r} holds {bad!r}; allowed: {_VALUE_CHARS}")
        checked[key] = value
    return checked


def _check_name(what: str, text: str, max_length: int) -> None:
    if not text:
        raise InvalidMetadata(f"{what} is empty")
    if len(text) > max_length:
        raise InvalidMetadata(f"{what} {text[:20]!r}... is {len(text)} characters long, over the limit of {max_length}")
    if not _NAME.fullmatch(text):
        bad = next(ch for ch in text if not _NAME.fullmatch(ch))
        raise InvalidMetadata(f"{what} {text!r} holds {bad!r}; allowed: letters, digits, _ and -")
