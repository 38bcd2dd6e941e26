"""Entity versioning as DataHub's GMS keeps it: an entity's `versionProperties` names its
version set and its sort id; the version set's `versionSetProperties.latest` names the version
with the greatest sort id, and each version's `isLatest` says whether it is that one.

A write of `versionProperties` gets `isLatest` (`mark_latest`, at write time); once applied, the
version set follows (`follow_ups`): it names the new latest (made if it did not exist) and the
version it replaces gets `isLatest: false` (of several versions of a set in one batch, the
greatest sort id wins). Two writers racing on one set may both think
themselves latest until the next write of the set; DataHub's GMS has the same window."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gms.store import AspectStore
from ingest.proposal import Proposal, ProposalError

VERSION = "versionProperties"
VERSION_SET = "versionSetProperties"
DEFAULT_SCHEME = "LEXICOGRAPHIC_STRING"
Lookup = Callable[[str, str], Mapping[str, Any] | None]  # (urn, aspect) -> live value, or None


def mark_latest(urn: str, value: dict[str, Any], lookup: Lookup) -> dict[str, Any]:
    """The value with `isLatest`: whether it is, or outranks by sort id, its set's latest."""
    current = lookup(value["versionSet"], VERSION_SET)
    latest = current.get("latest") if current else None
    other = lookup(latest, VERSION) if latest and latest != urn else None
    is_latest = other is None or str(value.get("sortId", "")) > str(other.get("sortId", ""))
    return {**value, "isLatest": is_latest}


def follow_ups(proposals: Sequence[Proposal | ProposalError], statuses: Sequence[str],
               store: AspectStore) -> tuple[list[Proposal], list[Proposal]]:
    """After a batch: the version sets to point at their new latest versions, then the versions
    they replace, to mark not latest (to be applied in that order). Of several versions of one
    set the batch wrote as latest, the greatest sort id wins (the last written of equals); the
    others are replaced too."""
    written: dict[str, dict[str, dict[str, Any]]] = {}  # set -> version -> value, as written latest
    for proposal, status in zip(proposals, statuses, strict=True):
        if status != "applied" or not isinstance(proposal, Proposal) or proposal.aspect_name != VERSION:
            continue
        row = store.get(proposal.entity_urn, VERSION)
        if row is not None and row.exists and row.value.get("isLatest"):
            versions = written.setdefault(row.value["versionSet"], {})
            versions.pop(proposal.entity_urn, None)
            versions[proposal.entity_urn] = row.value
    sets: list[Proposal] = []
    replaced: list[Proposal] = []
    for set_urn, versions in written.items():
        urn, value = max(reversed(versions.items()), key=lambda item: str(item[1].get("sortId", "")))
        current = store.get(set_urn, VERSION_SET)
        before = current.value if current is not None and current.exists else {}
        scheme = value.get("versioningScheme") or DEFAULT_SCHEME
        if before.get("latest") != urn or before.get("versioningScheme") != scheme:
            sets.append(Proposal("versionSet", set_urn, "UPSERT", VERSION_SET,
                                 {**before, "latest": urn, "versioningScheme": scheme}))
        for old in dict.fromkeys([*versions, before.get("latest")]):
            previous = store.get(old, VERSION) if old and old != urn else None
            if previous is not None and previous.exists and previous.value.get("isLatest") is not False:
                replaced.append(Proposal(old.removeprefix("urn:li:").partition(":")[0], old, "UPSERT", VERSION,
                                         {**previous.value, "isLatest": False}))
    return sets, replaced
