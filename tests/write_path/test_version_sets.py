"""Entity versioning as DataHub's GMS keeps it: a version set names its latest version (the
greatest sort id) and every version says whether it is the latest."""

from __future__ import annotations

import json

from gms.service import Gms
from ingest.proposal import parse_proposal
from tests.support.builders import mcp

SET = "urn:li:versionSet:(churn-model,dataset)"
V1, V2, V0 = (f"urn:li:dataset:(urn:li:dataPlatform:s3,models.churn_{n},PROD)" for n in ("v1", "v2", "v0"))


def _version(gms: Gms, urn: str, tag: str, sort_id: str, scheme: str = "LEXICOGRAPHIC_STRING") -> None:
    value = {"versionSet": SET, "version": {"versionTag": tag}, "sortId": sort_id, "versioningScheme": scheme}
    (result,) = gms.apply([parse_proposal(mcp(urn, "versionProperties", value))], "urn:li:corpuser:alice")
    assert result.status in ("applied", "noop"), result.failure


def _latest(gms: Gms, urn: str) -> bool:
    return json.loads(gms.store.get(urn, "versionProperties").value_json)["isLatest"]


def _set(gms: Gms) -> dict:
    return json.loads(gms.store.get(SET, "versionSetProperties").value_json)


def test_the_first_version_makes_its_set_and_is_the_latest(gms: Gms):
    _version(gms, V1, "1", "a1", "ALPHANUMERIC_GENERATED_BY_DATAHUB")
    assert _set(gms) == {"latest": V1, "versioningScheme": "ALPHANUMERIC_GENERATED_BY_DATAHUB"}
    assert _latest(gms, V1) is True


def test_a_greater_sort_id_takes_over_and_a_smaller_one_does_not(gms: Gms):
    _version(gms, V1, "1", "b")
    _version(gms, V2, "2", "c")
    assert _set(gms)["latest"] == V2 and _latest(gms, V2) is True and _latest(gms, V1) is False
    _version(gms, V0, "0", "a")
    assert _set(gms)["latest"] == V2 and _latest(gms, V0) is False and _latest(gms, V2) is True
    _version(gms, V1, "1", "b")  # written again (unchanged: isLatest stays false)
    assert _latest(gms, V1) is False and _set(gms)["latest"] == V2


def test_of_versions_written_in_one_batch_the_greatest_sort_id_is_the_latest(gms: Gms):
    _version(gms, V0, "0", "a")
    batch = [parse_proposal(mcp(urn, "versionProperties", {"versionSet": SET, "version": {"versionTag": tag},
                                                           "sortId": sort_id}))
             for urn, tag, sort_id in ((V2, "2", "c"), (V1, "1", "b"))]
    results = gms.apply(batch, "urn:li:corpuser:alice")
    assert [r.status for r in results] == ["applied", "applied"]
    assert _set(gms)["latest"] == V2
    assert (_latest(gms, V2), _latest(gms, V1), _latest(gms, V0)) == (True, False, False)
