"""DataHub's OpenAPI entity routes (v3, v2 and the platform route) against `lodestar serve`: DataHub's
own SDK in OpenAPI mode (`DataHubGraph` with `openapi_ingestion`, its patch builders, `get_entities`;
`DatahubRestEmitter` and `DataHubClient` with `DATAHUB_REST_EMITTER_DEFAULT_ENDPOINT=OPENAPI`) and
`requests` for the routes the SDK has no client for; each result read back through Lodestar's API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from datahub.configuration.common import OperationalError
from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.graph.client import DataHubGraph
from datahub.ingestion.graph.config import DatahubClientConfig
from datahub.metadata.schema_classes import (
    ChangeTypeClass,
    DatasetKeyClass,
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    OwnerClass,
    OwnershipTypeClass,
    StatusClass,
    TagAssociationClass,
    UpstreamClass,
)
from datahub.specific.dataset import DatasetPatchBuilder

from tests.support import datahub_clients
from tests.support.access_fixtures import principal_with_grants
from tests.support.datahub_clients import entity, path_of
from tests.support.processes import TOKEN, ServeProcess
from tests.support.waiting import await_

lodestar = datahub_clients.lodestar
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def openapi_graph(lodestar: ServeProcess) -> Iterator[DataHubGraph]:
    graph = DataHubGraph(DatahubClientConfig(server=lodestar.url, token=TOKEN, openapi_ingestion=True))
    yield graph
    graph.close()


def dataset(name: str) -> str:
    return make_dataset_urn("hive", f"openapi.{name}")


def call(lodestar: ServeProcess, method: str, path: str, body: Any = None, **params: str) -> requests.Response:
    return requests.request(method, f"{lodestar.url}{path}", json=body, params=params, headers=AUTH, timeout=60)


def aspects(lodestar: ServeProcess, urn: str) -> dict[str, Any]:
    found = entity(lodestar.client(), urn)
    assert found is not None, f"{urn} not found"
    return {name: aspect["value"] for name, aspect in found.items()}


def test_the_sdk_in_openapi_mode_writes_and_patches(openapi_graph, lodestar):
    urn, upstream = dataset("patched"), dataset("upstream")
    openapi_graph.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(
        description="before", customProperties={"kept": "yes"})))
    owner = OwnerClass("urn:li:corpuser:ann", OwnershipTypeClass.TECHNICAL_OWNER)
    patch = (DatasetPatchBuilder(urn).add_tag(TagAssociationClass("urn:li:tag:pii"))
             .add_tag(TagAssociationClass("urn:li:tag:gold"))
             .add_term(GlossaryTermAssociationClass("urn:li:glossaryTerm:Revenue")).add_owner(owner)
             .add_custom_property("added", "1").set_description("after")
             .add_upstream_lineage(UpstreamClass(upstream, DatasetLineageTypeClass.TRANSFORMED)))
    for mcp in patch.build():
        openapi_graph.emit_mcp(mcp)
    found = aspects(lodestar, urn)
    assert [t["tag"] for t in found["globalTags"]["tags"]] == ["urn:li:tag:pii", "urn:li:tag:gold"]
    assert [t["urn"] for t in found["glossaryTerms"]["terms"]] == ["urn:li:glossaryTerm:Revenue"]
    assert [o["owner"] for o in found["ownership"]["owners"]] == ["urn:li:corpuser:ann"]
    assert found["datasetProperties"]["description"] == "after"
    assert found["datasetProperties"]["customProperties"] == {"kept": "yes", "added": "1"}
    assert [u["dataset"] for u in found["upstreamLineage"]["upstreams"]] == [upstream]

    for mcp in DatasetPatchBuilder(urn).remove_tag("urn:li:tag:pii").remove_custom_property("kept").build():
        openapi_graph.emit_mcp(mcp)
    found = aspects(lodestar, urn)
    assert [t["tag"] for t in found["globalTags"]["tags"]] == ["urn:li:tag:gold"]
    assert found["datasetProperties"]["customProperties"] == {"added": "1"}
    # the SDK's own reads see the same
    assert openapi_graph.get_aspect(urn, GlobalTagsClass).tags == [TagAssociationClass("urn:li:tag:gold")]


def test_get_entities_reads_the_named_aspects_of_the_entities_that_exist(openapi_graph, lodestar):
    tagged, plain, absent = dataset("batch_tagged"), dataset("batch_plain"), dataset("batch_absent")
    openapi_graph.emit_mcps([
        MetadataChangeProposalWrapper(entityUrn=tagged, aspect=GlobalTagsClass([TagAssociationClass("urn:li:tag:x")])),
        MetadataChangeProposalWrapper(entityUrn=tagged, aspect=StatusClass(removed=False)),
        MetadataChangeProposalWrapper(entityUrn=plain, aspect=StatusClass(removed=False))])
    found = openapi_graph.get_entities("dataset", [tagged, plain, absent], ["globalTags"], with_system_metadata=True)
    assert set(found) == {tagged}  # an entity without the aspect has none to give, one that does not exist neither
    tags, system_metadata = found[tagged]["globalTags"]
    assert tags == GlobalTagsClass([TagAssociationClass("urn:li:tag:x")])
    assert system_metadata is not None and system_metadata.lastObserved > 0
    everything = openapi_graph.get_entities("dataset", [plain])
    assert set(everything[plain]) == {"datasetKey", "status"}
    assert everything[plain]["datasetKey"][0] == DatasetKeyClass("urn:li:dataPlatform:hive", "openapi.batch_plain",
                                                                 "PROD")


def test_a_delete_proposal_deletes_the_entity(openapi_graph, lodestar):
    urn = dataset("deleted")
    openapi_graph.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=False)))
    assert entity(lodestar.client(), urn) is not None
    openapi_graph.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, changeType=ChangeTypeClass.DELETE,
                                                         aspectName="datasetKey"))
    assert entity(lodestar.client(), urn) is None
    assert call(lodestar, "GET", f"/openapi/v3/entity/dataset/{path_of(urn)}").status_code == 404
    # deleting what is gone is done already
    assert call(lodestar, "DELETE", f"/openapi/v3/entity/dataset/{path_of(urn)}").status_code == 200


def test_aspect_routes_versions_patches_and_deletes(lodestar):
    urn = dataset("aspects")
    route = f"/openapi/v3/entity/dataset/{path_of(urn)}/globaltags"  # the aspect's name in any case
    for tags in (["urn:li:tag:a"], ["urn:li:tag:a", "urn:li:tag:b"]):
        done = call(lodestar, "POST", route, {"value": {"tags": [{"tag": t} for t in tags]}}, **{"async": "false"})
        assert done.status_code == 200, done.text
        assert done.json() == {"urn": urn, "globalTags": {"value": {"tags": [{"tag": t} for t in tags]}}}
    first = call(lodestar, "GET", route, version="1").json()
    assert first == {"value": {"tags": [{"tag": "urn:li:tag:a"}]}}
    assert call(lodestar, "GET", route, version="2").json() == call(lodestar, "GET", route).json()
    assert call(lodestar, "GET", route, version="3").status_code == 404

    patched = call(lodestar, "PATCH", route, {"patch": [{"op": "remove", "path": "/tags/urn:li:tag:a"}],
                                              "arrayPrimaryKeys": {"tags": ["tag"]}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["globalTags"]["value"]["tags"] == [{"tag": "urn:li:tag:b"}]
    assert aspects(lodestar, urn)["globalTags"]["tags"] == [{"tag": "urn:li:tag:b"}]

    assert call(lodestar, "DELETE", route).status_code == 200
    assert call(lodestar, "GET", route).status_code == 404
    assert "globalTags" not in aspects(lodestar, urn)


def test_entity_reads_answer_dataHub_shape(lodestar):
    urn = make_dataset_urn("hive", "openapi.with/slash")
    written = call(lodestar, "POST", "/openapi/v3/entity/dataset", [{
        "urn": urn, "datasetProperties": {"value": {"name": "with/slash"}}, "status": {"value": {"removed": False}}}])
    assert written.status_code == 200, written.text
    assert written.json() == [{"urn": urn, "datasetProperties": {"value": {"name": "with/slash"}},
                               "status": {"value": {"removed": False}}}]
    route = f"/openapi/v3/entity/dataset/{path_of(urn)}"
    whole = call(lodestar, "GET", route).json()
    assert set(whole) == {"urn", "datasetKey", "datasetProperties", "status"}
    assert whole["datasetKey"]["value"]["name"] == "openapi.with/slash"
    some = call(lodestar, "GET", f"{route}?aspects=status&systemMetadata=true").json()
    assert set(some) == {"urn", "status"} and some["status"]["systemMetadata"]["lastObserved"] > 0


def test_bad_input_is_refused_with_a_message_and_nothing_is_written(lodestar):
    good = dataset("refused_good")
    cases = [
        ("POST", "/openapi/v3/entity/dataset", [{"urn": good, "status": {"value": {"removed": False}}},
                                                {"urn": dataset("refused_bad"), "status": {"value": {"removed": 1}}}],
         400, "removed"),
        ("POST", "/openapi/v3/entity/dataset", [{"urn": good, "INVALID": {"value": {}}}], 400, "INVALID"),
        ("POST", "/openapi/v3/entity/dataset", [{"urn": "urn:li:FOOBAR:x", "status": {"value": {}}}], 400, "FOOBAR"),
        ("POST", "/openapi/v3/entity/dataset", [{"urn": "urn:li:corpuser:x", "status": {"value": {}}}], 400,
         "corpuser"),
        ("POST", "/openapi/v3/entity/dataset", {"urn": good}, 400, "list"),
        ("POST", "/openapi/v3/entity/notAType", [{"urn": good, "status": {"value": {}}}], 400, "notAType"),
        ("PATCH", "/openapi/v3/entity/dataset", [{"urn": good, "globalTags": {"value": {"patch": "no"}}}], 400,
         "patch"),
        ("POST", "/openapi/v3/entity/dataset/batchGet", {"urn": good}, 400, "list"),
    ]
    for method, path, body, status, named in cases:
        answer = call(lodestar, method, path, body)
        assert answer.status_code == status, (path, body, answer.text)
        assert named in answer.json()["message"], answer.text
    assert entity(lodestar.client(), good) is None
    not_json = requests.post(f"{lodestar.url}/openapi/v3/entity/dataset", data="{", headers=AUTH, timeout=60)
    assert not_json.status_code == 400 and "JSON" in not_json.json()["message"]


def test_a_failed_precondition_is_412_and_create_if_not_exists_refuses_an_existing_aspect(lodestar):
    urn = dataset("conditional")
    body = [{"urn": urn, "status": {"value": {"removed": False}}}]
    assert call(lodestar, "POST", "/openapi/v3/entity/dataset", body, createIfNotExists="true").status_code == 200
    again = call(lodestar, "POST", "/openapi/v3/entity/dataset", body, createIfNotExists="true")
    assert again.status_code == 412, again.text
    stale = [{"urn": urn, "status": {"value": {"removed": True}, "headers": {"If-Version-Match": "7"}}}]
    refused = call(lodestar, "POST", "/openapi/v3/entity/dataset", stale)
    assert refused.status_code == 412, refused.text
    assert aspects(lodestar, urn)["status"] == {"removed": False}


def test_async_writes_are_queued_then_applied(lodestar):
    urn = dataset("queued")
    body = [{"urn": urn, "status": {"value": {"removed": False}}}]
    queued = call(lodestar, "POST", "/openapi/v3/entity/dataset", body, **{"async": "true"})
    assert queued.status_code == 202, queued.text
    assert queued.json() == body
    await_(lambda: entity(lodestar.client(), urn), "the queued write applied")
    invalid = call(lodestar, "POST", "/openapi/v3/entity/dataset",
                   [{"urn": dataset("queued_bad"), "status": {"value": {"removed": "no"}}}], **{"async": "true"})
    assert invalid.status_code == 400, invalid.text


def test_v2_routes_and_platform_proposals(lodestar):
    urn = dataset("v2")
    route = f"/openapi/v2/entity/dataset/{path_of(urn)}"
    posted = call(lodestar, "POST", f"{route}/datasetProperties", {"description": "v2", "customProperties": {}},
                  createIfNotExists="false")
    assert posted.status_code == 200, posted.text
    assert posted.json()["aspects"]["datasetProperties"]["value"]["description"] == "v2"
    patched = call(lodestar, "PATCH", f"{route}/datasetProperties",
                   {"patch": [{"op": "add", "path": "/customProperties/k", "value": "v"}]})
    assert patched.json() == {"urn": urn, "aspects": {"datasetProperties": {"value": {
        "description": "v2", "customProperties": {"k": "v"}}}}}
    listed = call(lodestar, "POST", "/openapi/v2/entity/dataset",
                  [{"urn": urn, "aspects": {"status": {"value": {"removed": False}}}}])
    assert listed.json() == [{"urn": urn}]
    assert set(aspects(lodestar, urn)) >= {"datasetProperties", "status"}
    assert call(lodestar, "DELETE", route).status_code == 200
    assert entity(lodestar.client(), urn) is None

    product = "urn:li:dataProduct:openapi-v2"
    proposals = [{"entityType": "dataProduct", "entityUrn": product, "changeType": "UPSERT", "aspectName": "status",
                  "aspect": {"value": {"__type": "Status", "removed": False}, "contentType": "application/json"}}]
    done = call(lodestar, "POST", "/openapi/v2/platform/entities/v1/", proposals, **{"async": "false"})
    assert done.status_code == 200, done.text
    assert done.json() == [product]
    assert aspects(lodestar, product)["status"] == {"removed": False}


def test_every_write_is_authorized_and_reads_need_read(lodestar):
    reader = principal_with_grants(lodestar, "openapi-reader", [("instance", ["READ"])])
    outsider = principal_with_grants(lodestar, "openapi-outsider")
    urn = dataset("authorized")
    assert call(lodestar, "POST", "/openapi/v3/entity/dataset", [{"urn": urn, "status": {"value": {"removed": False}}}]
                ).status_code == 200
    as_reader = {"Authorization": f"Bearer {reader}"}
    as_outsider = {"Authorization": f"Bearer {outsider}"}
    route = f"{lodestar.url}/openapi/v3/entity/dataset/{path_of(urn)}"
    removed = [{"urn": urn, "status": {"value": {"removed": True}}}]
    for method, url, body in [
            ("POST", f"{lodestar.url}/openapi/v3/entity/dataset", removed),
            ("PATCH", f"{route}/status", {"patch": [{"op": "add", "path": "/removed", "value": True}]}),
            ("DELETE", route, None), ("DELETE", f"{route}/status", None)]:
        assert requests.request(method, url, json=body, headers=as_reader, timeout=60).status_code == 403, url
    assert requests.get(route, headers=as_reader, timeout=60).status_code == 200
    assert requests.get(route, headers=as_outsider, timeout=60).status_code == 403
    batch = requests.post(f"{lodestar.url}/openapi/v3/entity/dataset/batchGet", json=[{"urn": urn}],
                          headers=as_outsider, timeout=60)
    assert batch.status_code == 403
    assert aspects(lodestar, urn)["status"] == {"removed": False}


SDK_IN_OPENAPI_MODE = """
import json, sys
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.ingestion.graph.config import ClientMode, DatahubClientConfig
from datahub.metadata.schema_classes import DatasetPropertiesClass
from datahub.sdk.dataset import Dataset
from datahub.sdk.main_client import DataHubClient
url, token, emitted, name = sys.argv[1:]
emitter = DatahubRestEmitter(gms_server=url, token=token)
emitter.test_connection()
emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=emitted, aspect=DatasetPropertiesClass(description="env")))
client = DataHubClient(config=DatahubClientConfig(server=url, token=token, client_mode=ClientMode.SDK))
client.test_connection()
client.entities.upsert(Dataset(platform="hive", name=name, description="sdk", tags=["urn:li:tag:sdk"]))
print(json.dumps({"emitter": emitter._openapi_ingestion, "sdk": client._graph._openapi_ingestion}))
"""


def test_the_emitter_and_the_sdk_client_with_the_openapi_endpoint_by_environment(lodestar):
    emitted, name = dataset("env_emitter"), "openapi.env_sdk"
    env = {"DATAHUB_REST_EMITTER_DEFAULT_ENDPOINT": "OPENAPI", "DATAHUB_TELEMETRY_ENABLED": "false",
           "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run([sys.executable, "-c", SDK_IN_OPENAPI_MODE, lodestar.url, TOKEN, emitted, name],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"emitter": True, "sdk": True}
    assert aspects(lodestar, emitted)["datasetProperties"]["description"] == "env"
    found = aspects(lodestar, dataset("env_sdk"))
    assert found["editableDatasetProperties"]["description"] == "sdk", found  # as the SDK writes it
    assert found["globalTags"]["tags"] == [{"tag": "urn:li:tag:sdk"}]
    assert '"path":"/openapi/v3/entity/dataset?async=false"' in lodestar.output()  # not Rest.li


def test_the_sdk_raises_lodestar_message_on_a_refused_write(openapi_graph):
    bad = MetadataChangeProposalWrapper(entityUrn="urn:li:corpuser:openapi", entityType="corpuser",
                                        aspect=DatasetPropertiesClass(description="wrong entity"))
    with pytest.raises(OperationalError, match="not an aspect of corpuser"):
        openapi_graph.emit_mcp(bad)


def test_timeseries_aspects_read_and_delete_their_newest_point(lodestar):
    urn = dataset("profiled")
    route = f"/openapi/v3/entity/dataset/{path_of(urn)}/datasetProfile"
    for stamp, rows in ((100, 1), (200, 2)):
        written = call(lodestar, "POST", route, {"value": {"timestampMillis": stamp, "rowCount": rows}})
        assert written.status_code == 200, written.text
        assert written.json()["datasetProfile"]["value"]["rowCount"] == rows
    assert call(lodestar, "GET", route).json()["value"]["rowCount"] == 2
    assert call(lodestar, "GET", route, version="150").json()["value"]["rowCount"] == 1  # at or before 150
    assert call(lodestar, "GET", route, version="50").status_code == 404
    assert call(lodestar, "DELETE", route).status_code == 200
    assert [p["rowCount"] for p in datahub_clients.points(lodestar.client(), urn, "datasetProfile")] == [1]
    assert call(lodestar, "DELETE", route).status_code == 200
    assert call(lodestar, "GET", route).status_code == 404
    assert call(lodestar, "DELETE", route).status_code == 404
