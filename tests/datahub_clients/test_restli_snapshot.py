"""Rest.li reads as DataHub's older clients and its own end-to-end checks make them: `GET
/entities/{urn}` in DataHub's snapshot form, and path URNs with whitespace around them."""

from __future__ import annotations

from urllib.parse import quote

import requests

from tests.support.builders import mcp
from tests.support.server import LiveServer

USER = "urn:li:corpuser:marie"
TABLE = "urn:li:dataset:(urn:li:dataPlatform:postgres,lab.samples,PROD)"


def _get(server: LiveServer, urn: str, query: str = "") -> requests.Response:
    return requests.get(f"{server.url}/entities/{quote(urn, safe='')}{query}", timeout=30,
                        headers={"Authorization": f"Bearer {server.token}", "X-RestLi-Protocol-Version": "2.0.0"})


def test_an_entity_reads_as_its_snapshot_with_the_key_and_stored_aspects(server: LiveServer):
    server.client().propose([mcp(USER, "corpUserInfo", {"active": True, "displayName": "Marie Curie"}),
                             mcp(USER, "status", {"removed": False})])
    answer = _get(server, USER)
    assert answer.status_code == 200
    snapshot = answer.json()["value"]["com.linkedin.metadata.snapshot.CorpUserSnapshot"]
    assert snapshot["urn"] == USER
    info = {"active": True, "displayName": "Marie Curie"}
    assert snapshot["aspects"] == [{"com.linkedin.metadata.key.CorpUserKey": {"username": "marie"}},
                                   {"com.linkedin.identity.CorpUserInfo": info},
                                   {"com.linkedin.common.Status": {"removed": False}}]


def test_aspects_can_be_chosen_and_the_key_always_comes(server: LiveServer):
    server.client().propose([mcp(TABLE, "datasetProperties", {"description": "assays"}),
                             mcp(TABLE, "status", {"removed": False})])
    chosen = _get(server, TABLE, "?aspects=List(datasetProperties)").json()["value"]
    aspects = chosen["com.linkedin.metadata.snapshot.DatasetSnapshot"]["aspects"]
    assert [next(iter(a)) for a in aspects] == ["com.linkedin.metadata.key.DatasetKey",
                                                "com.linkedin.dataset.DatasetProperties"]


def test_nothing_stored_is_404_and_a_type_without_a_snapshot_is_400(server: LiveServer):
    assert _get(server, "urn:li:corpuser:nobody").status_code == 404
    run = _get(server, "urn:li:dataProcessInstance:run-1")
    assert run.status_code == 400 and "/entitiesV2" in run.json()["message"]
    assert _get(server, "urn:li:corpuser:(broken").status_code == 400


def test_whitespace_around_a_path_urn_is_dropped(server: LiveServer):
    server.client().propose([mcp(TABLE, "datasetProperties", {"description": "assays"})])
    padded = f"{server.url}/aspects/{quote(TABLE, safe='')}%20%20%20?aspect=datasetProperties&version=0"
    answer = requests.get(padded, headers={"Authorization": f"Bearer {server.token}"}, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["aspect"]["com.linkedin.dataset.DatasetProperties"]["description"] == "assays"
    assert _get(server, USER + "  ").status_code == 404  # trimmed, then simply not there
