"""Reading proposal files: Lodestar's and DataHub's JSON forms.

A file holds a JSON array (or `{"proposals": [...]}`) whose items are MCPs, in the REST
form (`aspect.value` a JSON string) or DataHub's file form (`aspect.json` an object), or
DataHub MCEs (`{"proposedSnapshot": {"<...>Snapshot": {"urn", "aspects": [...]}}}`), which
become one MCP per aspect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemas.registry import EntityRegistry


class ProposalFileError(ValueError):
    """A file that cannot be read as proposals; the message names the file and the item."""


def read_proposal_file(path: Path, registry: EntityRegistry) -> list[dict[str, Any]]:
    """The MCP JSON objects of a file (not yet validated)."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as err:
        raise ProposalFileError(f"{path}: cannot read ({err.strerror})") from None
    except ValueError as err:
        raise ProposalFileError(f"{path}: not valid JSON ({err})") from None
    if isinstance(doc, dict) and isinstance(doc.get("proposals"), list):
        doc = doc["proposals"]
    elif isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise ProposalFileError(f"{path}: expected a JSON array of proposals")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict):
            raise ProposalFileError(f"{path}: item {i} is not a JSON object")
        if "proposedSnapshot" in item:
            out.extend(proposals_of_snapshot(item["proposedSnapshot"], registry, f"{path}: item {i}"))
        else:
            out.append(item)
    return out


def proposals_of_snapshot(snapshot: Any, registry: EntityRegistry, where: str,
                          system_metadata: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """An MCE's snapshot (`{"<...>Snapshot": {"urn", "aspects": [{"<type name>": value}]}}`) as
    one UPSERT MCP per aspect, in order; raises ProposalFileError naming `where` and the problem."""
    if not isinstance(snapshot, dict) or len(snapshot) != 1:
        raise ProposalFileError(f"{where}: proposedSnapshot must hold one typed snapshot")
    (body,) = snapshot.values()
    urn = body.get("urn") if isinstance(body, dict) else None
    if not isinstance(urn, str):
        raise ProposalFileError(f"{where}: snapshot has no urn")
    for aspect in body.get("aspects") or []:
        if not isinstance(aspect, dict) or len(aspect) != 1:
            raise ProposalFileError(f"{where}: each snapshot aspect must be {{\"<type name>\": {{...}}}}")
        ((type_name, value),) = aspect.items()
        spec = registry.aspect_for_schema(type_name)
        if spec is None:
            raise ProposalFileError(f"{where}: unknown aspect type {type_name}")
        proposal = {
            "entityUrn": urn,
            "entityType": urn.removeprefix("urn:li:").partition(":")[0],
            "changeType": "UPSERT",
            "aspectName": spec.name,
            "aspect": {"json": value},
        }
        if system_metadata:
            proposal["systemMetadata"] = system_metadata
        yield proposal
