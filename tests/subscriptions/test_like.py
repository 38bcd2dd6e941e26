"""SQL LIKE patterns as every filter on URNs matches them (ingest.like): exact, and linear in the
text for any pattern a caller may send."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.like import LikePattern


def _meaning(pattern: str) -> re.Pattern[str]:
    """What LIKE means, written as a regular expression (fine for the short cases generated here)."""
    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.DOTALL)


@settings(max_examples=2000, deadline=None)
@given(st.text("ab:%_", max_size=8), st.text("ab:", max_size=10))
def test_a_pattern_matches_exactly_what_like_means(pattern: str, text: str):
    assert LikePattern(pattern).matches(text) == (_meaning(pattern).fullmatch(text) is not None)


def test_wildcards_and_case():
    assert LikePattern("urn:li:dataset:%hive%").matches("urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)")
    assert not LikePattern("urn:li:dataset:%kafka%").matches("urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)")
    assert LikePattern("urn:li:tag:a_c").matches("urn:li:tag:abc")
    assert not LikePattern("urn:li:tag:a_c").matches("urn:li:tag:abbc")
    assert not LikePattern("URN:%").matches("urn:li:tag:x")
    assert LikePattern("URN:%", ignore_case=True).matches("urn:li:tag:x")


def test_a_pattern_that_backtracks_a_regular_expression_exponentially_answers_at_once():
    """`%` before a character the text lacks: a regex tries every split of the text between the
    `%`s (10^7 for this one on a 3,000-character URN); the matcher looks once per piece."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive," + "x" * 3000 + ",PROD)"
    assert not LikePattern("%%%%%%%%%%%%#").matches(urn)
    assert not LikePattern("%x_x%" * 200 + "#").matches(urn)
    assert LikePattern("%x_x%" * 200).matches(urn)
