"""DataHub's v3 entity scroll (`GET /openapi/v3/entity/{type}?query=`) against `lodestar serve`:
DataHub's own SDK searches platform resources through it (`PlatformResource.search_by_key`,
`search_by_filters`), and `requests` pages through it and sends bad queries."""

from __future__ import annotations

from typing import Any

import requests
from datahub.api.entities.platformresource.platform_resource import (
    ElasticPlatformResourceQuery,
    LogicalOperator,
    PlatformResource,
    PlatformResourceKey,
    PlatformResourceSearchFields,
)

from tests.support import datahub_clients
from tests.support.processes import TOKEN, ServeProcess
from tests.support.waiting import await_

lodestar, graph = datahub_clients.lodestar, datahub_clients.graph
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def scroll(lodestar: ServeProcess, **params: Any) -> requests.Response:
    return requests.get(f"{lodestar.url}/openapi/v3/entity/platformResource", params=params, headers=AUTH,
                        timeout=60)


def saved(graph, platform: str, kind: str, name: str, aliases: list[str] | None = None) -> PlatformResource:
    resource = PlatformResource.create(key=PlatformResourceKey(platform=platform, resource_type=kind, primary_key=name),
                                       secondary_keys=aliases, value={"berth": name})
    resource.to_datahub(graph)
    return resource


def test_the_sdk_finds_platform_resources_by_key_and_by_filters(graph, lodestar):
    lighthouse = saved(graph, "harbour", "beacon", "north:light/1", ["urn:li:corpuser:keeper"])
    buoy = saved(graph, "harbour", "beacon", "south_buoy")
    saved(graph, "river", "beacon", "weir_mark")
    await_(lambda: len(list(PlatformResource.search_by_filters(graph, ElasticPlatformResourceQuery.create_from(
        (PlatformResourceSearchFields.RESOURCE_TYPE, "beacon"))))) == 3, "three beacons indexed")

    assert list(PlatformResource.search_by_key(graph, "north:light/1")) == [lighthouse]
    assert list(PlatformResource.search_by_key(graph, "urn:li:corpuser:keeper")) == []
    assert list(PlatformResource.search_by_key(graph, "urn:li:corpuser:keeper", primary=False)) == [lighthouse]
    not_on_the_river = (ElasticPlatformResourceQuery.create_from().group(LogicalOperator.AND)
                        .add_field_match(PlatformResourceSearchFields.RESOURCE_TYPE, "beacon")
                        .add_field_not_match(PlatformResourceSearchFields.PLATFORM, "river").end())
    found = sorted(PlatformResource.search_by_filters(graph, not_on_the_river), key=lambda r: r.id)
    assert found == sorted([lighthouse, buoy], key=lambda r: r.id)


def test_pages_follow_the_scroll_id_and_bad_input_is_400(graph, lodestar):
    names = [f"pier_{i}" for i in range(5)]
    for name in names:
        saved(graph, "dock", "mooring", name)
    await_(lambda: scroll(lodestar, query='resourceType:"mooring"').json()["totalCount"] == 5, "moorings indexed")

    for query in ('resourceType:"mooring"', 'resourceType:"mooring" AND -primaryKey:"nothing"'):
        seen, scroll_id = [], None
        while True:
            page = scroll(lodestar, query=query, count=2, scrollId=scroll_id or "",
                          aspects="platformResourceInfo").json()
            seen += [e["platformResourceInfo"]["value"]["primaryKey"] for e in page["entities"]]
            assert all(set(e) == {"urn", "platformResourceInfo"} for e in page["entities"])
            scroll_id = page.get("scrollId")
            if not scroll_id:
                break
        assert sorted(seen) == names, query

    for params, named in [({"query": "size:[1 TO 5]"}, "query: "), ({"scrollId": "not-a-cursor"}, "scrollId"),
                          ({"query": "-x:y", "scrollId": "e30"}, "scrollId"), ({"aspects": "nope"}, "aspects"),
                          ({"count": "0"}, "count")]:
        answer = scroll(lodestar, **params)
        assert answer.status_code == 400, params
        assert named in answer.json()["message"], params
