"""Datasets as DataHub's own SDK and file sink write them: the realistic generator's datasets
(bench/datasets.py: properties, a 20-field schema, tags, two upstreams), built with the pinned
acryl-datahub's aspect classes, so every default field is there, with fine-grained lineage
from the first upstream to five of the fields, then written by `write_metadata_file` (as
`datahub`'s file sink writes; `datahub lite import --file` reads it). About 2 KB per MCP."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datahub.metadata.schema_classes as dh
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.sink.file import write_metadata_file

from bench.datasets import dataset_mcps

_TYPES = {"com.linkedin.schema.StringType": dh.StringTypeClass, "com.linkedin.schema.NumberType": dh.NumberTypeClass,
          "com.linkedin.schema.BooleanType": dh.BooleanTypeClass, "com.linkedin.schema.DateType": dh.DateTypeClass,
          "com.linkedin.schema.TimeType": dh.TimeTypeClass}
FINE_GRAINED_FIELDS = 5  # of the 20
_AUDIT = dh.AuditStampClass(time=1700000000000, actor="urn:li:corpuser:etl")


def _aspects(mcps: list[dict[str, Any]]) -> Iterator[dh._Aspect]:
    """The generated dataset's four aspects as DataHub's classes, fine-grained lineage added."""
    urn = mcps[0]["entityUrn"]
    value = {mcp["aspectName"]: mcp["aspect"]["json"] for mcp in mcps}
    properties = value["datasetProperties"]
    yield dh.DatasetPropertiesClass(name=properties["name"], description=properties["description"],
                                    customProperties=properties["customProperties"])
    schema = value["schemaMetadata"]
    fields = [dh.SchemaFieldClass(
        fieldPath=f["fieldPath"], nativeDataType=f["nativeDataType"], nullable=f["nullable"],
        description=f["description"], type=dh.SchemaFieldDataTypeClass(_TYPES[next(iter(f["type"]["type"]))]()))
        for f in schema["fields"]]
    yield dh.SchemaMetadataClass(schemaName=schema["schemaName"], platform=schema["platform"], version=0, hash="",
                                 platformSchema=dh.OtherSchemaClass(rawSchema=""), fields=fields)
    yield dh.GlobalTagsClass(tags=[dh.TagAssociationClass(tag["tag"]) for tag in value["globalTags"]["tags"]])
    upstreams = [up["dataset"] for up in value["upstreamLineage"]["upstreams"]]
    yield dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=up, type=dh.DatasetLineageTypeClass.TRANSFORMED, auditStamp=_AUDIT)
                   for up in upstreams],
        fineGrainedLineages=[dh.FineGrainedLineageClass(
            upstreamType=dh.FineGrainedLineageUpstreamTypeClass.FIELD_SET,
            upstreams=[make_schema_field_urn(upstreams[0], field.fieldPath)],
            downstreamType=dh.FineGrainedLineageDownstreamTypeClass.FIELD,
            downstreams=[make_schema_field_urn(urn, field.fieldPath)], transformOperation="IDENTITY")
            for field in fields[:FINE_GRAINED_FIELDS]])


def datahub_file_mcps(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """`count` MCPs (a multiple of four) as DataHub's file sink writes them, read back."""
    rng = random.Random(seed)
    wrappers = []
    for i in range(count // 4):
        mcps = dataset_mcps(i, rng)
        wrappers += [MetadataChangeProposalWrapper(entityUrn=mcps[0]["entityUrn"], aspect=aspect)
                     for aspect in _aspects(mcps)]
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "mcps.json"
        write_metadata_file(file, wrappers)
        return json.loads(file.read_text())
