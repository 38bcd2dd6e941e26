"""The v3 metadata REST API: CDAP's routes, scopes, validation and SYSTEM metadata."""

from __future__ import annotations

import json

import pytest

from ingest.rest import LodestarError
from lodestar.metadata.client import MetadataClient
from tests.support.builders import mcp
from tests.support.metadata_fixtures import app_mcps, cdap_dataset, dataset_mcps

DS = "default/datasets/customers"
FIELD = "default/datasets/customers/field/empname"


@pytest.fixture
def client(server) -> MetadataClient:
    rest = server.client()
    results = rest.propose(dataset_mcps("default", "customers", "Every customer",
                                        (("empname", '["null","string"]'), ("age", "int")), ttl="3600")
                           + app_mcps("default", "Shop", programs={"Loader": "mapreduce"})
                           + app_mcps("default", "Shop", "1.0") + app_mcps("default", "Shop", "2.0")
                           + dataset_mcps("default", "clicks", sub_type="Stream"))
    assert all(r["status"] == "applied" for r in results), results
    return MetadataClient(server.url, rest=rest)


def _status(client: MetadataClient, method: str, path: str, body=None) -> tuple[int, dict]:
    return client.rest.request(method, path, body)


def test_tags_and_properties_round_trip_in_cdaps_record_shape(client):
    client.add_tags(DS, "pii", "finance")
    client.set_properties(DS, {"owner": "sales team", "tier": "gold"})
    records = client.metadata(DS)
    user = next(r for r in records if r["scope"] == "USER")
    assert user == {"metadataEntity": {"details": {"namespace": "default", "dataset": "customers"}, "type": "dataset"},
                    "scope": "USER", "properties": {"owner": "sales team", "tier": "gold"}, "tags": ["pii", "finance"]}
    assert [r["scope"] for r in records] == ["USER", "SYSTEM"]
    assert client.tags(DS, scope="user") == ["pii", "finance"]
    assert client.rest.call("GET", client.path(DS, "properties", "tier")) == {"tier": "gold"}
    # the same entity by URN
    assert client.tags(cdap_dataset("default", "customers"), scope="USER") == ["pii", "finance"]


def test_removing_a_tag_leaves_the_others(client):
    client.add_tags(DS, "a", "b", "c")
    client.remove_tags(DS, "b")
    assert client.tags(DS, scope="USER") == ["a", "c"]
    client.remove_properties(DS)  # nothing there: nothing happens
    client.set_properties(DS, k1="v1", k2="v2")
    client.remove_properties(DS, "k1")
    assert client.properties(DS, scope="USER") == {"k2": "v2"}


def test_delete_all_twice_is_fine_and_writes_once(client, server):
    client.add_tags(DS, "x")
    client.set_properties(DS, k="v")
    for _ in range(2):
        records = client.remove_all(DS)
        assert next(r for r in records if r["scope"] == "USER")["tags"] == []
    urn = cdap_dataset("default", "customers")
    versions = server.gms.store.history(urn, "userScopeMetadata")
    assert len(versions) == 3  # tags, properties, the removal: the second removal wrote nothing


@pytest.mark.parametrize("scope", ["USER", "user", "User", "uSeR"])
def test_scope_is_case_insensitive(client, scope):
    client.add_tags(DS, "t1", scope=scope)
    assert client.tags(DS, scope=scope.swapcase()) == ["t1"]
    assert client.tags(DS, scope="system") == []


def test_user_and_system_scopes_are_kept_apart(client):
    client.add_tags(DS, "u", scope="USER")
    client.add_tags(DS, "s", scope="SYSTEM")
    by_scope = {r["scope"]: r for r in client.metadata(DS)}
    assert by_scope["USER"]["tags"] == ["u"] and by_scope["SYSTEM"]["tags"] == ["s"]
    assert client.tags_by_scope(DS) == {"USER": ["u"], "SYSTEM": ["s"]}
    client.set_properties(DS, owner="me")
    by_scope = client.properties_by_scope(DS)
    assert by_scope["USER"] == {"owner": "me"} and by_scope["SYSTEM"]["entity-name"] == "customers"
    assert "owner" not in by_scope["SYSTEM"]
    client.remove_tags(DS, scope="USER")
    assert client.tags(DS) == ["s"]


@pytest.mark.parametrize(("method", "what", "body", "says"), [
    ("POST", "properties", {"k" * 100: "v"}, "100 characters long"),
    ("POST", "properties", {"k": "v" * 100}, "100 characters long"),
    ("POST", "properties", {"k$": "v"}, "property key 'k$' holds '$'"),
    ("POST", "properties", {"k": "v$"}, "property 'k': value 'v$' holds '$'"),
    ("POST", "properties", {"tags": "v"}, "'tags' is reserved"),
    ("POST", "properties", {"k": 1}, "not a string"),
    ("POST", "properties", ["k"], "JSON object"),
    ("POST", "tags", ["good", "ba$d"], "tag 'ba$d' holds '$'"),
    ("POST", "tags", ["t" * 100], "100 characters long"),
    ("POST", "tags", {"t": 1}, "JSON array"),
    ("POST", "tags", [""], "tag is empty"),
])
def test_cdap_validation_is_400_naming_the_culprit_and_nothing_is_applied(client, method, what, body, says):
    status, answer = _status(client, method, client.path(DS, what), body)
    assert status == 400, answer
    assert says in answer["message"]
    assert client.tags(DS) == [] and client.properties(DS, scope="USER") == {}


def test_values_may_hold_common_special_characters(client):
    client.set_properties(DS, {"emails": "a@x.com, b@y.org", "path": "/data/in (2020)"})
    assert client.properties(DS, scope="USER") == {"emails": "a@x.com, b@y.org", "path": "/data/in (2020)"}


def test_bad_scope_path_and_missing_entities(client):
    assert _status(client, "GET", client.path(DS, scope="PRIVATE"))[0] == 400
    status, answer = _status(client, "GET", client.path("default/datasets/nosuch", "tags"))
    assert status == 404 and "not found" in answer["message"]
    status, answer = _status(client, "POST", client.path("default/datasets/nosuch/field/f", "tags"), ["x"])
    assert status == 404 and "belongs to" in answer["message"]
    assert _status(client, "GET", "/v3/namespaces/default/datasets/customers/field/metadata")[0] == 404
    assert _status(client, "POST", client.path(DS), {})[0] == 400
    status, answer = _status(client, "POST", client.path(DS, "tags"), None)
    assert status == 400


def test_custom_field_entities_and_the_type_parameter(client):
    client.add_tags(FIELD, "PII")
    assert client.tags(FIELD) == ["PII"]
    assert client.tags(DS) == []  # the dataset's own metadata is apart
    field_urn = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:cdap,default.customers,PROD),empname)"
    assert client.tags(field_urn) == ["PII"]
    record = client.metadata(FIELD, scope="USER")[0]
    assert record["metadataEntity"] == {"details": {"namespace": "default", "dataset": "customers",
                                                    "field": "empname"}, "type": "field"}
    typed = client.path(FIELD, "tags") + "?type=column"
    client.rest.call("POST", typed, ["other"])
    assert client.rest.call("GET", typed) == ["other"]
    assert client.tags(FIELD) == ["PII"]
    client.add_tags("default/datasets/customers/file/part01", "raw")
    assert client.metadata("default/datasets/customers/file/part01")[0]["metadataEntity"]["type"] == "file"


def test_streams(client):
    stream = "default/streams/clicks"
    client.add_tags(stream, "raw")
    client.set_properties(stream, source="web")
    record = client.metadata(stream, scope="USER")[0]
    assert record == {"metadataEntity": {"details": {"namespace": "default", "stream": "clicks"}, "type": "stream"},
                      "scope": "USER", "properties": {"source": "web"}, "tags": ["raw"]}
    assert client.tags(cdap_dataset("default", "clicks"), scope="USER") == ["raw"]
    client.remove_tags(stream, "raw")
    assert client.tags(stream, scope="USER") == [] and client.properties(stream, scope="USER") == {"source": "web"}


def test_a_runs_system_name_is_its_name(client):
    run = "urn:li:dataProcessInstance:283-0rwedfk"
    client.rest.propose([mcp(run, "dataProcessInstanceProperties", {"name": "nightly load", "created": {
        "time": 1441310434000, "actor": "urn:li:corpuser:cdap"}})])
    assert client.properties(run, scope="SYSTEM")["entity-name"] == "nightly load"


def test_external_tables_of_the_instance_by_urn(client):
    urn = "urn:li:customEntity:(instance,table,database=db/table=t)"
    client.add_tags(urn, "external")
    record = client.metadata(urn, scope="USER")[0]
    assert record["metadataEntity"] == {"details": {"database": "db", "table": "t"}, "type": "table"}
    assert record["tags"] == ["external"]


def test_versioned_applications(client):
    base, v1, v2 = "default/apps/Shop", "default/apps/Shop/versions/1.0", "default/apps/Shop/versions/2.0"
    client.add_tags(v1, "dev")
    assert client.tags(v1) == ["dev"] and client.tags(v2) == [] and client.tags(base) == []
    client.add_tags(base, "prod")  # the versions were written just before: the request finds them all
    assert client.tags(base) == ["prod"] and client.tags(v1) == ["dev", "prod"] and client.tags(v2) == ["prod"]
    client.set_properties(base, owner="web")
    assert client.properties(v2, scope="USER") == {"owner": "web"}
    client.remove_tags(base, "prod")
    assert client.tags(v1) == ["dev"] and client.tags(v2) == [] and client.tags(base) == []
    program = "default/apps/Shop/mapreduce/Loader"
    client.add_tags(program, "etl")
    record = client.metadata(program, scope="USER")[0]
    assert record["metadataEntity"]["details"] == {"namespace": "default", "application": "Shop",
                                                   "type": "mapreduce", "program": "Loader"}


def test_an_application_known_only_by_its_versions(client):
    client.rest.propose(app_mcps("default", "Cart", "1.0") + app_mcps("default", "Cart", "1.1")
                        + app_mcps("other", "Cart", "9.0"))
    base = "default/apps/Cart"
    assert client.tags(base) == []  # no application entity without a version, but versions: it exists
    client.add_tags(base, "retail")
    assert client.tags("default/apps/Cart/versions/1.0") == ["retail"]
    assert client.tags("default/apps/Cart/versions/1.1") == ["retail"]
    assert client.tags("other/apps/Cart/versions/9.0") == []  # another namespace's application
    assert client.tags(base) == ["retail"]
    status, answer = _status(client, "POST", client.path("default/apps/Nothing", "tags"), ["x"])
    assert status == 404 and "Nothing" in answer["message"]


def test_a_deleted_version_gets_nothing(client, server):
    server.gms.delete_entity("urn:li:dataFlow:(cdap,Shop@2.0,default)", False, "urn:li:corpuser:admin")
    client.add_tags("default/apps/Shop", "prod")
    assert client.tags("default/apps/Shop/versions/1.0") == ["prod"]
    assert server.gms.store.history("urn:li:dataFlow:(cdap,Shop@2.0,default)", "userScopeMetadata") == []


def test_namespace_metadata(client, server):
    ns = "default"
    assert client.metadata(ns) == [
        {"metadataEntity": {"details": {"namespace": "default"}, "type": "namespace"}, "scope": "USER",
         "properties": {}, "tags": []},
        {"metadataEntity": {"details": {"namespace": "default"}, "type": "namespace"}, "scope": "SYSTEM",
         "properties": {}, "tags": []}]
    client.add_tags(ns, "shared")
    client.set_properties(ns, team="platform")
    assert client.tags(ns) == ["shared"] and client.properties(ns, scope="USER") == {"team": "platform"}
    assert client.rest.call("GET", client.path(ns, "tags", "shared")) == ["shared"]
    assert server.gms.store.entity("urn:li:container:default")  # the first write created the namespace entity
    client.remove_tags(ns, "shared")
    assert client.tags(ns) == []
    client.remove_all(ns)
    assert client.properties(ns, scope="USER") == {}
    assert client.tags("urn:li:container:default") == []
    status, answer = _status(client, "POST", "/v3/namespaces/bad-name/metadata/tags", ["x"])
    assert status == 400 and "namespace 'bad-name'" in answer["message"]


def test_external_tables_of_a_namespace(client):
    table = "default/database/db/table/t"
    client.add_tags(table, "external")
    client.set_properties(table, location="s3://bucket/t (v2)")
    record = client.metadata(table, scope="USER")[0]
    assert record == {"metadataEntity": {"details": {"namespace": "default", "database": "db", "table": "t"},
                                         "type": "table"}, "scope": "USER",
                      "properties": {"location": "s3://bucket/t (v2)"}, "tags": ["external"]}
    urn = "urn:li:customEntity:(urn:li:container:default,table,database=db/table=t)"
    assert client.tags(urn) == ["external"]
    client.remove_tags(table, "external")
    assert client.tags(table) == [] and client.properties(table, scope="USER") == {"location": "s3://bucket/t (v2)"}
    client.remove_all(table)
    assert client.metadata(table, scope="USER")[0]["properties"] == {}
    status, answer = _status(client, "GET", client.path("bad-ns/database/db/table/t"))
    assert status == 400 and "namespace 'bad-ns'" in answer["message"]


def test_system_metadata_is_kept_by_the_platform(client, server):
    system = client.properties(DS, scope="SYSTEM")
    assert system["entity-name"] == "customers"
    assert system["description"] == "Every customer"
    assert system["type"] == "dataset" and system["ttl"] == "3600"
    assert json.loads(system["schema"]) == [{"name": "empname", "type": "STRING"}, {"name": "age", "type": "INT"}]
    assert system["last-updated-by"] == "urn:li:corpuser:admin"
    created = system["creation-time"]
    urn = cdap_dataset("default", "customers")
    # a later change moves last-updated-time, never creation-time
    server.client().propose([mcp(urn, "datasetProperties", {"name": "customers", "description": "Changed"}),
                             mcp(urn, "systemScopeMetadata", {"properties": {"creation-time": "1"}, "tags": []})])
    after = client.properties(DS, scope="SYSTEM")
    assert after["creation-time"] == created and after["description"] == "Changed"
    assert int(after["last-updated-time"]) >= int(system["last-updated-time"])
    status, answer = _status(client, "POST", client.path(DS, "properties", scope="SYSTEM"), {"creation-time": "5"})
    assert status == 400 and "kept by the platform" in answer["message"]
    with pytest.raises(LodestarError, match="HTTP 404"):
        client.properties("default/datasets/gone")


def test_the_openapi_document_lists_every_method_of_the_metadata_routes(client):
    paths = client.rest.call("GET", "/openapi.json")["paths"]
    assert set(paths["/v3/namespaces/{ns}/{entity}/metadata/tags/{tag}"]) == {"get", "delete"}
    assert set(paths["/v3/namespaces/{ns}/{entity}/metadata/properties/{key}"]) == {"get", "delete"}
    client.add_tags(DS, "t")
    assert client.rest.call("GET", client.path(DS, "tags", "t")) == ["t"]
    assert _status(client, "GET", client.path(DS, "tags", "nosuch"))[0] == 404
