"""DataHub's `datahub` CLI, unmodified, reading from a real `lodestar serve`: `datahub get`,
`datahub exists`, `datahub timeline`, and `datahub ingest` of the csv-enricher in PATCH mode
(which reads each aspect before it writes, so it must find what is stored to keep it).

The CLI runs as a subprocess with a home of its own (`~/.datahubenv` never read from the
user's), the server in DATAHUB_GMS_URL and the token in DATAHUB_GMS_TOKEN. Results are checked
through Lodestar's own API too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import DatahubRestEmitter
from datahub.metadata.schema_classes import (
    DatasetProfileClass,
    DatasetPropertiesClass,
    GlobalTagsClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    StatusClass,
    TagAssociationClass,
)

from tests.support.builders import dataset_urn
from tests.support.datahub_clients import datahub_cli, entity
from tests.support.processes import TOKEN, ServeProcess

ORDERS = dataset_urn("shop.orders")
INVOICES = dataset_urn("shop.invoices")
MISSING = dataset_urn("shop.nothing_here")
PARKED = dataset_urn("shop.parked")


def tags(*names: str) -> GlobalTagsClass:
    return GlobalTagsClass(tags=[TagAssociationClass(tag=f"urn:li:tag:{name}") for name in names])


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    with ServeProcess(tmp_path_factory.mktemp("datahub-cli") / "data") as running:
        emitter = DatahubRestEmitter(running.url, token=TOKEN)
        for urn, aspect in ((ORDERS, DatasetPropertiesClass(description="All orders", customProperties={"team": "s"})),
                            (ORDERS, tags("sales")), (ORDERS, tags("sales", "gold")),
                            (ORDERS, OwnershipClass(owners=[OwnerClass("urn:li:corpuser:jdoe",
                                                                       OwnershipTypeClass.DATAOWNER)])),
                            (INVOICES, tags("sales", "gold")), (INVOICES, StatusClass(removed=False)),
                            (PARKED, tags("retired", "sales")),
                            (ORDERS, DatasetProfileClass(timestampMillis=1000, rowCount=10)),
                            (ORDERS, DatasetProfileClass(timestampMillis=2000, rowCount=25))):
            emitter.emit_mcp(MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect))
        emitter.close()
        indexed = running.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
        assert indexed["indexed"], "the MCL processor did not index the profiles"
        yield running


def datahub(serve: ServeProcess, home: Path, *args: str) -> subprocess.CompletedProcess:
    return datahub_cli(serve.url, home)(*args)


def stored(serve: ServeProcess, urn: str) -> dict[str, Any] | None:
    """The entity's latest aspect values through Lodestar's own API (None: not found)."""
    aspects = entity(serve.client(), urn)
    return None if aspects is None else {name: aspect["value"] for name, aspect in aspects.items()}


def test_datahub_get_prints_the_latest_aspects(serve, tmp_path):
    done = datahub(serve, tmp_path, "get", "--urn", ORDERS)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = json.loads(done.stdout)
    assert printed == stored(serve, ORDERS)
    assert printed["globalTags"] == {"tags": [{"tag": "urn:li:tag:sales"}, {"tag": "urn:li:tag:gold"}]}
    assert printed["datasetProperties"]["description"] == "All orders"
    assert printed["datasetKey"] == {"platform": "urn:li:dataPlatform:hive", "name": "shop.orders", "origin": "PROD"}


def test_datahub_get_one_aspect_and_its_details(serve, tmp_path):
    done = datahub(serve, tmp_path, "get", "--urn", ORDERS, "-a", "ownership", "--details")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = json.loads(done.stdout)
    assert set(printed) == {"ownership"}
    assert printed["ownership"]["value"]["owners"][0]["owner"] == "urn:li:corpuser:jdoe"
    assert printed["ownership"]["systemMetadata"]["version"] == "1"
    assert printed["ownership"]["created"]["actor"] == "urn:li:corpuser:admin"


def test_datahub_get_of_a_timeseries_aspect_prints_its_latest_point(serve, tmp_path):
    done = datahub(serve, tmp_path, "get", "--urn", ORDERS, "-a", "datasetProfile", "-a", "globalTags")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = json.loads(done.stdout)
    assert printed["datasetProfile"]["timestampMillis"] == 2000 and printed["datasetProfile"]["rowCount"] == 25
    assert len(printed["globalTags"]["tags"]) == 2


def test_datahub_get_of_a_missing_entity_says_not_found(serve, tmp_path):
    done = datahub(serve, tmp_path, "get", "--urn", MISSING)
    assert done.returncode != 0
    assert f"urn {MISSING} not found" in done.stdout + done.stderr


def test_datahub_exists(serve, tmp_path):
    assert datahub(serve, tmp_path, "exists", "--urn", ORDERS).stdout.strip() == "true"
    assert datahub(serve, tmp_path, "exists", "--urn", MISSING).stdout.strip() == "false"
    assert stored(serve, ORDERS) is not None and stored(serve, MISSING) is None


def test_datahub_timeline_lists_the_tag_changes(serve, tmp_path):
    done = datahub(serve, tmp_path, "timeline", "--urn", ORDERS, "--category", "TAG", "--category", "owner",
                   "--verbose")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout[done.stdout.index("["):])  # after the URL it echoes
    events = [(e["operation"], e["category"], e["modifier"]) for t in answer for e in t["changeEvents"]]
    assert events == [("ADD", "TAG", "urn:li:tag:sales"), ("ADD", "TAG", "urn:li:tag:gold"),
                      ("ADD", "OWNERSHIP", "urn:li:corpuser:jdoe")]
    assert [t["semVer"] for t in answer] == ["0.0.0-computed", "0.1.0-computed", "0.2.0-computed"]
    versions = serve.client().call("GET", f"/v1/entities/{quote(ORDERS, safe='')}/aspects/globalTags/versions")
    assert [[t["tag"] for t in v["value"]["tags"]] for v in versions["versions"]] == [
        ["urn:li:tag:sales"], ["urn:li:tag:sales", "urn:li:tag:gold"]]  # the changes the timeline lists
    shown = datahub(serve, tmp_path, "timeline", "--urn", ORDERS, "--category", "TAG")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.count("ADD TAG") == 2 and "Tag 'urn:li:tag:gold' added to" in shown.stdout


def test_csv_enricher_in_patch_mode_keeps_the_existing_tags(serve, tmp_path):
    csv = tmp_path / "enrich.csv"
    csv.write_text("resource,subresource,glossary_terms,tags,owners,ownership_type,description,domain\n"
                   f'"{INVOICES}",,,[urn:li:tag:billing],,,,\n')
    recipe = tmp_path / "recipe.yml"
    recipe.write_text(json.dumps({
        "source": {"type": "csv-enricher", "config": {"filename": str(csv), "write_semantics": "PATCH",
                                                      "delimiter": ",", "array_delimiter": "|"}},
        "sink": {"type": "datahub-rest", "config": {"server": serve.url, "token": TOKEN}}}))
    done = datahub(serve, tmp_path, "ingest", "-c", str(recipe))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stored = serve.client().call("GET", f"/v1/entities/{quote(INVOICES, safe='')}/aspects/globalTags")
    assert [t["tag"] for t in stored["value"]["tags"]] == ["urn:li:tag:sales", "urn:li:tag:gold", "urn:li:tag:billing"]
    assert stored["version"] == 2


def test_datahub_delete_references_lists_then_removes_them(serve, tmp_path):
    tag = "urn:li:tag:retired"
    listed = datahub(serve, tmp_path, "delete", "references", "--urn", tag, "--dry-run")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert f"Found 1 references to {tag}" in listed.stdout and PARKED in listed.stdout
    done = datahub(serve, tmp_path, "delete", "references", "--urn", tag, "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    stored = serve.client().call("GET", f"/v1/entities/{quote(PARKED, safe='')}/aspects/globalTags")
    assert [t["tag"] for t in stored["value"]["tags"]] == ["urn:li:tag:sales"]
