"""Searches of DataHub's GraphQL API run on Lodestar's search index (the `SearchIndex` port).

A search is a free-text query and `Branch`es (filters.py), its alternatives. One branch is one
index query. Several are merged in URN order (each branch's query sorted by URN, duplicates
dropped), so paging through their union is exact; their total is counted by walking the union
when it is small, else by inclusion-exclusion over the branches' intersections (each again one
index query), and so are facet counts (estimated as the index estimates its own past a sample).

Scrolling keeps, in an opaque cursor, each branch's position and the last URN answered: the next
page starts a little before each position and skips what is not after that URN, so entities
added or removed meanwhile neither repeat nor hide the rest (up to SLACK removals per page)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from graphql import GraphQLError

from lodestar.api.graphql.entities import ENTITY_TYPES, TRANSIENT_TYPES
from lodestar.api.graphql.filters import Branch
from lodestar.api.limits import MAX_COUNT
from mcl_processor.search import SearchHit, SearchIndex, SearchResult
from mcl_processor.search.cdap import RESOURCE, All, Expr, any_of
from schemas.metadata_entity import resource_chain

SLACK = 50  # positions a scroll page starts before where the last one stopped
MAX_MERGED = 10_000  # hits walked to page or count the union of several branches
MAX_EXACT_URNS = 1_000  # URNs an `urn` filter may name
MAX_INCLUSION_EXCLUSION = 5  # branches whose intersections are counted (2^5 - 1 queries)
FACET_VALUES = 20
SERVED_TYPES = tuple(sorted(set(ENTITY_TYPES) - TRANSIENT_TYPES))


@dataclass(frozen=True)
class Search:
    """What to search: free text (Lodestar's query language; "*" for everything), the
    alternatives, the caller's readable resources as an index condition, and the order."""

    text: str
    branches: list[Branch]
    within: Expr | None
    sort: str = "relevance"  # relevance | urn | -urn | name | -name

    def key(self) -> str:
        """A fingerprint a scroll cursor carries, so it is not used for another search."""
        text = json.dumps([self.text, self.sort, [_branch_json(b) for b in self.branches]], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _branch_json(b: Branch) -> list[Any]:
    return [list(b.terms), sorted(b.types or []), b.removed, sorted(b.urns or []), sorted(b.degrees or [])]


@dataclass
class Page:
    hits: list[SearchHit]
    total: Callable[[], int]
    facets: Callable[[], dict[str, list[tuple[str, int]]]]
    next_cursor: str | None = None


def query_text(text: str | None) -> str:
    text = (text or "").strip()
    return text or "*"


class _Source:
    """One branch's hits in the search's order, fetched in pages from `start`."""

    def __init__(self, index: SearchIndex, search: Search, branch: Branch):
        self.index, self.search, self.branch = index, search, branch
        self.first: SearchResult | None = None
        self.listed: list[SearchHit] | None = None  # the hits of a branch of exact URNs
        if branch.urns is not None:
            self.listed = self._exact_urns()

    def _types(self) -> list[str]:
        return sorted(self.branch.types) if self.branch.types is not None else list(SERVED_TYPES)

    def _query(self) -> str:
        only_removed = ("removed:true",) if self.branch.removed == "only" else ()
        return " ".join([self.search.text, *self.branch.terms, *only_removed])

    def fetch(self, start: int, count: int, within: Expr | None = None) -> SearchResult:
        if self.listed is not None:
            return SearchResult(len(self.listed), self.listed[start:start + count], {})
        try:
            result = self.index.query(self._query(), self._types(), start, count,
                                      self.branch.removed in ("any", "only"), self.search.sort, None,
                                      both(self.search.within, within))
        except ValueError as err:
            raise GraphQLError(str(err)) from None
        if self.first is None and within is None:
            self.first = result
        return result

    def total(self) -> int:
        if self.listed is not None:
            return len(self.listed)
        if self.first is None:
            self.fetch(0, 0)
        assert self.first is not None
        return self.first.total

    def _exact_urns(self) -> list[SearchHit]:
        assert self.branch.urns is not None
        if len(self.branch.urns) > MAX_EXACT_URNS:
            raise GraphQLError(f"filter on 'urn': at most {MAX_EXACT_URNS} values are supported")
        types = set(self._types())
        found = []
        for urn in sorted(self.branch.urns):
            if urn.removeprefix("urn:li:").partition(":")[0] not in types:
                continue
            near = resource_chain(urn)[0]
            start = 0
            while True:  # the entities checked against this resource: the URN's, and those under it
                result = self.fetch(start, 200, any_of(RESOURCE, [near]))
                hit = next((h for h in result.hits if h.urn == urn), None)
                if hit is not None:
                    found.append(hit)
                    break
                start += len(result.hits)
                if not result.hits or start >= result.total:
                    break
        return _ordered(found, self.search.sort)


def both(a: Expr | None, b: Expr | None) -> Expr | None:
    return b if a is None else a if b is None else All((a, b))


def _ordered(hits: list[SearchHit], sort: str) -> list[SearchHit]:
    if sort.lstrip("-") == "name":
        return sorted(hits, key=lambda h: ((h.name or "").lower(), h.urn), reverse=sort.startswith("-"))
    return sorted(hits, key=lambda h: h.urn, reverse=sort == "-urn")


class _Stream:
    """A source read forward from a position, in chunks, skipping hits not after `last`."""

    def __init__(self, source: _Source, position: int, last: str | None, descending: bool, chunk: int):
        self.source, self.last, self.descending, self.chunk = source, last, descending, chunk
        self.next_fetch = max(0, position - SLACK) if last is not None else position
        self.position = position  # the position after the last hit taken
        self.buffer: list[tuple[int, SearchHit]] = []
        self.done = False

    def _after_last(self, urn: str) -> bool:
        return self.last is None or (urn < self.last if self.descending else urn > self.last)

    def peek(self) -> tuple[int, SearchHit] | None:
        while not self.buffer and not self.done:
            hits = self.source.fetch(self.next_fetch, self.chunk).hits
            self.buffer = [(self.next_fetch + i, h) for i, h in enumerate(hits) if self._after_last(h.urn)]
            self.buffer.reverse()  # popped from the end
            self.next_fetch += len(hits)
            self.done = len(hits) < self.chunk
        return self.buffer[-1] if self.buffer else None

    def take(self) -> SearchHit:
        position, hit = self.buffer.pop()
        self.position = position + 1
        return hit


def _merged(streams: Sequence[_Stream], descending: bool) -> Iterator[SearchHit]:
    """The union of streams sorted by URN, each URN once."""
    while True:
        heads = [(head[1].urn, s) for s in streams if (head := s.peek()) is not None]
        if not heads:
            return
        best = max(u for u, _ in heads) if descending else min(u for u, _ in heads)
        hit = None
        for urn, stream in heads:
            if urn == best:
                hit = stream.take()
        assert hit is not None
        yield hit


@dataclass
class Searcher:
    index: SearchIndex
    search: Search
    skip_facets: bool = False
    sources: list[_Source] = field(init=False)

    def __post_init__(self) -> None:
        self.sources = [_Source(self.index, self.search, b) for b in self.search.branches]

    def _merge_sort(self) -> bool:
        """Whether several branches can be merged in this order (by URN only)."""
        return self.search.sort in ("urn", "-urn")

    def page(self, start: int, count: int) -> Page:
        """The hits from `start` on, at most `count`."""
        if not self.sources:
            return Page([], lambda: 0, lambda: {})
        if len(self.sources) == 1:
            result = self.sources[0].fetch(start, count)
            return Page(result.hits, lambda: result.total, lambda: self._facets(result))
        if not self._merge_sort():
            raise GraphQLError(f"sortInput: with filters of several alternatives results come in URN order only,"
                               f" not by {self.search.sort.lstrip('-')}")
        if start + count > MAX_MERGED:
            raise GraphQLError(f"start + count over {MAX_MERGED} with filters of several alternatives:"
                               " page further with scrollAcrossEntities")
        streams = [_Stream(s, 0, None, self.search.sort == "-urn", _chunk(start + count)) for s in self.sources]
        hits = []
        for i, hit in enumerate(_merged(streams, self.search.sort == "-urn")):
            if i >= start + count:
                break
            if i >= start:
                hits.append(hit)
        return Page(hits, self._total, lambda: self._facets(None))

    def scroll(self, cursor: str | None, count: int) -> Page:
        """The next page after `cursor` (None: the first) and the cursor after it (None: no more)."""
        if not self.sources:
            return Page([], lambda: 0, lambda: {})
        positions, last = self._decode(cursor)
        if not self._merge_sort():
            if len(self.sources) > 1:
                raise GraphQLError("sortInput: with filters of several alternatives results come in URN order only")
            result = self.sources[0].fetch(positions[0], count)
            end = positions[0] + len(result.hits)
            more = end < result.total and bool(result.hits)
            return Page(result.hits, lambda: result.total, lambda: self._facets(result),
                        self._encode([end], None) if more else None)
        descending = self.search.sort == "-urn"
        streams = [_Stream(s, p, last, descending, _chunk(count)) for s, p in zip(self.sources, positions, strict=True)]
        hits = []
        merged = _merged(streams, descending)
        while len(hits) < count:
            hit = next(merged, None)
            if hit is None:
                break
            hits.append(hit)
        more = bool(hits) and any(s.peek() is not None for s in streams)
        cursor_after = self._encode([s.position for s in streams], hits[-1].urn) if more else None
        if len(self.sources) == 1:
            return Page(hits, self.sources[0].total, lambda: self._facets(None), cursor_after)
        return Page(hits, self._total, lambda: self._facets(None), cursor_after)

    def _encode(self, positions: list[int], last: str | None) -> str:
        text = json.dumps({"k": self.search.key(), "p": positions, "l": last}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def _decode(self, cursor: str | None) -> tuple[list[int], str | None]:
        if not cursor:
            return [0] * len(self.sources), None
        try:
            found = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            positions, last = found["p"], found["l"]
            ok = (found["k"] == self.search.key() and isinstance(positions, list)
                  and len(positions) == len(self.sources)
                  and all(isinstance(p, int) and 0 <= p <= 10**12 for p in positions)
                  and (last is None or isinstance(last, str)))
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            ok = False
        if not ok:
            raise GraphQLError("scrollId: not a scroll position of this search (pass back the nextScrollId of the"
                               " same query, types and filters)")
        return positions, last

    # -- totals and facets of several branches ---------------------------------------------

    def _total(self) -> int:
        if len(self.sources) == 1:
            return self.sources[0].total()
        if sum(s.total() for s in self.sources) <= MAX_MERGED:
            streams = [_Stream(s, 0, None, False, _chunk(MAX_MERGED)) for s in self.sources]
            return sum(1 for _ in _merged(streams, False))
        return round(self._inclusion_exclusion(lambda result: {"": [("", result.total)]}, "total")[""].get("", 0))

    def _facets(self, result: SearchResult | None) -> dict[str, list[tuple[str, int]]]:
        if self.skip_facets:
            return {}
        if result is not None and self.sources[0].listed is None:
            return result.facets
        if len(self.sources) == 1 and self.sources[0].listed is None:
            return self.sources[0].fetch(0, 0).facets
        combined = self._inclusion_exclusion(lambda r: r.facets, "facets")
        return {name: sorted(((v, round(c)) for v, c in counts.items() if round(c) > 0),
                             key=lambda vc: (-vc[1], vc[0]))[:FACET_VALUES]
                for name, counts in combined.items()}

    def _inclusion_exclusion(self, measure: Callable[[SearchResult], dict[str, list[tuple[str, int]]]],
                             what: str) -> dict[str, Counter[str]]:
        """Per name and value, the count over the union of the branches: the counts of every
        intersection of branches, added for odd and subtracted for even numbers of branches."""
        if len(self.sources) > MAX_INCLUSION_EXCLUSION or any(s.listed is not None for s in self.sources):
            raise GraphQLError(f"{what}: not supported with a urn filter or filters of more than"
                               f" {MAX_INCLUSION_EXCLUSION} alternatives over more than {MAX_MERGED} hits")
        out: dict[str, Counter[str]] = {}
        branches = self.search.branches
        for size in range(1, len(branches) + 1):
            sign = 1 if size % 2 else -1
            for chosen in combinations(branches, size):
                both: Branch | None = chosen[0]
                for other in chosen[1:]:
                    both = both.and_(other) if both is not None else None
                if both is None:
                    continue
                for name, values in measure(_Source(self.index, self.search, both).fetch(0, 0)).items():
                    counter = out.setdefault(name, Counter())
                    for value, count in values:
                        counter[value] += sign * count
        return out


def _chunk(count: int) -> int:
    return min(max(count + SLACK, 100), MAX_COUNT)
