"""DataHub's Kafka path into Lodestar, on the real Kafka: `datahub ingest` with a `file` source
and the `datahub-kafka` sink (DataHub's `DatahubKafkaEmitter`: Confluent's AvroSerializer, the
schemas registered in Lodestar's own registry at /schema-registry/api/) writes MCPs and an MCE
into Lodestar's prefixed topics; `lodestar serve` on that Kafka applies every proposal (read
back through /v1), and records it cannot read land on the failed topic with the reason. On the
embedded log too, the consumer reads DataHub's records beside Lodestar's own."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from datahub.emitter.kafka_emitter import DatahubKafkaEmitter, KafkaEmitterConfig
from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetPropertiesClass, MetadataChangeEventClass
from datahub.metadata.schemas import getMetadataChangeEventSchema, getMetadataChangeProposalSchema
from fastavro import parse_schema, schemaless_writer

from gms.intake import DATAHUB_ACTOR
from gms.schema_registry import SchemaRegistry, store_reader
from gms.service import MCP_GROUP, Gms
from ingest import topics
from ingest.eventlog import LogMessage
from ingest.eventlog.kafka import KafkaEventLog
from ingest.proposal import Proposal
from schemas.confluent import frame
from schemas.events import default_codec
from tests.support.backends import drop_kafka_names, unique_name
from tests.support.datahub_clients import DatahubCli, entity
from tests.support.processes import TOKEN, ServeProcess
from tests.support.waiting import await_

REGISTRY = "/schema-registry/api/"
WAIT = 90.0


@pytest.fixture
def kafka_lodestar(tmp_path: Path, kafka_bootstrap: str) -> Iterator[tuple[ServeProcess, str]]:
    """`lodestar serve` on the real Kafka (aspects and read models embedded), with a topic prefix
    of its own; DataHub's records are applied as urn:li:corpuser:datahub, granted WRITE here."""
    prefix = unique_name("dhsink") + "."
    env = {"LODESTAR_EVENT_LOG": "kafka", "LODESTAR_KAFKA_BOOTSTRAP": kafka_bootstrap,
           "LODESTAR_KAFKA_PREFIX": prefix, "LODESTAR_KAFKA_SESSION_TIMEOUT_MS": "6000"}
    try:
        with ServeProcess(tmp_path / "data", env) as serve:
            admin = serve.client()
            admin.call("POST", "/v1/access/principals", {"name": "datahub"})
            admin.call("POST", "/v1/access/grants", {"principal": "datahub", "resource": "instance",
                                                     "privileges": ["READ", "WRITE"]})
            yield serve, prefix
    finally:
        drop_kafka_names(kafka_bootstrap, prefix)


def datahub_cli(lodestar: ServeProcess, tmp_path: Path) -> DatahubCli:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "DATAHUB_GMS_URL": lodestar.url, "DATAHUB_GMS_TOKEN": TOKEN,
           "DATAHUB_TELEMETRY_ENABLED": "false"}
    env.pop("DATAHUB_GMS_HOST", None)
    return DatahubCli(env, tmp_path)


def kafka_recipe(tmp_path: Path, items: list[dict[str, Any]], lodestar: ServeProcess, bootstrap: str,
                 prefix: str) -> Path:
    data = tmp_path / f"metadata-{len(items)}.json"
    data.write_text(json.dumps(items))
    recipe = {
        "run_id": "kafka-sink-run",
        "source": {"type": "file", "config": {"path": str(data)}},
        "sink": {"type": "datahub-kafka", "config": {
            "connection": {"bootstrap": bootstrap, "schema_registry_url": lodestar.url + REGISTRY,
                           # registering the sink's schemas needs WRITE: the admin token
                           "schema_registry_config": {"bearer.auth.credentials.source": "STATIC_TOKEN",
                                                      "bearer.auth.token": TOKEN,
                                                      "bearer.auth.logical.cluster": "lodestar"}},
            "topic_routes": {"MetadataChangeProposal": prefix + topics.MCP,
                             "MetadataChangeEvent": prefix + topics.MCE}}},
    }
    path = tmp_path / "recipe.yml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def failed_records(log: KafkaEventLog) -> list[Any]:
    """Every record of the failed topic, from all its partitions."""
    return [record for partition in range(log.partitions(topics.FAILED_MCP))
            for record in log.read(topics.FAILED_MCP, partition)]


def mcp(urn: str, aspect: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"entityType": "dataset", "entityUrn": urn, "changeType": "UPSERT", "aspectName": aspect,
            "aspect": {"json": value}}


def mce(urn: str) -> dict[str, Any]:
    """An MCE as DataHub's file sink writes it: a dataset snapshot of status, properties and a schema."""
    field_type = {"type": {"com.linkedin.pegasus2avro.schema.StringType": {}}}
    return {"proposedSnapshot": {"com.linkedin.pegasus2avro.metadata.snapshot.DatasetSnapshot": {
        "urn": urn, "aspects": [
            {"com.linkedin.pegasus2avro.common.Status": {"removed": False}},
            {"com.linkedin.pegasus2avro.dataset.DatasetProperties": {
                "description": "Shipments, from an MCE", "customProperties": {"source": "mce"}, "tags": []}},
            {"com.linkedin.pegasus2avro.schema.SchemaMetadata": {
                "schemaName": "shipments", "platform": "urn:li:dataPlatform:hive", "version": 0, "hash": "",
                "created": {"time": 0, "actor": "urn:li:corpuser:unknown"},
                "lastModified": {"time": 0, "actor": "urn:li:corpuser:unknown"},
                "platformSchema": {"com.linkedin.pegasus2avro.schema.OtherSchema": {"rawSchema": ""}},
                "fields": [{"fieldPath": "id", "nativeDataType": "string", "type": field_type,
                            "nullable": False, "recursive": False, "isPartOfKey": False}]}}]}}}


def test_the_datahub_kafka_sink_writes_every_proposal_into_lodestar(kafka_lodestar, kafka_bootstrap, tmp_path):
    lodestar, prefix = kafka_lodestar
    orders, items, shipments = (make_dataset_urn("hive", f"kafka.{n}") for n in ("orders", "items", "shipments"))
    recipe = kafka_recipe(tmp_path, [
        mcp(orders, "datasetProperties", {"description": "All orders", "customProperties": {"team": "sales"}}),
        mcp(orders, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
        mcp(items, "datasetProperties", {"description": "Items"}),
        mce(shipments)], lodestar, kafka_bootstrap, prefix)
    out = datahub_cli(lodestar, tmp_path).ok("ingest", "-c", str(recipe))
    assert "Pipeline finished" in out, out
    # the sink unpacks an MCE into MCPs itself; DataHub's emitter sends one whole to the MCE topic
    returns = make_dataset_urn("hive", "kafka.returns")
    emitter = DatahubKafkaEmitter(KafkaEmitterConfig.model_validate(
        yaml.safe_load(kafka_recipe(tmp_path, [], lodestar, kafka_bootstrap, prefix).read_text())["sink"]["config"]))
    emitter.emit(MetadataChangeEventClass.from_obj(mce(returns)))
    emitter.flush()
    client = lodestar.client()

    def applied() -> dict[str, Any] | None:
        found = {urn: entity(client, urn) for urn in (orders, items, shipments, returns)}
        wanted = {orders: {"datasetProperties", "globalTags"}, items: {"datasetProperties"},
                  shipments: {"status", "datasetProperties", "schemaMetadata"},
                  returns: {"status", "datasetProperties", "schemaMetadata"}}
        return found if all(found[u] is not None and wanted[u] <= set(found[u]) for u in wanted) else None

    found = await_(applied, "every proposal of the datahub-kafka sink applied", WAIT)
    assert found[orders]["datasetProperties"]["value"]["customProperties"] == {"team": "sales"}
    assert found[orders]["globalTags"]["value"] == {"tags": [{"tag": "urn:li:tag:pii"}]}
    assert found[items]["datasetProperties"]["value"]["description"] == "Items"
    assert found[shipments]["status"]["value"]["removed"] is False
    assert found[shipments]["datasetProperties"]["value"]["customProperties"] == {"source": "mce"}
    schema = found[shipments]["schemaMetadata"]["value"]
    assert schema["fields"][0]["fieldPath"] == "id"
    # the union branch the Avro body names, stored under DataHub's model name as any write stores it
    assert schema["fields"][0]["type"] == {"type": {"com.linkedin.schema.StringType": {}}}
    assert found[orders]["globalTags"]["systemMetadata"]["runId"] == "kafka-sink-run"
    assert found[returns]["schemaMetadata"]["value"] == schema  # the MCE split as the sink splits it
    assert found[returns]["datasetProperties"]["value"]["description"] == "Shipments, from an MCE"
    # the sink registered DataHub's schemas in Lodestar's registry, under its topics' subjects
    subjects = client.call("GET", "/schema-registry/api/subjects")
    assert {prefix + topics.MCP + "-value", prefix + topics.MCE + "-value"} <= set(subjects)
    log = KafkaEventLog(kafka_bootstrap, prefix)
    try:
        assert failed_records(log) == []
    finally:
        log.close()


def test_unreadable_confluent_records_land_on_the_failed_topic_with_the_reason(kafka_lodestar, kafka_bootstrap,
                                                                               tmp_path):
    lodestar, prefix = kafka_lodestar
    registered = lodestar.client().call("POST", f"/schema-registry/api/subjects/{prefix}{topics.MCP}-value/versions",
                                        {"schema": getMetadataChangeProposalSchema()})["id"]
    unknown = 7 if registered != 7 else 8
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, value in (("corrupt", frame(registered, b"\xff\xff\xff garbage")), ("unknown", frame(unknown, b"\x02"))):
        producer.produce(prefix + topics.MCP, key=key, value=value)
    assert producer.flush(30) == 0
    log = KafkaEventLog(kafka_bootstrap, prefix)
    codec = default_codec()

    def both_failed() -> list[dict[str, Any]] | None:
        records = failed_records(log)
        return [codec.decode(r.value)[1] for r in records] if len(records) >= 2 else None

    try:
        failed = await_(both_failed, "both records on the failed topic", WAIT)
    finally:
        log.close()
    reasons = {f["mcp"]["entityUrn"]: f["error"] for f in failed}
    assert set(reasons) == {"corrupt", "unknown"}
    assert "corrupt" in reasons["corrupt"] and f"schema id {registered}" in reasons["corrupt"]
    assert f"schema id {unknown} is not in the schema registry" in reasons["unknown"]


def datahub_record(gms: Gms, subject: str, schema: str, obj: Any) -> bytes:
    """A record as DataHub's AvroSerializer writes it, its schema registered in Lodestar's registry."""
    registry = SchemaRegistry(lambda proposals, actor: gms.apply(proposals, actor), store_reader(gms.store))
    schema_id = registry.register("urn:li:corpuser:admin", subject, schema)
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(json.loads(schema)), obj.to_obj(tuples=True))
    return frame(schema_id, body.getvalue())


def test_the_consumer_reads_both_formats_side_by_side_on_the_embedded_log(gms: Gms):
    orders, returns = make_dataset_urn("hive", "both.orders"), make_dataset_urn("hive", "both.returns")
    datahub_mcp = datahub_record(gms, "mcp-value", getMetadataChangeProposalSchema(), MetadataChangeProposalWrapper(
        entityUrn=orders, aspect=DatasetPropertiesClass(description="from DataHub's serializer"),
        headers={"X-Lodestar-Actor": "urn:li:corpuser:alice"}))
    datahub_mce = datahub_record(gms, "mce-value", getMetadataChangeEventSchema(),
                                 MetadataChangeEventClass.from_obj(mce(returns)))
    gms.log.append(topics.MCP, [LogMessage(orders, datahub_mcp)])
    gms.enqueue([Proposal("dataset", orders, "UPSERT", "globalTags", {"tags": [{"tag": "urn:li:tag:own"}]})],
                "urn:li:corpuser:bob")
    gms.log.append(topics.MCE, [LogMessage(returns, datahub_mce)])
    stop = threading.Event()
    consumer = threading.Thread(target=gms.consume_proposals, args=(stop, 0.05))
    consumer.start()
    try:
        await_(lambda: gms.log.committed(MCP_GROUP, topics.MCP, 0) >= 2
               and gms.log.committed(MCP_GROUP, topics.MCE, 0) >= 1, "both topics consumed")
    finally:
        stop.set()
        consumer.join(5)
    properties = gms.store.get(orders, "datasetProperties")
    assert properties.value["description"] == "from DataHub's serializer"
    assert properties.system_metadata["aspectModified"]["actor"] == "urn:li:corpuser:alice"  # its headers' actor
    tags = gms.store.get(orders, "globalTags")
    assert tags.system_metadata["aspectModified"]["actor"] == "urn:li:corpuser:bob"  # Lodestar's own record
    assert gms.store.get(returns, "status").value == {"removed": False}
    assert gms.store.get(returns, "datasetProperties").system_metadata["aspectModified"]["actor"] == DATAHUB_ACTOR
    assert gms.store.get(returns, "schemaMetadata").value["platformSchema"] == {
        "com.linkedin.schema.OtherSchema": {"rawSchema": ""}}
    assert gms.log.read(topics.FAILED_MCP) == []
