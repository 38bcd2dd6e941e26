"""The shape of Lodestar's OpenSearch search indices: analysis, mappings and the entity document.

One index per entity type. A document holds an entity's merged document (`document.merge`
of its aspects' fragments) in fields OpenSearch can query:

* `columns.{name,schema,keywords,text}`: the full-text columns, tokenised like
  `query_syntax.tokens` (runs of letters and digits, lower-cased, accents folded), with indexed
  prefixes for `term*`;
* keyword fields for exact filters: `names` (whole names, lower-cased), `filters`
  (`key:value` entries of every scope) and `properties` (property and tag entries, for
  `key:val*`), each entry the JSON array [scope, key, lower-cased value], so a prefix of the
  encoding is a prefix of the value; `suggestions` ([lower-cased value, kind, value]);
  `cdap`: the CDAP search terms of `search/cdap.py` (prefixes of a term are prefixes of its value);
* `facets.<facet>`: one keyword field per facet the entity type's annotations declare;
* `live` (some aspect has a value), `derivedOnly` (only derived parts have: a field known from
  lineage, `upstream_tags`), `removed`, the shown `title` and `description`,
  `sortName`, `titleLength`;
* `aspects`: per aspect, the version the document reflects and its analysis (not indexed),
  from which the document is merged again when one aspect changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import orjson

from mcl_processor.annotations import Annotations
from mcl_processor.search.document import COLUMNS, Analysis, Fragment, facet_name, is_derived, merge

TEXT_COLUMNS = COLUMNS[:4]  # name, schema, text, keywords (the fifth, meta, is the FTS encoding of filters)
ENTITY_TYPE_FACET = "entityType"
KEYWORD_LIMIT = 8191  # characters: longer keyword values are not indexed (Lucene terms are at most 32766 bytes)
PREFIX_CHARS = 19  # prefixes of up to this many characters are indexed; longer ones expand terms

ANALYSIS = {
    "tokenizer": {"lodestar_tokens": {"type": "pattern", "pattern": "[^\\p{L}\\p{N}]+"}},
    "filter": {"lodestar_term_length": {"type": "truncate", "length": 1000}},
    "analyzer": {"lodestar_text": {"type": "custom", "tokenizer": "lodestar_tokens",
                                   "filter": ["lowercase", "asciifolding", "lodestar_term_length"]}},
}
_TEXT = {"type": "text", "analyzer": "lodestar_text",
         "index_prefixes": {"min_chars": 1, "max_chars": PREFIX_CHARS}}
_KEYWORD = {"type": "keyword", "ignore_above": KEYWORD_LIMIT}
_STORED = {"type": "keyword", "index": False, "doc_values": False}


def column_field(column: str) -> str:
    return f"columns.{column}"


def facet_field(facet: str) -> str:
    return f"facets.{facet}"


def facet_names(annotations: Annotations, entity_type: str | None = None) -> list[str]:
    """The facets of an entity type's aspects (of every entity type when None), entity type first."""
    registry = annotations.registry
    entities = [registry.entities[entity_type]] if entity_type else list(registry.entities.values())
    found = {facet_name(spec) for entity in entities for aspect in entity.aspects
             for spec in annotations[aspect].searchable if spec.facet}
    found.discard(ENTITY_TYPE_FACET)
    return [ENTITY_TYPE_FACET, *sorted(found)]


def index_body(annotations: Annotations, entity_type: str) -> dict[str, Any]:
    """Settings and mappings of an entity type's index, its facet fields from the annotations."""
    facets = {name: {"type": "keyword"} for name in facet_names(annotations, entity_type)}
    return {
        "settings": {"analysis": ANALYSIS},
        "mappings": {"dynamic": "strict", "properties": {
            "urn": {"type": "keyword"},
            "entityType": {"type": "keyword"},
            "live": {"type": "boolean"},
            "derivedOnly": {"type": "boolean"},
            "removed": {"type": "boolean"},
            "title": _STORED,
            "description": _STORED,
            "sortName": _KEYWORD,
            "titleLength": {"type": "integer"},
            "columns": {"dynamic": "strict", "properties": {column: _TEXT for column in TEXT_COLUMNS}},
            "names": _KEYWORD,
            "filters": _KEYWORD,
            "properties": _KEYWORD,
            "cdap": _KEYWORD,
            "suggestions": _KEYWORD,
            "facets": {"dynamic": "strict", "properties": facets},
            "aspects": {"type": "object", "enabled": False},
        }},
    }


def entry(scope: str, key: str, lvalue: str) -> str:
    """The keyword of a filter or property entry."""
    return orjson.dumps([scope, key, lvalue]).decode()


def entry_prefix(scope: str, key: str, prefix: str) -> str:
    """The keyword prefix of the entries of `key` whose value starts with `prefix`."""
    return entry(scope, key, prefix)[:-2]


def suggestion(lvalue: str, kind: str, value: str) -> str:
    return orjson.dumps([lvalue, kind, value]).decode()


def suggestion_prefix(prefix: str) -> str:
    """The keyword prefix of the suggestions whose lower-cased value starts with `prefix`."""
    return orjson.dumps([prefix]).decode()[:-2]


def parse_suggestion(keyword: str) -> tuple[str, str, str]:
    lvalue, kind, value = orjson.loads(keyword)
    return lvalue, kind, value


def encode_analysis(analysis: Analysis) -> str:
    return orjson.dumps([tuple(analysis.fragment), analysis.filters]).decode()


def decode_analysis(data: str) -> Analysis:
    fragment, filters = orjson.loads(data)
    return Analysis(Fragment(*fragment), filters)


def fragments_of(aspects: Mapping[str, Mapping[str, Any]]) -> list[Analysis]:
    """The analyses of the live aspects of a stored document, in aspect order."""
    return [decode_analysis(aspects[name]["analysis"]) for name in sorted(aspects) if aspects[name].get("analysis")]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def entity_source(urn: str, entity_type: str, aspects: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The indexed document of an entity from its aspects' entries ({"version", "analysis"});
    without a live aspect it only keeps the versions (`live` false, found by no query)."""
    source: dict[str, Any] = {"urn": urn, "entityType": entity_type, "aspects": aspects}
    analyses = fragments_of(aspects)
    if not analyses:
        return {**source, "live": False}
    parts = [analysis.fragment for analysis in analyses]
    doc = merge(entity_type, parts)
    facets: dict[str, list[str]] = defaultdict(list)
    for facet, value in doc.facets:
        facets[facet].append(value)
    return {
        **source,
        "live": True,
        "derivedOnly": all(is_derived(name) for name in aspects if aspects[name].get("analysis")),
        "removed": doc.removed,
        "title": doc.name,
        "description": doc.description,
        "sortName": doc.name.translate(_ASCII_LOWER) if doc.name is not None else None,  # SQLite's NOCASE
        "titleLength": len(doc.name or ""),
        "columns": dict(zip(TEXT_COLUMNS, doc.columns, strict=False)),
        "names": sorted({lvalue for p in parts for lvalue, kind, _ in p.suggestions if kind == "name"}),
        "filters": sorted({entry(scope, key, lvalue) for a in analyses for key, lvalue, scope in a.filters}),
        "properties": sorted({entry(scope, key, lvalue) for p in parts for key, lvalue, scope in p.properties}),
        "cdap": sorted(set(doc.terms.split())),
        "suggestions": sorted({suggestion(*s) for p in parts for s in p.suggestions}),
        "facets": dict(facets),
    }
