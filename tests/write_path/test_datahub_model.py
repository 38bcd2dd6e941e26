"""DataHub's whole model, read from the pinned acryl-datahub package: every entity type and aspect
is known, and proposals built with DataHub's own classes for aspects Lodestar never had by hand
are accepted, validated, versioned (timeseries ones go to the timeseries store) and read back."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AuditStampClass,
    BrowsePathEntryClass,
    BrowsePathsV2Class,
    CalendarIntervalClass,
    ChangeAuditStampsClass,
    ChartInfoClass,
    CorpGroupInfoClass,
    DashboardInfoClass,
    DataPlatformInstanceClass,
    DatasetUsageStatisticsClass,
    DomainsClass,
    EditableSchemaFieldInfoClass,
    EditableSchemaMetadataClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    InstitutionalMemoryClass,
    InstitutionalMemoryMetadataClass,
    MLModelPropertiesClass,
    OperationClass,
    OperationTypeClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    TagAssociationClass,
    TimeWindowSizeClass,
)

import schemas.datahub_model as datahub_model
from gms.aspect_mutations import MUTATIONS
from gms.service import Gms
from ingest.proposal import parse_proposal
from schemas.datahub_model import PEGASUS, load_model, schema_directory
from schemas.jsonform import compile_validator
from schemas.registry import SCHEMA_DIR, EntityRegistry, RegistryError, load_named_types, load_registry
from tests.support.builders import dataset_urn, proposal

ROOT = Path(__file__).resolve().parents[2]
ACTOR = "urn:li:corpuser:tester"
ORDERS = dataset_urn("shop.orders")
GROUP = "urn:li:corpGroup:data-eng"
TERM = "urn:li:glossaryTerm:revenue"
CHART = "urn:li:chart:(looker,orders_by_day)"
DASHBOARD = "urn:li:dashboard:(looker,sales)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,churn,PROD)"
STAMP = AuditStampClass(time=1_700_000_000_000, actor="urn:li:corpuser:etl")


def package_aspects() -> dict[str, dict]:
    """Every aspect schema of the installed package, read here independently of the registry."""
    out = {}
    for path in schema_directory().glob("*.avsc"):
        raw = json.loads(path.read_text())
        if isinstance(raw, dict) and "Aspect" in raw:
            out[raw["Aspect"]["name"]] = raw
    return out


def sdk(urn: str, aspect) -> dict:
    """The MCP DataHub's SDK sends for an aspect (REST JSON form)."""
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect).to_obj()


def apply(gms: Gms, *mcps: dict) -> None:
    results = gms.apply([parse_proposal(m) for m in mcps], ACTOR)
    assert [r.failure for r in results] == [None] * len(mcps), [r.to_json() for r in results]


def test_pyproject_pins_the_installed_release():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = [d for d in dependencies if d.replace(" ", "").startswith("acryl-datahub==")]
    assert len(pinned) == 1, "acryl-datahub must be pinned exactly (==) among the runtime dependencies"
    release = pinned[0].replace(" ", "").removeprefix("acryl-datahub==")
    assert version("acryl-datahub") == release, f"reinstall: pip install -e . (pinned {release})"
    assert datahub_model.pinned_requirement() == f"acryl-datahub=={release}"


def test_every_entity_type_and_aspect_of_the_package_is_in_the_registry(registry: EntityRegistry):
    aspects = package_aspects()
    keys = {a["Aspect"]["keyForEntity"]: a["Aspect"] for a in aspects.values() if "keyForEntity" in a["Aspect"]}
    assert len(keys) >= 72 and len(aspects) >= 270  # acryl-datahub 1.7.0.17: 72 entity types, 271 aspects
    for entity, info in keys.items():
        spec = registry.entity(entity)
        assert spec is not None, entity
        assert spec.key_aspect == info["name"] and spec.aspects[0] == info["name"]
        assert set(info["entityAspects"]) <= set(spec.aspects), entity
        assert spec.category == info["entityCategory"]
    for name, schema in aspects.items():
        spec = registry.aspect(name)
        assert spec is not None and spec.origin == "datahub", name
        assert spec.is_timeseries == (schema["Aspect"].get("type") == "timeseries"), name
        assert spec.schema_name == f"{schema['namespace']}.{schema['name']}".replace(PEGASUS, "com.linkedin.")
    for timeseries in ("datasetProfile", "datasetUsageStatistics", "operation", "chartUsageStatistics",
                       "dataProcessInstanceRunEvent"):
        assert registry.aspect(timeseries).is_timeseries
    assert registry.datahub is not None and registry.datahub.version == version("acryl-datahub")


def test_lodestars_part_combines_with_datahubs(registry: EntityRegistry):
    dataset = registry.entity("dataset").aspects
    assert dataset[-2:] == ("userScopeMetadata", "systemScopeMetadata")  # Lodestar's, after DataHub's own
    assert {"fieldOperations", "dataProcessInstanceAccesses"} <= set(registry.entity("dataProcessInstance").aspects)
    assert registry.entity("customEntity").category == "lodestar"
    assert registry.aspect("userScopeMetadata").origin == "lodestar"
    assert registry.aspect("webhookDeadLetter").is_timeseries
    # Lodestar's annotations on DataHub's types (entity-registry.yml, datahub.annotations)
    assert registry.named_types["com.linkedin.dataset.FineGrainedLineage"]["FineGrainedLineage"] is True
    inputs = next(f for f in registry.named_types["com.linkedin.dataprocess.DataProcessInstanceInput"]["fields"]
                  if f["name"] == "inputs")
    assert inputs["RunLineage"] == "read" and inputs["Relationship"]["/*"]["isLineage"] is True
    assert inputs["Relationship"]["/*"]["name"] == "Consumes"  # DataHub's keys stay
    # DataHub's URN classes read as entity types
    owner = next(f for f in registry.named_types["com.linkedin.common.TagAssociation"]["fields"] if f["name"] == "tag")
    assert owner["Urn"] == ["tag"]


def test_annotations_for_a_type_the_package_lacks_fail_the_load(tmp_path):
    bad = tmp_path / "registry.yml"
    bad.write_text("datahub:\n  annotations:\n    com.linkedin.nowhere.Gone: {FineGrainedLineage: true}\n")
    with pytest.raises(RegistryError, match=r"com\.linkedin\.nowhere\.Gone: DataHub's schemas define no such type"):
        load_registry(bad)
    field = tmp_path / "field.yml"
    field.write_text("datahub:\n  annotations:\n    com.linkedin.common.Status:\n      fields:\n"
                     "        gone: {RunLineage: read}\n")
    with pytest.raises(RegistryError, match=r"com\.linkedin\.common\.Status\.gone"):
        load_registry(field)


def test_a_missing_package_is_a_clear_error_naming_the_install_command(monkeypatch):
    monkeypatch.setattr(datahub_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RegistryError, match=r"pip install 'acryl-datahub==[0-9.]+'"):
        load_registry()


def test_reading_the_model_runs_none_of_datahubs_python_code():
    code = ("import sys; from schemas.registry import default_registry; default_registry();"
            "print(sorted(m for m in sys.modules if m == 'datahub' or m.startswith('datahub.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_aspect_schema_compiles_to_a_validator(registry: EntityRegistry):
    for name, spec in registry.aspects.items():
        compile_validator(spec.schema, registry.named_types)  # raises on a type it cannot resolve
        assert callable(spec.check), name


def test_lodestars_event_types_agree_with_the_package_where_aspects_use_them(registry: EntityRegistry):
    """Lodestar's event envelopes keep their own files; a type DataHub's aspects share with them
    (AuditStamp) must have DataHub's shape, since Lodestar's file is the one used."""
    own, datahub = load_named_types(SCHEMA_DIR), load_model().named
    shared = sorted(set(own) & set(datahub))
    assert "com.linkedin.common.AuditStamp" in shared
    for name in shared:
        mine, theirs = own[name], datahub[name]
        assert registry.named_types[name] == mine
        if mine["type"] == "enum":
            assert mine["symbols"] == theirs["symbols"], name
        elif name != "com.linkedin.mxe.SystemMetadata":  # an event envelope: no aspect uses it
            shape = [(f["name"], f["type"]) for f in mine["fields"]]
            assert shape == [(f["name"], f["type"]) for f in theirs["fields"]], name


def test_a_registry_loads_from_a_given_schema_folder(tmp_path):
    """Upgrading is the pin plus a test run; the loader takes any folder of DataHub's schemas."""
    folder = tmp_path / "schemas"
    folder.mkdir()
    for name in ("DatasetKey.avsc", "Status.avsc", "MetadataChangeEvent.avsc"):
        (folder / name).write_text((schema_directory() / name).read_text())
    model = load_model(folder)
    assert set(model.entities) == {"dataset"} and set(model.aspects) == {"datasetKey", "status"}
    assert model.aspects["status"] == "com.linkedin.common.Status"
    assert model.named["com.linkedin.metadata.key.DatasetKey"]["Aspect"]["keyForEntity"] == "dataset"


def test_proposals_built_with_datahubs_classes_are_accepted_versioned_and_read_back(gms: Gms):
    term_info = GlossaryTermInfoClass(definition="Money earned from orders", termSource="INTERNAL", name="Revenue")
    mcps = [
        sdk(ORDERS, OwnershipClass(owners=[OwnerClass(owner=GROUP, type=OwnershipTypeClass.DATAOWNER)])),
        sdk(GROUP, CorpGroupInfoClass(displayName="Data engineering", admins=[], members=[], groups=[])),
        sdk(TERM, term_info),
        sdk(CHART, ChartInfoClass(title="Orders by day", description="Daily orders",
                                  lastModified=ChangeAuditStampsClass())),
        sdk(DASHBOARD, DashboardInfoClass(title="Sales", description="Sales overview", charts=[CHART],
                                          lastModified=ChangeAuditStampsClass())),
        sdk(MODEL, MLModelPropertiesClass(name="churn", description="Who leaves next month")),
        sdk(ORDERS, BrowsePathsV2Class(path=[BrowsePathEntryClass(id="warehouse"), BrowsePathEntryClass(id="shop")])),
        sdk(ORDERS, DataPlatformInstanceClass(platform="urn:li:dataPlatform:hive",
                                              instance="urn:li:dataPlatformInstance:(urn:li:dataPlatform:hive,eu)")),
        sdk(ORDERS, GlossaryTermsClass(terms=[GlossaryTermAssociationClass(urn=TERM)], auditStamp=STAMP)),
        sdk(ORDERS, EditableSchemaMetadataClass(editableSchemaFieldInfo=[EditableSchemaFieldInfoClass(
            fieldPath="customer", description="who ordered",
            globalTags=GlobalTagsClass(tags=[TagAssociationClass(tag="urn:li:tag:pii")]))])),
        sdk(ORDERS, InstitutionalMemoryClass(elements=[InstitutionalMemoryMetadataClass(
            url="https://wiki.example/orders", description="Runbook", createStamp=STAMP)])),
        sdk(ORDERS, DomainsClass(domains=["urn:li:domain:sales"])),
    ]
    apply(gms, *mcps)
    for mcp in mcps:
        history = gms.store.history(mcp["entityUrn"], mcp["aspectName"])
        assert [h.version for h in history] == [1], mcp["aspectName"]
        derived = MUTATIONS.get(mcp["aspectName"], lambda value: value)  # ownership.ownerTypes filled in
        assert history[0].value == derived(json.loads(mcp["aspect"]["value"])), mcp["aspectName"]
    for urn, key in ((GROUP, "corpGroupKey"), (TERM, "glossaryTermKey"), (CHART, "chartKey"),
                     (DASHBOARD, "dashboardKey"), (MODEL, "mlModelKey")):
        assert {row.aspect for row in gms.store.entity(urn)} >= {key}, urn  # a new entity gets its key aspect
    assert gms.store.history(MODEL, "mlModelKey")[0].value == {
        "platform": "urn:li:dataPlatform:sagemaker", "name": "churn", "origin": "PROD"}

    term_info.definition = "Money earned from paid orders"
    apply(gms, sdk(TERM, term_info))
    assert [h.value["definition"] for h in gms.store.history(TERM, "glossaryTermInfo")] == [
        "Money earned from orders", "Money earned from paid orders"]


def test_datahubs_schemas_reject_what_datahub_would(gms: Gms):
    bad = [
        proposal(ORDERS, "ownership", {"owners": [{"owner": "not a urn", "type": "DATAOWNER"}]}),
        proposal(CHART, "chartInfo", {"title": "no lastModified", "description": ""}),
        proposal(ORDERS, "glossaryTerms", {"terms": [{"urn": "urn:li:tag:pii"}], "auditStamp": {
            "time": 0, "actor": "urn:li:corpuser:x"}}),
        proposal(ORDERS, "chartInfo", {"title": "t", "description": "", "lastModified": {}}),
        proposal("urn:li:mlModel:(urn:li:dataPlatform:sagemaker,churn)", "status", {"removed": False}),
    ]
    messages = [r.failure.message for r in gms.apply(bad, ACTOR)]
    assert "field 'owners[0].owner': malformed URN" in messages[0]
    assert "field 'lastModified': required field is missing" in messages[1]
    assert "field 'terms[0].urn': URN 'urn:li:tag:pii' is a tag, expected glossaryTerm" in messages[2]
    assert "does not belong to entity 'dataset'" in messages[3]
    assert "a mlModel URN has 3 part(s)" in messages[4]


def test_timeseries_aspects_of_datahub_go_to_the_timeseries_store_not_versions(tmp_path):
    from tests.support.indexed import Indexed

    harness = Indexed(tmp_path / "data")
    operation = OperationClass(timestampMillis=1_700_000_000_000, operationType=OperationTypeClass.INSERT,
                               lastUpdatedTimestamp=1_699_999_990_000, numAffectedRows=42)
    usage = DatasetUsageStatisticsClass(timestampMillis=1_700_000_000_000, uniqueUserCount=3, totalSqlQueries=10,
                                        eventGranularity=TimeWindowSizeClass(unit=CalendarIntervalClass.DAY))
    harness.write(*(parse_proposal(sdk(ORDERS, aspect)) for aspect in (operation, usage)))
    for aspect in ("operation", "datasetUsageStatistics"):
        assert harness.gms.store.history(ORDERS, aspect) == []
    [point] = harness.models.timeseries.query(ORDERS, "operation")
    assert point["operationType"] == "INSERT" and point["numAffectedRows"] == 42
    assert harness.models.timeseries.query(ORDERS, "datasetUsageStatistics")[0]["uniqueUserCount"] == 3
    harness.close()
