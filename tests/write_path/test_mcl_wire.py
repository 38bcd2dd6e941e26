"""MCLs in both wire formats (schemas/mcl_wire.py): Lodestar's own and DataHub's schema in
Confluent's framing, written by GMS as configured and read back alike by every reader."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest
from fastavro import schemaless_reader
from fastavro.schema import parse_schema

from gms.service import Gms
from ingest import topics
from ingest.backends.errors import BackendUnavailable
from ingest.eventlog import LogMessage, LogRecord
from ingest.schema_lookup import registry_lookup
from ingest.subscribe import subscribe
from mcl_processor.changes import AspectChange, TimeseriesPoint
from mcl_processor.decode import MclDecoder, PoisonRecord
from mcl_processor.embedded import SqliteReadModels
from mcl_processor.processor import MclProcessor
from schemas.confluent import frame
from schemas.events import MCL, EventDecodeError, default_codec
from schemas.mcl_wire import ConfluentMclEncoder, MclReader, UnresolvedSchema, datahub_mcl_schema, subject
from schemas.registry import default_registry
from tests.contracts.subscription import take
from tests.support.builders import dataset_urn, properties, proposal
from tests.support.server import free_port, start_server

URN = dataset_urn("wire.orders")
ACTOR = "urn:li:corpuser:wire"


def varied_changes(gms: Gms) -> None:
    """Proposals whose MCLs set every field Lodestar writes: system metadata of a run with
    properties, headers, a previous value, a delete, timeseries points and a window deletion."""
    run = {"runId": "run-7", "pipelineName": "nightly", "registryName": "reg", "registryVersion": "1.2",
           "properties": {"clientId": "test"}}
    gms.apply([proposal(URN, "datasetProperties", properties("one", team="a"), systemMetadata=run),
               proposal(URN, "datasetProperties", properties("two"), headers={"If-Version-Match": "1"}),
               proposal(URN, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
               proposal(URN, "globalTags", change="DELETE"),
               proposal(URN, "datasetProfile", {"timestampMillis": 1_700_000_000_000, "rowCount": 3})], ACTOR)
    gms.delete_timeseries(URN, "datasetProfile", 1_600_000_000_000, None, ACTOR)


def mcl_records(gms: Gms) -> list[LogRecord]:
    return [record for topic in topics.MCL_TOPICS for record in gms.log.read(topic, 0, 0, 10_000)]


def test_every_field_of_lodestars_mcl_round_trips_through_datahubs_schema(tmp_path: Path):
    gms = Gms.embedded(tmp_path)
    varied_changes(gms)
    codec = default_codec()
    mcls = [codec.decode(record.value)[1] for record in mcl_records(gms)]
    gms.close()
    ours = [m for m in mcls if m["entityUrn"] == URN]
    assert any(m["previousAspectValue"] and m["previousSystemMetadata"] for m in ours)
    assert any((m["headers"] or {}).get("If-Version-Match") == "1" for m in ours)
    assert any(m["systemMetadata"]["runId"] == "run-7" and m["systemMetadata"]["properties"] == {"clientId": "test"}
               and m["systemMetadata"]["registryVersion"] == "1.2" for m in ours)
    assert {m["changeType"] for m in ours} == {"UPSERT", "DELETE"}
    schema_id = datahub_mcl_schema().default_id
    encoder, reader = ConfluentMclEncoder(schema_id), MclReader()
    for mcl in mcls:
        data = encoder.encode(mcl)
        assert data[:5] == struct.pack(">bI", 0, schema_id)
        assert reader.decode(data) == mcl
        assert reader.decode(codec.encode(MCL, mcl)) == mcl


def test_datahubs_reader_sees_the_fields_under_datahubs_names():
    """What DataHub's deserializer does: the writer schema by the record's id, then the body."""
    datahub = datahub_mcl_schema()
    mcl = {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "status",
           "aspect": {"value": b'{"removed":false}', "contentType": "application/json"},
           "systemMetadata": {"lastObserved": 5, "runId": "r", "version": "4"},
           "created": {"time": 9, "actor": ACTOR}}
    data = ConfluentMclEncoder(77).encode(mcl)
    parsed = parse_schema(json.loads(datahub.text))
    read = schemaless_reader(io.BytesIO(data[5:]), parsed, None)
    assert datahub.schema["namespace"] == "com.linkedin.pegasus2avro.mxe"
    assert read["auditHeader"] is None and read["systemMetadata"]["schemaVersion"] is None
    assert (read["entityUrn"], read["aspect"]["value"], read["systemMetadata"]["version"], read["created"]["actor"]) \
        == (URN, b'{"removed":false}', "4", ACTOR)


def test_a_gms_writing_confluent_registers_datahubs_schema_and_its_mcls_read_like_lodestars(tmp_path: Path):
    lodestar, confluent = Gms.embedded(tmp_path / "a"), Gms.embedded(tmp_path / "b", wire_format="confluent")
    text = datahub_mcl_schema().text
    (schema_id,) = {confluent.schema_registry.version(subject(topic), "latest")[1].id for topic in topics.MCL_TOPICS}
    assert confluent.schema_registry.schema(schema_id).schema == text
    before = {topic: confluent.log.end_offset(topic, 0) for topic in topics.MCL_TOPICS}
    for gms in (lodestar, confluent):
        varied_changes(gms)
    written = [r for r in mcl_records(confluent) if r.offset >= before[r.topic]]
    assert written and all(r.value[:5] == frame(schema_id, b"") for r in written)

    def comparable(gms: Gms, records: list[LogRecord]) -> list[dict]:
        out = []
        for record in records:
            mcl = gms.mcl_reader.decode(record.value)
            for key in ("systemMetadata", "previousSystemMetadata"):
                for stamp in ("lastObserved", "aspectCreated", "aspectModified"):
                    (mcl[key] or {}).pop(stamp, None)
            mcl.pop("created")
            out.append(mcl)
        return out

    ours = [r for r in mcl_records(lodestar) if r.key == URN]
    assert comparable(confluent, [r for r in written if r.key == URN]) == comparable(lodestar, ours)
    decoder = MclDecoder(confluent.registry, confluent.mcl_reader)
    changes = [decoder.decode(r.value) for r in written if r.key == URN]
    assert [type(c).__name__ for c in changes].count("TimeseriesPoint") == 1
    assert [(c.aspect, c.version) for c in changes if isinstance(c, AspectChange)][:3] == \
        [("datasetKey", 1), ("datasetProperties", 1), ("datasetProperties", 2)]
    ends = {topic: confluent.log.end_offset(topic, 0) for topic in topics.MCL_TOPICS}
    lodestar.close()
    confluent.close()
    again = Gms.embedded(tmp_path / "b", wire_format="confluent")  # a restart registers nothing new
    assert {topic: again.log.end_offset(topic, 0) for topic in topics.MCL_TOPICS} == ends
    assert again.schema_registry.versions(subject(topics.MCL_VERSIONED)) == [{"version": 1, "id": schema_id}]
    again.close()


def test_unreadable_confluent_records_say_why():
    reader = MclReader(lookup=lambda schema_id: {5: '{"type": "record", "name": "Other", "fields": []}'}.get(schema_id))
    with pytest.raises(EventDecodeError, match="schema id 7 is not in the schema registry"):
        reader.decode(frame(7, b"\x00"))
    with pytest.raises(EventDecodeError, match="schema id 5 is a Other schema, not a MetadataChangeLog"):
        reader.decode(frame(5, b""))
    with pytest.raises(EventDecodeError, match="shorter than its 5-byte head"):
        reader.decode(b"\x00\x01")
    datahub_id = datahub_mcl_schema().default_id
    with pytest.raises(EventDecodeError, match="corrupt"):
        MclReader().decode(frame(datahub_id, b"\x02\x80"))
    with pytest.raises(PoisonRecord, match="corrupt MetadataChangeLog body"):
        MclDecoder(default_registry(), MclReader()).decode(frame(datahub_id, b"\x02\x80"))


def test_a_record_a_forked_decoder_cannot_resolve_is_read_by_the_processor_itself(tmp_path: Path):
    """Decode workers look nothing up (their inherited connections are not theirs to use): an id
    they did not know comes back unresolved and the processor reads that record itself."""
    gms = Gms.embedded(tmp_path / "data", wire_format="confluent")
    gms.apply([proposal(URN, "datasetProfile", {"timestampMillis": 1_700_000_000_000, "rowCount": 3})], ACTOR)
    (record,) = [r for r in gms.log.read(topics.MCL_TIMESERIES) if r.key == URN]
    detached = MclDecoder(gms.registry, MclReader(lookup=lambda i: gms.schema_registry.schema(i).schema))
    detached.reader.detach()
    with pytest.raises(UnresolvedSchema):
        detached.decode(record.value)
    models = SqliteReadModels.in_data_dir(tmp_path / "data", gms.registry)
    processor = MclProcessor(gms.registry, gms.mcl_reader, models)
    schema_id = int.from_bytes(record.value[1:5], "big")
    processor.process([record], [UnresolvedSchema(schema_id)])
    assert processor.skipped == 0
    assert [p["rowCount"] for p in models.timeseries.query(URN, "datasetProfile")] == [3]
    assert isinstance(MclDecoder(gms.registry, gms.mcl_reader).decode(record.value), TimeseriesPoint)
    models.close()
    gms.close()


def test_a_subscription_reads_writer_schemas_from_a_registrys_url(tmp_path: Path, caplog):
    """A subscriber that names a registry (here a Lodestar server's /schema-registry/api, over
    HTTP) reads each record with the schema the registry holds under its id: records of an id
    it does not hold, or of a schema that is no MCL, are skipped saying so."""
    gms = Gms.embedded(tmp_path / "data")
    models = SqliteReadModels.in_data_dir(tmp_path / "data", gms.registry)
    server, thread = start_server(gms, models)
    url = f"{server.url}/schema-registry/api"
    try:
        schema_id = gms.schema_registry.register(ACTOR, "elsewhere-value", datahub_mcl_schema().text)
        other_id = gms.schema_registry.register(ACTOR, "other-value", '{"type": "record", "name": "X", "fields": []}')
        mcl = {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "status",
               "aspect": {"value": b'{"removed": true}', "contentType": "application/json"},
               "systemMetadata": {"version": "9"}}
        gms.log.append(topics.MCL_VERSIONED, [LogMessage(URN, frame(other_id, b"")),
                                              LogMessage(URN, ConfluentMclEncoder(schema_id + 1).encode(mcl)),
                                              LogMessage(URN, ConfluentMclEncoder(schema_id).encode(mcl))])
        assert registry_lookup(url)(schema_id) == datahub_mcl_schema().text
        with caplog.at_level("WARNING", logger="ingest.subscribe"), \
                subscribe(gms.log, "remote", start="earliest", aspects=["status"], handle_signals=False,
                          poll_timeout=0.2, schema_registry=url) as changes:
            (change,) = take(changes, 1)
        assert (change.urn, change.version, change.value) == (URN, 9, {"removed": True})
        skipped = [r.getMessage().split(": ", 1)[1] for r in caplog.records]
        assert skipped == [f"schema id {other_id} is a X schema, not a MetadataChangeLog",
                           f"schema id {schema_id + 1} is not in the schema registry"]
    finally:
        thread.stop()
        models.close()
        gms.close()
    with pytest.raises(BackendUnavailable, match="did not answer"):
        registry_lookup(f"http://127.0.0.1:{free_port()}/schema-registry/api")(schema_id)
