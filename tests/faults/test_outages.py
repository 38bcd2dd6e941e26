"""Backend outages on the real stack: while Cassandra or OpenSearch is unreachable, GMS answers 503
(with Retry-After) instead of failing or dropping work, /health/ready says which backend is down,
the MCP consumer and the MCL processor pause; once the backend is back, everything resumes and
nothing is lost (versions contiguous, one MCL each, every proposal indexed); in both MCL wire formats.

Why a TCP proxy and not a stopped server: Kafka, Cassandra and OpenSearch on this machine are
shared by every test and every developer running at the same time; stopping one would fail
their runs, and a private Cassandra or OpenSearch costs a gigabyte and a minute to start. So the
`lodestar` processes reach Cassandra (aspect store and lineage) or OpenSearch through a TCP proxy
that the test cuts (every open connection closed, new ones refused: what clients see of a
stopped server) and restores. The test's own checks connect to the servers directly.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode, urlparse

import pytest

from schemas.mcl_wire import WIRE_FORMATS
from tests.support.builders import dataset_urn
from tests.support.outages import mcls_of, start_ready, step, versions
from tests.support.stack import Stack
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("wire_format", WIRE_FORMATS)]  # of the MCLs (`stack`)


def test_cassandra_outage_gives_503_and_unready_then_everything_resumes_without_loss(stack: Stack):  # noqa: F811
    host, _, port = stack.endpoints.cassandra_hosts[0].rpartition(":")
    proxy = TcpProxy(host, int(port))
    stack.env["LODESTAR_CASSANDRA_HOSTS"] = proxy.address
    try:
        gms, process, _ = start_ready(stack)
        before, during = dataset_urn("outage.before"), dataset_urn("outage.during")
        assert gms.propose(step(before, 1, "v1")).status_code == 200

        proxy.cut()
        stack.note("Cassandra cut")
        refused = stack.await_(lambda: (r := gms.propose(step(before, 2, "v2"))).status_code == 503 and [r],
                               "a write answered 503")[0]
        assert refused.json()["error"] == "backend_unavailable" and refused.headers["Retry-After"]
        ready = stack.await_(lambda: (r := gms.ready()).status_code == 503 and [r], "readiness 503")[0].json()
        assert ready["status"] == "unavailable" and not ready["backends"]["aspectStore"]["ok"]
        assert ready["backends"]["eventLog"]["ok"]
        assert gms.get(f"/v1/entities/{quote(before, safe='')}").status_code == 503
        queued = gms.propose(step(during, 1, "d1"), step(during, 2, "d2"), asynchronous=True)  # Kafka is up
        assert queued.status_code == 202
        stack.await_(lambda: "reading again from the committed offsets" in process.output.read_text(),
                     "the MCP consumer failing to apply them and pausing")
        assert stack.aspects.history(during, "datasetProperties") == []

        proxy.restore()
        stack.note("Cassandra restored")
        stack.await_(lambda: gms.ready().status_code == 200, "readiness back")
        stack.await_(lambda: gms.propose(step(before, 2, "v2")).status_code == 200, "writes accepted again")
        stack.await_mcps_applied()
        stack.await_(gms.indexed, "everything indexed")
    finally:
        proxy.close()
    assert versions(stack, before) == [(1, "v1"), (2, "v2")]
    assert versions(stack, during) == [(1, "d1"), (2, "d2")]  # the queued proposals, applied once
    assert mcls_of(stack, {before, during}) == sorted(
        [(before, "datasetKey", 1), (before, "datasetProperties", 1), (before, "datasetProperties", 2),
         (during, "datasetKey", 1), (during, "datasetProperties", 1), (during, "datasetProperties", 2)])
    assert stack.records("FailedMetadataChangeProposal_v1") == []


def test_opensearch_outage_gives_503_on_search_pauses_indexing_then_indexes_everything(stack: Stack):  # noqa: F811
    url = urlparse(stack.endpoints.opensearch_url)
    proxy = TcpProxy(url.hostname or "127.0.0.1", url.port or 9200)
    stack.env["LODESTAR_OPENSEARCH_URL"] = f"http://{proxy.address}"
    try:
        gms, _, indexer = start_ready(stack)
        urns = [dataset_urn(f"os_outage.t{i}") for i in range(6)]
        assert gms.propose(*(step(urn, 1, f"osoutage{i} before") for i, urn in enumerate(urns[:3]))).status_code == 200
        stack.await_(gms.indexed, "the first writes indexed")

        proxy.cut()
        stack.note("OpenSearch cut")
        search = f"/v1/search?{urlencode({'query': 'osoutage*', 'count': 100})}"
        refused = stack.await_(lambda: (r := gms.get(search)).status_code == 503 and [r], "search answered 503")[0]
        assert refused.json()["error"] == "backend_unavailable"
        ready = stack.await_(lambda: (r := gms.ready()).status_code == 503 and [r], "readiness 503")[0].json()
        assert not ready["backends"]["readModels"]["ok"] and ready["backends"]["aspectStore"]["ok"]
        # writes need only the store and the log: accepted, indexed once OpenSearch is back
        assert gms.propose(*(step(urn, 1, f"osoutage{i} during") for i, urn in enumerate(urns[3:], 3))
                           ).status_code == 200
        assert gms.ready().json()["mclLag"] >= 6  # their key aspects' and properties' MCLs wait
        stack.await_(lambda: "failed; retrying" in indexer.output.read_text(), "the MCL processor pausing")

        proxy.restore()
        stack.note("OpenSearch restored")
        stack.await_(lambda: gms.ready().status_code == 200, "readiness back")
        stack.await_(gms.indexed, "every MCL indexed after the outage")
        found = gms.get(search).json()
    finally:
        proxy.close()
    assert found["total"] == 6 and {hit["urn"] for hit in found["results"]} == set(urns)
