"""CDAP-shaped entities for the metadata tests: datasets with schemas, applications, programs."""

from __future__ import annotations

from typing import Any

from tests.support.builders import mcp

CDAP = "urn:li:dataPlatform:cdap"


def cdap_dataset(ns: str, name: str) -> str:
    return f"urn:li:dataset:({CDAP},{ns}.{name},PROD)"


def schema(*fields: tuple[str, str]) -> dict[str, Any]:
    return {"schemaName": "s", "platform": CDAP, "version": 0, "hash": "",
            "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": "{}"}},
            "fields": [{"fieldPath": name, "nativeDataType": native,
                        "type": {"type": {"com.linkedin.schema.StringType": {}}}} for name, native in fields]}


def dataset_mcps(ns: str, name: str, description: str = "", fields: tuple[tuple[str, str], ...] = (),
                 sub_type: str = "Dataset", **custom: str) -> list[dict[str, Any]]:
    urn = cdap_dataset(ns, name)
    out = [mcp(urn, "datasetProperties", {"name": name, "description": description, "customProperties": custom}),
           mcp(urn, "subTypes", {"typeNames": [sub_type]})]
    if fields:
        out.append(mcp(urn, "schemaMetadata", schema(*fields)))
    return out


def app_mcps(ns: str, app: str, version: str | None = None, programs: dict[str, str] | None = None
             ) -> list[dict[str, Any]]:
    flow = f"urn:li:dataFlow:(cdap,{app}@{version},{ns})" if version else f"urn:li:dataFlow:(cdap,{app},{ns})"
    out = [mcp(flow, "dataFlowInfo", {"name": app})]
    for program, kind in (programs or {}).items():
        out.append(mcp(f"urn:li:dataJob:({flow},{program})", "dataJobInfo",
                       {"name": program, "type": {"string": kind}}))
    return out
