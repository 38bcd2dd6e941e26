"""GraphQL variables coerced as DataHub's server coerces them: an Int, Float or Boolean may
come as a string of one; any other string is still refused."""

from __future__ import annotations

import requests

from tests.support.server import LiveServer

SEARCH = """query s($start: Int, $count: Int, $skip: Boolean) {
  searchAcrossEntities(input: {query: "*", start: $start, count: $count, searchFlags: {skipAggregates: $skip}}) {
    start count facets { field } } }"""


def _ask(server: LiveServer, **variables) -> dict:
    answer = requests.post(f"{server.url}/api/graphql", json={"query": SEARCH, "variables": variables}, timeout=30,
                           headers={"Authorization": f"Bearer {server.token}"})
    assert answer.status_code == 200
    return answer.json()


def test_numbers_and_booleans_sent_as_strings_are_read_as_such(server: LiveServer):
    found = _ask(server, start="0", count="5", skip="true")
    assert "errors" not in found, found
    assert found["data"]["searchAcrossEntities"]["start"] == 0
    assert found["data"]["searchAcrossEntities"]["facets"] == []  # skipAggregates: true took effect


def test_other_strings_are_still_refused(server: LiveServer):
    for variables in ({"count": "five"}, {"count": "1.5"}, {"skip": "yes"}, {"start": "99999999999"}):
        found = _ask(server, **variables)
        assert found["data"] is None and found["errors"], variables
