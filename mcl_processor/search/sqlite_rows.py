"""The rows a merged document gives the SQLite search tables, made by the writer or, for a new
document, ahead of it by the preparer in a worker process.

A batch's changes often bring every aspect of a new entity together (a restore's page does, but
for an entity it cuts). Merging their fragments into the document and making its full-text rows
is pure work on the fragments, so `DocumentPreparer` does it in the workers for each run of
consecutive items of one entity, and hands the result to the run's last item
(`PreparedDocument`). The writer uses it only for a document it creates in that batch whose
fragments are exactly the ones merged (same entity type, same aspects, same encoded fragments):
anything else is merged by the writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any, NamedTuple

import orjson

from mcl_processor.search.document import (
    Analyzer,
    Document,
    Fragment,
    FragmentPreparer,
    everything_token,
    merge,
    pair_tokens,
    removed_token,
    suggestion_tokens,
)

Part = tuple[str, bytes]  # (aspect, encoded fragment)


class DocumentRows(NamedTuple):
    """What a document writes, but its id: `search_docs`' columns, `search_fts`' five columns
    (meta with the schema's word pairs), `search_names`' name and meta, `search_terms`' text
    and `search_suggest`'s tokens."""

    name: str | None
    description: str | None
    removed: bool
    facets: bytes
    fts: tuple[str, str, str, str, str]
    name_meta: str
    terms: str
    suggest: str


class PreparedDocument(NamedTuple):
    """The prepared value of the last item of a run of one entity: its own encoded fragment, the
    rows of the document the run's fragments (`parts`, in aspect order) make, and each part's
    property entries (so the writer need not decode the fragments for them)."""

    fragment: bytes
    entity_type: str
    parts: tuple[Part, ...]
    rows: DocumentRows
    properties: list[tuple[str, str, str, str]]  # (key, lower-cased value, scope, aspect)


def document_rows(entity_type: str, fragments: Sequence[Fragment]) -> DocumentRows:
    """The rows of the document an entity's fragments (in aspect order) make."""
    doc = merge(entity_type, fragments)
    meta = " ".join((doc.columns[-1], *pair_tokens(doc.columns[1])))
    return DocumentRows(doc.name, doc.description, doc.removed, orjson.dumps(doc.facets),
                        (*doc.columns[:-1], meta), doc.name_meta, terms_row(doc),  # type: ignore[arg-type]
                        suggestion_tokens(fragments))


def terms_row(doc: Document) -> str:
    """A document's `search_terms` text: its CDAP terms (search/cdap.py) with the tokens of every
    document and of the soft-deleted state. The terms are most of the tokens and are only ever
    matched whole or as prefixes, so they stay out of `search_fts` and its prefix indexes
    (which tripled their cost of indexing)."""
    return " ".join([doc.terms, everything_token(), *([removed_token()] if doc.removed else [])])


class DocumentPreparer(FragmentPreparer):
    """Encoded fragments, as FragmentPreparer makes; given the items' entities, also each run's
    document (`PreparedDocument`, on the run's last item)."""

    def __call__(self, items: Sequence[tuple[str, str | None, Any]],
                 entities: Sequence[tuple[str, str]] | None = None) -> list[Any]:
        made = [self.made(*item) for item in items]  # (fragment, encoded) or None
        prepared: list[Any] = [pair and pair[1] for pair in made]
        if entities is None:
            return prepared
        analysed = [i for i, pair in enumerate(made) if pair is not None]
        for (_, entity_type), run in groupby(analysed, key=lambda i: entities[i]):
            positions = sorted(run, key=lambda i: items[i][0])  # the writer's order: by aspect, stable
            rows = document_rows(entity_type, [made[i][0] for i in positions])  # type: ignore[index]
            last = max(positions)
            prepared[last] = PreparedDocument(prepared[last], entity_type,
                                              tuple((items[i][0], prepared[i]) for i in positions), rows,
                                              [(*entry, items[i][0]) for i in positions
                                               for entry in made[i][0].properties])  # type: ignore[index]
        return prepared

    def make(self, analyzer: Analyzer, value: Any) -> tuple[Fragment, bytes]:
        """A value's fragment, and its encoding (its prepared value)."""
        fragment = analyzer.fragment(value)
        return fragment, fragment.encode()
