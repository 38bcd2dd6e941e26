"""The schema registry at /schema-registry/api/ driven by Confluent's own SchemaRegistryClient
(confluent-kafka) against a live server: register, get by id, lookup, subjects, versions,
config; ids kept in the store (a second app on the same store answers the same ids); reads
without a token, writes with WRITE; Confluent's error codes."""

from __future__ import annotations

import json

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from gms.schema_registry import SchemaRegistry, store_reader
from tests.support.access_fixtures import principal_with_grants
from tests.support.server import LiveServer

API = "/schema-registry/api"
MEDIA = "application/vnd.schemaregistry.v1+json"


def record(name: str, *fields: str) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "io.example",
                       "fields": [{"name": f, "type": "string"} for f in fields]})


def client(server: LiveServer, token: str | None = None) -> SchemaRegistryClient:
    conf: dict = {"url": server.url + API + "/"}
    if token is not None:
        conf.update({"bearer.auth.credentials.source": "STATIC_TOKEN", "bearer.auth.token": token,
                     "bearer.auth.logical.cluster": "lodestar"})
    return SchemaRegistryClient(conf)


def test_confluent_client_registers_and_reads_back(server: LiveServer):
    writer = client(server, server.token)
    first = writer.register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    assert isinstance(first, int) and first > 0
    again = client(server, server.token).register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    assert again == first  # the same schema: the same id, no new version
    second = writer.register_schema("orders-value", Schema(record("Order", "id", "customer"), "AVRO"))
    other_subject = writer.register_schema("payments-value", Schema(record("Order", "id"), "AVRO"))
    assert second != first and other_subject == first  # an id per schema, across subjects

    reader = client(server)  # no token: reads are public, as DataHub's registry
    fetched = reader.get_schema(second)
    assert json.loads(fetched.schema_str) == json.loads(record("Order", "id", "customer"))
    assert fetched.schema_type == "AVRO"
    assert sorted(reader.get_subjects()) == ["orders-value", "payments-value"]
    assert reader.get_versions("orders-value") == [1, 2]
    latest = reader.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id) == (2, second)
    v1 = reader.get_version("orders-value", 1)
    assert (v1.version, v1.schema_id, json.loads(v1.schema.schema_str)) == (1, first, json.loads(record("Order", "id")))
    found = reader.lookup_schema("orders-value", Schema(record("Order", "id", "customer"), "AVRO"))
    assert (found.schema_id, found.version) == (second, 2)

    with pytest.raises(SchemaRegistryError) as missing_subject:
        reader.get_versions("nosuch-value")
    assert (missing_subject.value.http_status_code, missing_subject.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as missing_version:
        reader.get_version("orders-value", 7)
    assert missing_version.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as not_in_subject:
        reader.lookup_schema("payments-value", Schema(record("Order", "id", "customer"), "AVRO"))
    assert not_in_subject.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as no_id:
        client(server).get_schema(first + 1 if first + 1 != second else first + 2)
    assert (no_id.value.http_status_code, no_id.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as invalid:
        unknown_type = {"type": "record", "name": "X", "fields": [{"name": "a", "type": "Nope"}]}
        writer.register_schema("orders-value", Schema(json.dumps(unknown_type), "AVRO"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)


def test_compatibility_levels_are_stored_per_subject_and_globally(server: LiveServer):
    writer = client(server, server.token)
    writer.register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    assert client(server).get_compatibility() == "BACKWARD"  # Confluent's default
    assert writer.set_compatibility(level="full") == {"compatibility": "FULL"}
    assert writer.set_compatibility("orders-value", "NONE") == {"compatibility": "NONE"}
    assert client(server).get_compatibility() == "FULL"
    assert client(server).get_compatibility("orders-value") == "NONE"
    assert client(server).get_config("orders-value").compatibility_level == "NONE"
    with pytest.raises(SchemaRegistryError) as bad:
        writer.set_compatibility(level="SOMETIMES")
    assert (bad.value.http_status_code, bad.value.error_code) == (422, 42203)
    unset = requests.get(server.url + API + "/config/payments-value", timeout=10)
    assert (unset.status_code, unset.json()["error_code"]) == (404, 40408)
    defaulted = requests.get(server.url + API + "/config/payments-value?defaultToGlobal=true", timeout=10)
    assert defaulted.json() == {"compatibilityLevel": "FULL"}


def test_reads_are_public_writes_need_write_on_the_instance(server: LiveServer):
    schema = {"schema": record("Order", "id")}
    anonymous = requests.post(server.url + API + "/subjects/orders-value/versions", json=schema, timeout=10)
    assert anonymous.status_code == 401
    reader = principal_with_grants(server, "reader", [("instance", ["READ"])])
    with pytest.raises(SchemaRegistryError) as refused:
        client(server, reader).register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)
    with pytest.raises(SchemaRegistryError):
        client(server, reader).set_compatibility(level="NONE")
    writer = principal_with_grants(server, "writer", [("instance", ["READ", "WRITE"])])
    schema_id = client(server, writer).register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    answer = requests.post(server.url + API + "/subjects/orders-value", data=json.dumps(schema), timeout=10,
                           headers={"Content-Type": MEDIA, "Accept": MEDIA})
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith(MEDIA)
    assert answer.json()["id"] == schema_id and answer.json()["version"] == 1
    assert requests.get(server.url + API + f"/schemas/ids/{schema_id}", timeout=10).status_code == 200
    assert requests.get(server.url + API + "/subjects", timeout=10).json() == ["orders-value"]
    plain = requests.get(server.url + API + "/subjects/orders-value/versions/latest/schema", timeout=10)
    assert json.loads(plain.text) == json.loads(record("Order", "id"))


def test_ids_live_in_the_store_so_every_instance_answers_the_same(server: LiveServer):
    schema_id = client(server, server.token).register_schema("orders-value", Schema(record("Order", "id"), "AVRO"))
    store = server.gms.store
    other = SchemaRegistry(lambda proposals, actor: server.gms.apply(proposals, actor), store_reader(store))
    assert other.schema(schema_id).schema == json.dumps(json.loads(record("Order", "id")), separators=(",", ":"))
    assert other.register("urn:li:corpuser:admin", "orders-value", record("Order", "id")) == schema_id
    assert other.versions("orders-value") == [{"version": 1, "id": schema_id}]


def test_an_id_taken_by_another_schema_is_skipped(server: LiveServer, monkeypatch):
    import gms.schema_registry as registry_module
    monkeypatch.setattr(registry_module, "first_id", lambda fingerprint: 42)  # every schema collides
    gms = server.gms
    registry = SchemaRegistry(lambda proposals, actor: gms.apply(proposals, actor), store_reader(gms.store))
    a = registry.register("urn:li:corpuser:admin", "a-value", record("A", "x"))
    b = registry.register("urn:li:corpuser:admin", "b-value", record("B", "x"))
    assert (a, b) == (42, 43)
    assert registry.register("urn:li:corpuser:admin", "c-value", record("B", "x")) == 43
    assert registry.find(record("A", "x")) == 42 and registry.find(record("C", "x")) is None
    assert json.loads(registry.schema(43).schema)["name"] == "B"


def test_an_id_claimed_by_another_instance_between_read_and_write_is_not_given_twice(server: LiveServer, monkeypatch):
    """Two instances read id 42 as free at once: the second one's CREATE fails, and it takes 43
    (or 42 if the first one registered the same schema)."""
    import gms.schema_registry as registry_module
    monkeypatch.setattr(registry_module, "first_id", lambda fingerprint: 42)
    gms = server.gms
    read = store_reader(gms.store)
    stale = {"left": 1}

    def stale_once(urn: str, aspect: str, versioned: bool = False):
        if urn.endswith(":42") and aspect == "schemaRegistrySchemaInfo" and stale["left"]:
            stale["left"] -= 1
            return None  # what this instance read before the other one's CREATE landed
        return read(urn, aspect, versioned)

    def apply(proposals, actor):
        return gms.apply(proposals, actor)

    first = SchemaRegistry(apply, read).register("urn:li:corpuser:admin", "a-value", record("A", "x"))
    second = SchemaRegistry(apply, stale_once).register("urn:li:corpuser:admin", "b-value", record("B", "x"))
    assert (first, second) == (42, 43) and stale["left"] == 0
    stale["left"] = 1
    same = SchemaRegistry(apply, stale_once).register("urn:li:corpuser:admin", "c-value", record("A", "x"))
    assert same == 42  # its CREATE failed on its own schema: the same id
    assert json.loads(SchemaRegistry(apply, read).schema(43).schema)["name"] == "B"
