"""The external schema registry client (gms/external_registry.py) against a real Confluent-
compatible registry: another Lodestar's /schema-registry/api (no Confluent or Apicurio registry
can be run here: see docs/datahub-clients.md)."""

from __future__ import annotations

import json

import pytest

from gms.external_registry import ExternalSchemaRegistry
from ingest.backends.errors import BackendFailure, BackendUnavailable
from tests.support.server import free_port

SCHEMA = json.dumps({"type": "record", "name": "Ping", "namespace": "io.example",
                     "fields": [{"name": "at", "type": "long"}]})


@pytest.fixture
def external(server) -> ExternalSchemaRegistry:
    return ExternalSchemaRegistry(f"{server.url}/schema-registry/api/", token=server.token)


def test_registers_and_reads_back_through_the_other_registry(external, server):
    schema_id = external.register("urn:li:corpuser:anyone", "pings-value", SCHEMA)
    assert external.register("urn:li:corpuser:anyone", "pings-value", SCHEMA) == schema_id
    assert json.loads(external.schema(schema_id).schema) == json.loads(SCHEMA)
    status, versions = server.client().request("GET", "/schema-registry/api/subjects/pings-value/versions")
    assert (status, versions) == (200, [1])
    assert ExternalSchemaRegistry(f"{server.url}/schema-registry/api").schema(schema_id).schema  # reads need no token


def test_an_unknown_id_is_none(external):
    assert external.schema(12345) is None


def test_a_refusal_names_the_registry_and_its_reason(server):
    anonymous = ExternalSchemaRegistry(f"{server.url}/schema-registry/api")
    with pytest.raises(BackendFailure, match=r"schema-registry/api/subjects/pings-value/versions: HTTP 401"):
        anonymous.register("urn:li:corpuser:anyone", "pings-value", SCHEMA)
    with pytest.raises(BackendFailure, match="HTTP 422: Invalid schema"):
        ExternalSchemaRegistry(f"{server.url}/schema-registry/api", token=server.token).register(
            "urn:li:corpuser:anyone", "pings-value", "{not avro")


def test_a_registry_that_does_not_answer_is_unavailable():
    down = ExternalSchemaRegistry(f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(BackendUnavailable, match="did not answer"):
        down.schema(1)


def test_user_info_in_the_url_is_sent_as_basic_authentication_and_kept_out_of_messages():
    registry = ExternalSchemaRegistry(f"http://reader:s%40cret@127.0.0.1:{free_port()}/api", timeout=2)
    assert registry._headers["Authorization"] == "Basic cmVhZGVyOnNAY3JldA=="  # reader:s@cret
    with pytest.raises(BackendUnavailable) as raised:
        registry.schema(1)
    assert "cret" not in str(raised.value)
