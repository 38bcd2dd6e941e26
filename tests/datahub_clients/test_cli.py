"""The `datahub` CLI, unmodified, as a process against `lodestar serve`: `datahub ingest` with a
file source and the default sink (ASYNC_BATCH), stateful ingestion of the json-schema source
removing a stale entity, `datahub delete` in its forms, `datahub put`,
`datahub ingest list-runs | show | rollback`; and what becomes of queued proposals that fail
when applied (`lodestar failed`, /metrics)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import requests
from datahub.emitter.emit_mode import EmitMode
from datahub.emitter.mce_builder import make_data_job_urn, make_dataset_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ChangeTypeClass,
    ContainerClass,
    ContainerPropertiesClass,
    DatasetProfileClass,
    DatasetPropertiesClass,
    EditableDatasetPropertiesClass,
    SystemMetadataClass,
    UpstreamClass,
    UpstreamLineageClass,
)

from tests.support import datahub_clients
from tests.support.datahub_clients import DatahubCli, entity, indexed, points, searched
from tests.support.processes import TOKEN, run_cli
from tests.support.waiting import await_

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
DAY = 86_400_000

# the fixtures used here (tests/support/datahub_clients.py)
datahub, emitter, lodestar = datahub_clients.datahub, datahub_clients.emitter, datahub_clients.lodestar


def mcp(urn: str, aspect: str, value: dict[str, Any]) -> dict[str, Any]:
    """An MCP in DataHub's file form."""
    return {"entityType": urn.removeprefix("urn:li:").partition(":")[0], "entityUrn": urn, "changeType": "UPSERT",
            "aspectName": aspect, "aspect": {"json": value}}


def wrapped(urn: str, aspect: Any, run_id: str | None = None) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=SystemMetadataClass(
        runId=run_id) if run_id else None)


def recipe(tmp: Path, name: str, mcps: list[dict[str, Any]], run_id: str) -> Path:
    """A recipe of a file source with these MCPs and no sink (DataHub's default: datahub-rest,
    ASYNC_BATCH, configured by DATAHUB_GMS_URL and DATAHUB_GMS_TOKEN)."""
    data = tmp / f"{name}.json"
    data.write_text(json.dumps(mcps))
    path = tmp / f"{name}.yml"
    path.write_text(f"run_id: {run_id}\nsource:\n  type: file\n  config:\n    path: {data}\n")
    return path


def ingested(datahub: DatahubCli, path: Path) -> str:
    out = datahub.ok("ingest", "-c", str(path))
    assert "Pipeline finished successfully" in out and "'mode': 'ASYNC_BATCH'" in out, out
    return out


def run_rows(lodestar, run_id: str) -> list[dict[str, Any]]:
    return lodestar.client().call("POST", "/runs?action=describe", {"runId": run_id, "count": 1000})["value"]


def test_ingest_with_the_default_sink_writes_what_the_file_holds(datahub, lodestar, tmp_path):
    orders, items = make_dataset_urn("hive", "cli.orders"), make_dataset_urn("hive", "cli.items")
    path = recipe(tmp_path, "shop", [
        mcp(orders, "datasetProperties", {"description": "All orders", "customProperties": {"team": "sales"}}),
        mcp(orders, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}),
        mcp(items, "datasetProperties", {"description": "Items"}),
        mcp(items, "datasetProfile", {"timestampMillis": T0, "rowCount": 5, "columnCount": 2})], "cli-shop")
    ingested(datahub, path)
    client = lodestar.client()
    await_(lambda: len(run_rows(lodestar, "cli-shop")) == 5, "the queued batch applied (2 keys, 3 aspects)")
    aspects = entity(client, orders)
    assert aspects["datasetProperties"]["value"]["customProperties"] == {"team": "sales"}
    assert aspects["globalTags"]["systemMetadata"]["runId"] == "cli-shop"
    indexed(client)
    assert {orders, items} <= searched(client, "cli")
    assert [p["rowCount"] for p in points(client, items, "datasetProfile")] == [5]
    request = "urn:li:dataHubExecutionRequest:cli-shop"  # the run's summary, which every `datahub ingest` sends
    await_(lambda: "dataHubExecutionRequestResult" in (entity(client, request) or {}), "the run summary written")
    assert entity(client, request)["dataHubExecutionRequestResult"]["value"]["status"] == "SUCCESS"


def test_ingest_of_a_batch_lodestar_refuses_fails_and_writes_none_of_it(datahub, lodestar, tmp_path, emitter):
    good = make_dataset_urn("hive", "cli.refused_good")
    path = recipe(tmp_path, "bad", [mcp(good, "datasetProperties", {"description": "fine"}),
                                    mcp("urn:li:corpuser:cli", "datasetProperties", {"description": "wrong"})],
                  "cli-bad")
    done = datahub("ingest", "-c", str(path))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"Pipeline finished with at least \d+ failures", out) and "finished successfully" not in out
    assert "aspect 'datasetProperties' does not belong to entity 'corpuser'" in out
    marker = make_dataset_urn("hive", "cli.refused_marker")  # queued after: once applied, the batch was not
    emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=marker, aspect=EditableDatasetPropertiesClass(
        description="marker")), emit_mode=EmitMode.ASYNC)
    client = lodestar.client()
    await_(lambda: entity(client, marker), "the marker applied")
    assert entity(client, good) is None and run_rows(lodestar, "cli-bad") == []


def json_schema(folder: Path, title: str, **fields: str) -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": title, "type": "object",
              "properties": {name: {"type": kind} for name, kind in fields.items()}}
    (folder / f"{title}.json").write_text(json.dumps(schema))


def test_stateful_ingestion_soft_deletes_what_a_later_run_no_longer_finds(datahub, lodestar, tmp_path):
    folder = tmp_path / "schemas"
    folder.mkdir()
    json_schema(folder, "stateful_orders", id="integer", amount="number")
    json_schema(folder, "stateful_items", sku="string")
    path = tmp_path / "stateful.yml"
    path.write_text(f"pipeline_name: cli-stateful\nsource:\n  type: json-schema\n  config:\n    path: {folder}\n"
                    "    platform: schemaregistry\n"
                    "    stateful_ingestion: {enabled: true, remove_stale_metadata: true}\n")
    orders, items = (make_dataset_urn("schemaregistry", name) for name in ("stateful_orders", "stateful_items"))
    job = make_data_job_urn("datahub", "cli-stateful", "schemaregistry_stale_entity_removal")
    client = lodestar.client()

    ingested(datahub, path)
    await_(lambda: all(entity(client, urn) and "schemaMetadata" in entity(client, urn) for urn in (orders, items)),
           "the first run's datasets applied")
    indexed(client)  # the checkpoint is a timeseries point: the next run reads it from the read model
    assert len(points(client, job, "datahubIngestionCheckpoint")) == 1
    kept_before = entity(client, orders)

    (folder / "stateful_items.json").unlink()
    out = ingested(datahub, path)
    assert f"Soft-deleting stale entity - {items}" in out, out
    await_(lambda: entity(client, items)["status"]["value"] == {"removed": True}, "the stale dataset soft-deleted")
    stale = entity(client, items)
    assert stale["status"]["version"] == 2 and stale["schemaMetadata"]["version"] == 1  # only hidden, kept
    kept = entity(client, orders)
    assert {name: a["version"] for name, a in kept.items()} == {name: a["version"] for name, a in kept_before.items()}
    assert kept["status"]["value"] == {"removed": False}
    indexed(client)
    assert len(points(client, job, "datahubIngestionCheckpoint")) == 2
    assert entity(client, job)["status"]["value"]["removed"] is True  # DataHub hides its checkpoint jobs
    assert searched(client, "stateful_orders stateful_items") & {orders, items} == {orders}
    assert items in searched(client, "stateful_items", include_removed=True)


def test_ingest_of_a_lineage_file_adds_to_the_upstreams_already_there(datahub, lodestar, emitter, tmp_path):
    report, clean, raw, old = (make_dataset_urn(*p) for p in (("hive", "cli.report"), ("hive", "cli.clean"),
                                                               ("mysql", "cli.raw", "DEV"), ("hive", "cli.old")))
    emitter.emit_mcp(wrapped(report, UpstreamLineageClass(upstreams=[UpstreamClass(old, "TRANSFORMED")])))
    entry = lambda name, platform, env="PROD": {"entity": {"name": name, "type": "dataset", "env": env,  # noqa: E731
                                                           "platform": platform}}
    fine = {"upstreamType": "FIELD_SET", "upstreams": [make_schema_field_urn(clean, "id")],
            "downstreamType": "FIELD", "downstreams": [make_schema_field_urn(report, "id")],
            "transformOperation": "COPY"}
    lineage = tmp_path / "lineage.yml"
    lineage.write_text(json.dumps({"version": 1, "lineage": [{**entry("cli.report", "hive"), "upstream": [
        entry("cli.clean", "hive"), entry("cli.raw", "mysql", "DEV")], "fineGrainedLineages": [fine]}]}))
    path = tmp_path / "lineage-recipe.yml"
    path.write_text(f"source:\n  type: datahub-lineage-file\n  config:\n    file: {lineage}\n")  # preserve_upstream
    ingested(datahub, path)
    client = lodestar.client()
    await_(lambda: len(entity(client, report)["upstreamLineage"]["value"]["upstreams"]) == 3, "the file's upstreams")
    value = entity(client, report)["upstreamLineage"]["value"]
    assert [u["dataset"] for u in value["upstreams"]] == [old, clean, raw]  # read first, then added to
    assert value["fineGrainedLineages"][0]["upstreams"] == [make_schema_field_urn(clean, "id")]
    indexed(client)
    found = client.call("GET", f"/v1/lineage?urn={datahub_clients.path_of(report)}&direction=upstream")
    assert {n["urn"] for n in found["nodes"]} == {report, old, clean, raw}


def test_delete_by_filter_from_a_file_recursively_and_undone(datahub, lodestar, emitter, tmp_path):
    a, b = make_dataset_urn("hive", "clidel.a"), make_dataset_urn("hive", "clidel.b")
    dev, child = make_dataset_urn("mysql", "clidel.dev", "DEV"), make_dataset_urn("postgres", "clidel.child")
    box = "urn:li:container:clidel_box"
    emitter.emit_mcps([*(wrapped(u, DatasetPropertiesClass(description="d")) for u in (a, b, dev)),
                       wrapped(child, ContainerClass(container=box)),
                       wrapped(box, ContainerPropertiesClass(name="box"))])
    client = lodestar.client()
    removed = lambda urn: (entity(client, urn) or {}).get("status", {}).get("value") == {"removed": True}  # noqa: E731
    indexed(client)

    out = datahub.ok("delete", "--platform", "hive", "--query", "clidel", "--dry-run", "-f")
    assert "Would delete 2 entities" in out and not removed(a) and not removed(b)
    out = datahub.ok("delete", "--platform", "hive", "--query", "clidel", "-f")  # soft by default
    assert "Soft deleted 2 entities" in out and removed(a) and removed(b) and not removed(dev)
    indexed(client)
    out = datahub.ok("delete", "undo-by-filter", "--platform", "hive", "-f")
    assert not removed(a) and not removed(b)
    indexed(client)
    assert {a, b} <= searched(client, "clidel")

    (tmp_path / "urns.txt").write_text(f"{a}\n")
    assert "Soft deleted 1 entities" in datahub.ok("delete", "--urn-file", str(tmp_path / "urns.txt"), "-f")
    indexed(client)
    out = datahub.ok("delete", "--platform", "hive", "--query", "clidel", "--only-soft-deleted", "--hard", "-f")
    assert "Hard deleted 1 entities" in out
    assert entity(client, a) is None and entity(client, b)["datasetProperties"]["value"]["description"] == "d"

    out = datahub.ok("delete", "--entity-type", "dataset", "--env", "DEV", "--query", "clidel", "--hard", "-f")
    assert "Hard deleted 1 entities" in out and entity(client, dev) is None

    out = datahub.ok("delete", "--urn", box, "--recursive", "-f")
    assert "Soft deleted 2 entities" in out and removed(box) and removed(child)


def test_delete_by_registry_is_refused_with_the_reason(datahub):
    done = datahub("delete", "by-registry", "--registry-id", "mycompany-model:0.0.1", "--hard", "--dry-run")
    out = done.stdout + done.stderr
    assert "Failed to execute operation" in out and "Traceback" not in out, out  # the CLI itself exits 0
    assert "deleteAll (datahub delete by-registry): Lodestar has no model registries" in out, out


def test_delete_soft_hard_and_a_timeseries_window(datahub, lodestar, emitter):
    soft, hard, profiled = (make_dataset_urn("hive", f"cli.{name}") for name in ("soft", "hard", "profiled"))
    emitter.emit_mcps([
        wrapped(soft, DatasetPropertiesClass(description="soft")),
        wrapped(hard, DatasetPropertiesClass(description="h")),
        *[wrapped(profiled, DatasetProfileClass(timestampMillis=T0 + d * DAY, rowCount=d, columnCount=1))
          for d in range(4)]])
    client = lodestar.client()
    indexed(client)
    assert len(points(client, profiled, "datasetProfile")) == 4

    out = datahub.ok("delete", "--urn", soft, "-f")
    assert "Soft deleted 1" in out
    indexed(client)
    assert entity(client, soft)["status"]["value"] == {"removed": True} and soft not in searched(client, "cli.soft")

    out = datahub.ok("delete", "--urn", hard, "--hard", "-f")
    assert re.search(r"Hard deleted 1 entities \(impacts 2 versioned rows and 0 timeseries", out), out
    assert entity(client, hard) is None

    out = datahub.ok("delete", "--urn", profiled, "--aspect", "datasetProfile", "--hard", "-f",
                     "--start-time", "2023-11-15 22:13:20", "--end-time", "2023-11-16 22:13:20")
    assert "impacts 0 versioned rows and 2 timeseries aspect rows" in out, out
    assert [p["rowCount"] for p in points(client, profiled, "datasetProfile")] == [0, 3]


def test_put_with_a_datahubenv_file(datahub, lodestar, tmp_path):
    urn = make_dataset_urn("hive", "cli.put")
    env = {k: v for k, v in datahub.env.items() if k not in ("DATAHUB_GMS_URL", "DATAHUB_GMS_TOKEN")}
    (Path(env["HOME"]) / ".datahubenv").write_text(f"gms:\n  server: {lodestar.url}\n  token: {TOKEN}\n")
    value = tmp_path / "editable.json"
    value.write_text(json.dumps({"description": "put by the CLI"}))
    out = DatahubCli(env, tmp_path).ok("put", "--urn", urn, "--aspect", "editableDatasetProperties", "-d", str(value))
    assert "Update succeeded" in out
    assert entity(lodestar.client(), urn)["editableDatasetProperties"]["value"] == {"description": "put by the CLI"}


def test_list_runs_show_and_rollback(datahub, lodestar, emitter):
    kept, created, shared = (make_dataset_urn("hive", f"cli.{name}") for name in ("kept", "created", "shared"))
    emitter.emit_mcp(wrapped(kept, DatasetPropertiesClass(description="v1"), "cli-run1"))
    emitter.emit_mcps([wrapped(kept, DatasetPropertiesClass(description="v2"), "cli-run2"),
                       wrapped(created, DatasetPropertiesClass(description="c"), "cli-run2"),
                       wrapped(shared, DatasetPropertiesClass(description="s"), "cli-run2")])
    emitter.emit_mcp(wrapped(shared, EditableDatasetPropertiesClass(description="written by no run")))

    listed = datahub.ok("ingest", "list-runs")
    assert "cli-run1" in listed and "cli-run2" in listed
    assert re.search(r"cli-run2\s*\|\s*5\s*\|", listed), listed
    shown = datahub.ok("ingest", "show", "--run-id", "cli-run2")
    assert shown.count("cli.created") == 2 and shown.count("cli.kept") == 1  # key and properties; properties

    dry = datahub.ok("ingest", "rollback", "--run-id", "cli-run2", "--dry-run")
    assert "will delete 1 entities" in dry
    assert entity(lodestar.client(), created) is not None  # a dry run changes nothing

    out = datahub.ok("ingest", "rollback", "--run-id", "cli-run2", "-f", "--report-dir", str(datahub.cwd / "reports"))
    assert "deleted 1 entities and rolled back 5 aspects" in out, out
    assert "has hidden 1 aspects related to 1 entities" in out, out
    client = lodestar.client()
    properties = entity(client, kept)["datasetProperties"]
    assert properties["value"]["description"] == "v1" and properties["version"] == 3  # v1 written again
    assert properties["systemMetadata"]["runId"] == "cli-run1"
    assert entity(client, created) is None  # created by the run alone: deleted
    aspects = entity(client, shared)  # created by the run, written to by another: hidden, the other's aspect kept
    assert aspects["status"]["value"] == {"removed": True} and "datasetProperties" not in aspects
    assert aspects["editableDatasetProperties"]["value"]["description"] == "written by no run"
    indexed(client)
    assert searched(client, "cli.created cli.shared") & {created, shared} == set()
    runs = client.call("POST", "/runs?action=list", {"pageSize": 100})["value"]
    assert "cli-run2" not in {run["runId"] for run in runs} and "cli-run1" in {run["runId"] for run in runs}


def test_queued_proposals_failing_when_applied_are_listed_and_counted(emitter, lodestar):
    urn = make_dataset_urn("hive", "cli.created_twice")

    def failed_count() -> float:
        text = requests.get(f"{lodestar.url}/metrics", timeout=30).text
        return sum(float(v) for v in re.findall(r'^lodestar_failed_proposals_total\{[^}]*\} (\S+)$', text, re.M))

    before = failed_count()
    create = MetadataChangeProposalWrapper(entityUrn=urn, changeType=ChangeTypeClass.CREATE,
                                           aspect=EditableDatasetPropertiesClass(description="first"))
    emitter.emit_mcp(create, emit_mode=EmitMode.ASYNC)
    emitter.emit_mcp(create, emit_mode=EmitMode.ASYNC)  # accepted (valid), then refused: it exists
    await_(lambda: failed_count() == before + 1, "the second CREATE counted as failed")
    listed = run_cli("failed", "--data-dir", str(lodestar.data_dir))
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if urn in line)
    assert "FailedMetadataChangeProposal_v1/" in line and "editableDatasetProperties: aspect_exists: CREATE" in line
    entries = [json.loads(line) for line in run_cli("failed", "--json", "--data-dir", str(lodestar.data_dir))
               .stdout.splitlines()]
    (mine,) = [e for e in entries if e["urn"] == urn]
    assert mine["aspect"] == "editableDatasetProperties" and mine["reason"].startswith("aspect_exists:")
    assert isinstance(mine["offset"], int) and mine["topic"] == "FailedMetadataChangeProposal_v1"
