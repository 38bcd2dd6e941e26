"""DataHub Actions on Lodestar, with the real Kafka: `datahub actions -c <config>` with DataHub's
Kafka event source (its AvroDeserializer reading the schemas from Lodestar's registry at
/schema-registry/api/) receives the EntityChangeEvents of changes made through Lodestar's REST
API, and with `kafka.wire_format: confluent` their MCLs too, in order per entity, nothing
missing; with `kafka.schema_registry_url` naming an external registry (another Lodestar's) the
schemas are registered and read there. `EventRecorder`, an Action of this module, writes what
DataHub's own event classes read from each event, one JSON line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote
from urllib.request import urlopen

import pytest
import yaml
from datahub_actions.action.action import Action
from datahub_actions.event.event_envelope import EventEnvelope
from datahub_actions.event.event_registry import EntityChangeEvent, MetadataChangeLogEvent
from datahub_actions.pipeline.pipeline_context import PipelineContext

from ingest import topics
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.builders import dataset_urn, mcp
from tests.support.processes import ServeProcess
from tests.support.waiting import await_

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "urn:li:corpuser:admin"
ORDERS, USERS = dataset_urn("orders"), dataset_urn("users")
WAIT = 120.0


class EventRecorder(Action):
    """Appends what DataHub's classes read from each event to the file `config["path"]`."""

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def create(cls, config_dict: dict, ctx: PipelineContext) -> EventRecorder:
        return cls(config_dict["path"])

    def act(self, event: EventEnvelope) -> None:
        change = event.event
        line: dict[str, Any] = {"type": event.event_type, "entityUrn": change.entityUrn,
                                "entityType": change.entityType, "partition": event.meta["kafka"]["partition"]}
        if isinstance(change, MetadataChangeLogEvent):
            line.update(aspectName=change.aspectName, changeType=change.changeType,
                        version=change.systemMetadata.version, actor=change.created.actor, time=change.created.time)
        else:
            assert isinstance(change, EntityChangeEvent), type(change)
            line.update(category=change.category, operation=change.operation, modifier=change.modifier,
                        parameters=change.safe_parameters, actor=change.auditStamp.actor,
                        time=change.auditStamp.time)
        with open(self.path, "a") as out:
            out.write(json.dumps(line) + "\n")

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Setup:
    serve: ServeProcess
    prefix: str
    registry: str  # the schema registry's URL
    external: bool  # another Lodestar's registry, not the server's own
    confluent: bool  # MCLs in DataHub's format


@pytest.fixture(params=["lodestar", "confluent", "confluent, external registry"])
def lodestar(request, tmp_path: Path, kafka_bootstrap: str) -> Iterator[Setup]:
    """`lodestar serve` on the real Kafka (aspects and read models embedded), with a topic prefix
    of its own, writing MCLs in each wire format, registering schemas in its own registry or in
    another Lodestar's (the in-process `server`)."""
    prefix = unique_name("actions") + "."
    wire_format, _, external = request.param.partition(", ")
    env = {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": kafka_bootstrap,
           "LODESTAR_KAFKA_PREFIX": prefix, "LODESTAR_KAFKA_SESSION_TIMEOUT_MS": "6000",
           "LODESTAR_KAFKA_WIRE_FORMAT": wire_format}
    registry = None
    if external:
        other = request.getfixturevalue("server")
        registry = f"{other.url}/schema-registry/api/"
        env.update(LODESTAR_SCHEMA_REGISTRY_URL=registry, LODESTAR_SCHEMA_REGISTRY_TOKEN=other.token)
    try:
        with ServeProcess(tmp_path / "lodestar", env) as serve:  # (the other Lodestar has tmp_path / "data")
            yield Setup(serve, prefix, registry or f"{serve.url}/schema-registry/api/", bool(external),
                        wire_format == "confluent")
    finally:
        drop_kafka_names(kafka_bootstrap, prefix)


def actions_config(tmp_path: Path, setup: Setup, bootstrap: str, out: Path) -> Path:
    """A pipeline reading the platform events, and the MCLs when they are in DataHub's format."""
    prefix = setup.prefix
    routes = {"pe": f"{prefix}{topics.PLATFORM_EVENT}"}
    if setup.confluent:
        routes["mcl"] = f"{prefix}{topics.MCL_VERSIONED}"
    config = {
        "name": f"{prefix}recorder",  # the pipeline's consumer group
        "source": {"type": "kafka", "config": {
            "connection": {"bootstrap": bootstrap, "schema_registry_url": setup.registry,
                           "consumer_config": {"auto.offset.reset": "earliest"}},
            "topic_routes": routes}},
        "action": {"type": f"{__name__}:EventRecorder", "config": {"path": str(out)}},
    }
    path = tmp_path / "actions.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def received(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def of(events: list[dict[str, Any]], urn: str) -> list[tuple[str, str, str | None]]:
    return [(e["category"], e["operation"], e["modifier"]) for e in events
            if e["entityUrn"] == urn and e["type"] == "EntityChangeEvent_v1"]


def mcls(events: list[dict[str, Any]], urn: str) -> list[tuple[str, str, str | None]]:
    return [(e["aspectName"], e["changeType"], e["version"]) for e in events
            if e["entityUrn"] == urn and e["type"] == "MetadataChangeLogEvent_v1"]


# The MCLs of the test's writes, per entity: (aspect, change type, version)
ORDERS_MCLS = [("datasetKey", "UPSERT", "1"), ("datasetProperties", "UPSERT", "1"), ("globalTags", "UPSERT", "1"),
               ("ownership", "UPSERT", "1"), ("glossaryTerms", "UPSERT", "1"), ("domains", "UPSERT", "1"),
               ("schemaMetadata", "UPSERT", "1"), ("globalTags", "UPSERT", "2"), ("deprecation", "UPSERT", "1")]
USERS_MCLS = [("datasetKey", "UPSERT", "1"), ("globalTags", "UPSERT", "1"), ("status", "UPSERT", "1"),
              ("globalTags", "DELETE", "2"), ("status", "DELETE", "2"), ("datasetKey", "DELETE", "2")]


def apply(serve: ServeProcess, *proposals: dict[str, Any]) -> None:
    assert all(r["status"] == "applied" for r in serve.client().propose(list(proposals)))


def test_datahub_actions_receives_the_entity_change_events_of_rest_writes(lodestar, kafka_bootstrap, tmp_path):
    serve, prefix = lodestar.serve, lodestar.prefix
    out = tmp_path / "events.jsonl"
    env = {**os.environ, "HOME": str(tmp_path), "DATAHUB_TELEMETRY_ENABLED": "false", "PYTHONPATH": str(ROOT)}
    field = {"fieldPath": "id", "nullable": False, "nativeDataType": "int",
             "type": {"type": {"com.linkedin.schema.NumberType": {}}}}
    schema = {"schemaName": "orders", "platform": "urn:li:dataPlatform:hive", "version": 0, "hash": "",
              "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}}, "fields": [field]}
    with open(tmp_path / "actions.out", "wb") as log:
        actions = subprocess.Popen([str(Path(sys.executable).with_name("datahub")), "actions", "-c",
                                    str(actions_config(tmp_path, lodestar, kafka_bootstrap, out))],
                                   cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        apply(serve, mcp(ORDERS, "datasetProperties", {"description": "All orders", "customProperties": {}}),
              mcp(USERS, "globalTags", {"tags": [{"tag": "urn:li:tag:PII"}]}))
        apply(serve, mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:PII"}]}),
              mcp(ORDERS, "ownership", {"owners": [{"owner": "urn:li:corpuser:jdoe", "type": "DATAOWNER"}]}),
              mcp(ORDERS, "glossaryTerms", {"terms": [{"urn": "urn:li:glossaryTerm:Sales"}],
                                            "auditStamp": {"time": 1, "actor": ADMIN}}),
              mcp(ORDERS, "domains", {"domains": ["urn:li:domain:sales"]}),
              mcp(ORDERS, "schemaMetadata", schema))
        apply(serve, mcp(ORDERS, "globalTags", {"tags": [{"tag": "urn:li:tag:Gold"}]}),
              mcp(ORDERS, "deprecation", {"deprecated": True, "note": "use orders_v2", "actor": ADMIN}),
              mcp(USERS, "status", {"removed": True}))
        serve.client().call("DELETE", f"/v1/entities/{quote(USERS, safe='')}?hard=true")
        expected_orders = [
            ("LIFECYCLE", "CREATE", None), ("DOCUMENTATION", "ADD", None), ("TAG", "ADD", "urn:li:tag:PII"),
            ("OWNER", "ADD", "urn:li:corpuser:jdoe"), ("GLOSSARY_TERM", "ADD", "urn:li:glossaryTerm:Sales"),
            ("DOMAIN", "ADD", "urn:li:domain:sales"), ("TECHNICAL_SCHEMA", "ADD", f"urn:li:schemaField:({ORDERS},id)"),
            ("TAG", "REMOVE", "urn:li:tag:PII"), ("TAG", "ADD", "urn:li:tag:Gold"),
            ("DEPRECATION", "MODIFY", "DEPRECATED")]
        expected_users = [("LIFECYCLE", "CREATE", None), ("TAG", "ADD", "urn:li:tag:PII"),
                          ("LIFECYCLE", "SOFT_DELETE", None), ("TAG", "REMOVE", "urn:li:tag:PII"),
                          ("LIFECYCLE", "HARD_DELETE", None)]
        confluent = lodestar.confluent
        expected = len(expected_orders) + len(expected_users) + (len(ORDERS_MCLS) + len(USERS_MCLS)) * confluent
        events = await_(lambda: (found := [e for e in received(out) if e["entityUrn"] in (ORDERS, USERS)])
                        and len(found) >= expected and found, "the Action to receive every event", WAIT)
    finally:
        actions.terminate()
        actions.wait(30)
    assert of(events, ORDERS) == expected_orders, (tmp_path / "actions.out").read_text()[-3000:]
    assert of(events, USERS) == expected_users
    assert mcls(events, ORDERS) == (ORDERS_MCLS if confluent else [])
    assert mcls(events, USERS) == (USERS_MCLS if confluent else [])
    assert len(events) == expected
    assert {e["actor"] for e in events} == {ADMIN} and all(e["time"] > 0 for e in events)
    assert {e["entityType"] for e in events} == {"dataset"}
    changes = [e for e in events if e["type"] == "EntityChangeEvent_v1"]
    by_kind = {(e["entityUrn"], e["category"], e["operation"], e["modifier"]): e["parameters"] for e in changes}
    assert by_kind[ORDERS, "TAG", "ADD", "urn:li:tag:Gold"] == {"tagUrn": "urn:li:tag:Gold"}
    assert by_kind[ORDERS, "OWNER", "ADD", "urn:li:corpuser:jdoe"] == {"ownerUrn": "urn:li:corpuser:jdoe",
                                                                      "ownerType": "DATAOWNER"}
    assert by_kind[ORDERS, "DOCUMENTATION", "ADD", None] == {"description": "All orders"}
    assert by_kind[ORDERS, "DEPRECATION", "MODIFY", "DEPRECATED"] == {"status": "DEPRECATED"}
    assert by_kind[ORDERS, "TECHNICAL_SCHEMA", "ADD", f"urn:li:schemaField:({ORDERS},id)"] == {
        "fieldUrn": f"urn:li:schemaField:({ORDERS},id)", "fieldPath": "id", "nullable": False}
    assert len({e["partition"] for e in changes if e["entityUrn"] == ORDERS}) == 1  # one entity, one partition
    registered = json.load(urlopen(f"{lodestar.registry}subjects"))
    assert f"{prefix}{topics.PLATFORM_EVENT}-value" in registered
    assert any(name.endswith(f"{topics.MCL_VERSIONED}-value") for name in registered) == confluent
    lag = [line for line in urlopen(f"{serve.url}/metrics").read().decode().splitlines()
           if line.startswith('lodestar_consumer_lag{group="platform-events"')]
    assert lag and all(topics.MCL_VERSIONED in line for line in lag)  # the publisher's lag is watched too
    if lodestar.external:  # nothing in the server's own
        assert serve.client().call("GET", "/schema-registry/api/subjects") == []
