"""SQL LIKE patterns (`%` any run of characters, `_` any one) matched without regular expressions.

A pattern comes from callers (`urnLike`, a webhook's `urnPattern`, `--urn-like`), so it is never
compiled into a regular expression, whose backtracking is exponential in the number of `%`. The
pattern is split at each `%` into pieces of fixed length; the first must match at the start, the
last at the end, and each one between at its leftmost place after the one before: greedy left to
right, which is exact for LIKE and takes at most (text length × pattern length) steps.
"""

from __future__ import annotations

MAX_PATTERN_LENGTH = 1_000  # characters of a pattern a caller may configure (an URN is rarely longer)


class LikePattern:
    """One LIKE pattern; `matches(text)` holds when the whole text matches it."""

    __slots__ = ("pattern", "_ignore_case", "_pieces")

    def __init__(self, pattern: str, ignore_case: bool = False):
        self.pattern = pattern
        self._ignore_case = ignore_case
        self._pieces = (pattern.lower() if ignore_case else pattern).split("%")

    def __repr__(self) -> str:
        return f"LikePattern({self.pattern!r})"

    def matches(self, text: str) -> bool:
        if self._ignore_case:
            text = text.lower()
        pieces = self._pieces
        if len(pieces) == 1:
            return len(text) == len(pieces[0]) and _at(text, 0, pieces[0])
        first, last = pieces[0], pieces[-1]
        end = len(text) - len(last)
        if end < len(first) or not _at(text, 0, first) or not _at(text, end, last):
            return False
        position = len(first)
        for piece in pieces[1:-1]:
            found = _find(text, piece, position, end)
            if found < 0:
                return False
            position = found + len(piece)
        return True


def _at(text: str, position: int, piece: str) -> bool:
    """Whether piece (`_` any one character) matches text at position."""
    if "_" not in piece:
        return text.startswith(piece, position)
    if position + len(piece) > len(text):
        return False
    return all(p == "_" or p == t for p, t in zip(piece, text[position:position + len(piece)], strict=True))


def _find(text: str, piece: str, start: int, end: int) -> int:
    """The leftmost position in [start, end - len(piece)] where piece matches, else -1."""
    if "_" not in piece:
        return text.find(piece, start, end)
    # Candidates come from the longest literal run of the piece, found by str.find.
    runs = [(offset, run) for offset, run in _runs(piece) if run]
    if not runs:
        return start if start + len(piece) <= end else -1
    offset, run = max(runs, key=lambda r: len(r[1]))
    position = start
    while position + len(piece) <= end:
        hit = text.find(run, position + offset, end - (len(piece) - offset - len(run)))
        if hit < 0:
            return -1
        candidate = hit - offset
        if _at(text, candidate, piece):
            return candidate
        position = candidate + 1
    return -1


def _runs(piece: str) -> list[tuple[int, str]]:
    """The literal runs of a piece between its `_`, with their offsets."""
    runs, offset = [], 0
    for run in piece.split("_"):
        runs.append((offset, run))
        offset += len(run) + 1
    return runs
