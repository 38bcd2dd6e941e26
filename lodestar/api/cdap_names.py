"""CDAP names for Lodestar URNs (examples/README.md): datasets and streams are
`urn:li:dataset:(urn:li:dataPlatform:cdap,<ns>.<name>,PROD)`, programs are dataJobs of the
dataFlow `(cdap,<app>,<ns>)`, runs are `urn:li:dataProcessInstance:<run id>`. A path segment
that is itself a dataset URN names that dataset, whatever its platform."""

from __future__ import annotations

from typing import Any

from gms.service import Gms
from schemas.urns import Urn, UrnError

CDAP_PLATFORM = "urn:li:dataPlatform:cdap"
EXTERNAL = "external"  # the orchestrator of the dataFlow of an external stream writer


def external_writer(namespace: str, source: str) -> str:
    """The dataJob standing for a source that writes streams of `namespace` from outside."""
    return f"urn:li:dataJob:(urn:li:dataFlow:({EXTERNAL},{source},{namespace}),{source})"


def dataset_urn(namespace: str, name: str) -> str:
    if name.startswith("urn:li:dataset:"):
        return name
    return f"urn:li:dataset:({CDAP_PLATFORM},{namespace}.{name},PROD)"


def endpoint(urn: str) -> dict[str, str]:
    """CDAP's endpoint {"namespace", "name"} of a dataset URN (the platform as namespace
    outside cdap), with the URN."""
    try:
        parsed = Urn.parse(urn)
    except UrnError:
        return {"namespace": "", "name": urn, "urn": urn}
    platform, name = parsed.parts[0], parsed.parts[1]
    if platform == CDAP_PLATFORM and "." in name:
        namespace, _, short = name.partition(".")
        return {"namespace": namespace, "name": short, "urn": urn}
    return {"namespace": platform.rpartition(":")[2], "name": name, "urn": urn}


def run_id(urn: str) -> str:
    return urn.removeprefix("urn:li:dataProcessInstance:")


def data_entry(gms: Gms, urn: str) -> tuple[str, dict[str, Any]]:
    """CDAP's key (`dataset.<ns>.<name>` or `stream.<ns>.<name>`) and entry for a dataset URN."""
    end = endpoint(urn)
    sub_types = gms.store.get(urn, "subTypes")
    kind = "stream" if sub_types is not None and "Stream" in (sub_types.value or {}).get("typeNames", []) \
        else "dataset"
    key = f"{kind}.{end['namespace']}.{end['name']}"
    return key, {"id": {"namespace": end["namespace"], "type": kind, "id": end["name"]}, "urn": urn}


def program_entry(gms: Gms, urn: str) -> tuple[str, dict[str, Any]]:
    """CDAP's key (`<type>.<ns>.<app>.<program>`, `external.<ns>.<source>` for a source that
    wrote a stream from outside) and entry for a dataJob URN."""
    try:
        job = Urn.parse(urn)
        flow = Urn.parse(job.parts[0])
        orchestrator, application, namespace = flow.parts
        program = job.parts[1]
    except (UrnError, ValueError, IndexError):
        return urn, {"id": {"urn": urn}, "urn": urn}
    if orchestrator == EXTERNAL:
        return f"external.{namespace}.{application}", {
            "id": {"namespace": namespace, "type": "external", "id": application}, "urn": urn}
    info = gms.store.get(urn, "dataJobInfo")
    kind = ((info.value or {}).get("type") if info is not None else None) or "program"
    if isinstance(kind, dict):
        kind = next(iter(kind.values()))
    kind = str(kind).lower()
    key = f"{kind}.{namespace}.{application}.{program}"
    return key, {"id": {"namespace": namespace, "application": application, "type": kind, "id": program}, "urn": urn}
