"""The search-index port: entity documents merged from their aspects' searchable values.

The index vocabulary (which index fields are names, descriptions, schema field names, tags,
USER-scope values) is shared by every adapter; the query language is `query_syntax`.

Ranking, in tiers: a name equal to a free-text term; names holding every term; then by the
best place a term matched (name > schema field name > keyword, tag or property > description
text), exactly before as a prefix. Within a name tier the shorter name comes first, within
the others the higher BM25 relevance; ties go by URN. Filter-only queries (`tags:pii`, `*`)
order by URN. Adapters agree on the tiers and on the name-tier order; BM25 is each engine's
own (SQLite/FTS5: column-weighted, normalised by the whole document, and a tier of more than
5,000 hits comes in index order, but a name tier of free text alone; OpenSearch: the matched
column's BM25), so within the relevance tiers equally good hits may come in another order.

Totals are exact up to TOTAL_LIMIT hits; past it an adapter may estimate (`total_estimated`;
SQLite stops counting there and extrapolates from where in its index the last counted hit
lies, OpenSearch counts every hit). Facets are counted over every hit, or, past a sample size,
over a sample scaled to the total (`facets_sampled`; SQLite samples, OpenSearch counts every
hit). So a query's cost is bounded by the page it asks for, not by how many entities match it.

A rebuild (`lodestar replay --topic versioned --into NAME`) writes a staging index beside the
live one and switches readers to it atomically (`Rebuildable`, mcl_processor/staging.py).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcl_processor.annotations import Annotations
from mcl_processor.changes import AspectChange, ChangeBatch
from mcl_processor.divergence import Divergence
from mcl_processor.staging import Rebuildable

if TYPE_CHECKING:
    from mcl_processor.search.cdap import Expr

NAME_FIELD = "name"
DESCRIPTION_FIELDS = ("editedDescription", "description")  # the first present is the shown description
SCHEMA_FIELDS = frozenset({"fieldPaths"})
TAG_FIELDS = frozenset({"tags", "userTags", "systemTags"})
# USER scope (what people write: CDAP USER metadata and DataHub tags, which a WRITE grant may change);
# everything else is SYSTEM
USER_SCOPE_FIELDS = frozenset({"userTags", "userProperties", "tags"})
SCOPES = ("USER", "SYSTEM")
SORTS = ("relevance", "name", "-name", "urn", "-urn")
TOTAL_LIMIT = 10_000  # totals up to this are exact; past it an adapter may estimate them


@dataclass(frozen=True, slots=True)
class SearchHit:
    urn: str
    entity_type: str
    name: str | None
    description: str | None
    matches: list[dict[str, str]] = field(default_factory=list)
    tags: list[dict[str, str]] = field(default_factory=list)  # {field, value, scope}: what a result card shows

    def to_json(self) -> dict[str, Any]:
        return {"urn": self.urn, "entityType": self.entity_type, "name": self.name,
                "description": self.description, "matches": self.matches, "tags": self.tags}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One page of results. The total is exact, or, when `total_estimated`, an estimate above
    TOTAL_LIMIT. Facet counts cover every hit, or, when `facets_sampled`, a sample of the hits
    scaled to the total (very broad queries)."""

    total: int
    hits: list[SearchHit]
    facets: dict[str, list[tuple[str, int]]]
    facets_sampled: bool = False
    total_estimated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "results": [hit.to_json() for hit in self.hits],
            "facets": {name: [{"value": value, "count": count} for value, count in values]
                       for name, values in self.facets.items()},
            "facetsSampled": self.facets_sampled,
            "totalEstimated": self.total_estimated,
        }


@dataclass(frozen=True, slots=True)
class Suggestion:
    """An autocompletion: an entity name, a schema field name, a tag or a metadata key, with how
    many visible entities carry it (counted up to a limit, 50 on SQLite)."""

    text: str
    kind: str  # name | field | tag | key
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "count": self.count}


class SearchIndex(Rebuildable):
    annotations: Annotations

    @abstractmethod
    def apply(self, batch: ChangeBatch) -> None:
        """Apply a batch inside the read models' current transaction."""

    @abstractmethod
    def field_tags(self, urns: Collection[str], upstream: bool = False) -> dict[str, set[str]]:
        """The tags the aspects of these entities carry (what `tags:` finds: lower-cased, without
        `urn:li:tag:`), or with `upstream` the upstream tags their documents hold, by URN
        (entities without any left out), as the writer left them (inside a transaction: with
        what it wrote so far)."""

    @abstractmethod
    def set_upstream_tags(self, tags: Mapping[str, Collection[str]]) -> None:
        """Write each field's upstream tags (lower-cased; none: an empty collection) as the derived
        part of its document (`document.upstream_tags_analysis`), where it differs. A field
        without a document gets one; a document left with nothing is dropped. Derived parts are
        no aspects: `compare` and `urns` ignore them."""

    @abstractmethod
    def query(self, query: str, types: Sequence[str] | None = None, start: int = 0, count: int = 10,
              include_removed: bool = False, sort: str = "relevance", scope: str | None = None,
              within: Expr | None = None) -> SearchResult:
        """One page of the entities matching `query` (see query_syntax).

        types: entity types to keep (None: all). scope: "USER" or "SYSTEM" restricts `key:value`
        and `tags:` to that scope's properties and tags. sort: one of SORTS (ties by URN).
        within: CDAP terms every hit has (search/cdap.py), e.g. a caller's readable resources;
        totals and facets count only such hits.
        Raises ValueError for a bad sort or scope."""

    @abstractmethod
    def select(self, expr: Expr, exclude: Expr | None = None, start: int = 0, count: int = 10,
               sort: str = "name") -> SearchResult:
        """One page of the live, not soft-deleted entities whose CDAP terms satisfy `expr` and
        not `exclude` (see search/cdap.py: CDAP's search runs here); sort: one of SORTS but
        relevance (ties by URN). The total counts every match; there are no facets."""

    @abstractmethod
    def autocomplete(self, prefix: str, limit: int = 10) -> list[Suggestion]:
        """Names, schema field names and tags of visible entities starting with `prefix` (as a
        whole, first; or at a later token), the most common first."""

    @abstractmethod
    def compare(self, urns: Sequence[str], expected: Sequence[AspectChange]) -> list[Divergence]:
        """Differences between what the index holds for these entities and their latest aspects
        (derived parts aside)."""

    @abstractmethod
    def urns(self, after: str = "", limit: int = 1000) -> list[str]:
        """URNs of the entities the index holds a document with some aspect for (not only derived
        parts), in order, after `after`."""

    @abstractmethod
    def clear(self) -> None:
        """Forget everything (inside the current transaction)."""


def checked_options(sort: str, scope: str | None, start: int, count: int) -> tuple[str | None, int, int]:
    """A query's scope (upper-cased), start and count (never negative), checked as every adapter
    checks them; raises ValueError for a bad sort or scope."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if scope is not None and scope.upper() not in SCOPES:
        raise ValueError(f"scope must be USER or SYSTEM, not {scope!r}")
    return scope and scope.upper(), max(0, start), max(0, count)
