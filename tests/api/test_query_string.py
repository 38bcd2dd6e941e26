"""The Elasticsearch query strings DataHub's OpenAPI scroll takes, as Lodestar search clauses."""

from __future__ import annotations

import pytest

from lodestar.api.query_string import MAX_CLAUSES, Clause, QueryStringError, parse


def test_terms_become_lodestar_filters_free_text_and_prefixes():
    assert parse('owner:"ann\\:b" region:eu* harbour') == [
        Clause(('"harbour"', 'owner:"ann:b"', "region:eu*"))]
    assert parse("") == parse("*") == [Clause(("*",))]
    assert parse("colour.keyword:*") == [Clause(("colour:*",))]


def test_or_groups_and_negations_multiply_out():
    assert parse('(kind:"boat" OR kind:"ship") AND -flag:"red"') == [
        Clause(('kind:"boat"',), ('flag:"red"',)), Clause(('kind:"ship"',), ('flag:"red"',))]
    assert parse('NOT (kind:boat || kind:ship) && !x:y') == [
        Clause(("*",), ('kind:"boat"', 'kind:"ship"', 'x:"y"'))]
    assert parse('NOT (kind:boat AND size:big)') == [
        Clause(("*",), ('kind:"boat"',)), Clause(("*",), ('size:"big"',))]
    assert parse("kind:boat -kind:boat") == []


@pytest.mark.parametrize("query, named", [
    ("size:[1 TO 5]", "'['"), ("name:bote~1", "'~'"), ("name:boat^2", "'^'"), ("name:b*t", "'*'"),
    ("(kind:boat", "not closed"), ('kind:"boat', "not closed"), ("kind:boat)", "unexpected ')'"),
    ("kind:boat AND", "missing"), ("kind\\", "backslash"),
])
def test_unsupported_syntax_is_refused_naming_it(query, named):
    with pytest.raises(QueryStringError, match="query: .*" + named.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("*", r"\*").replace("^", r"\^")):
        parse(query)


def test_too_many_alternatives_are_refused():
    query = " ".join(f"(a:{i} OR b:{i})" for i in range(5))
    with pytest.raises(QueryStringError, match=f"more than {MAX_CLAUSES}"):
        parse(query)
