"""End to end on the distributed stack: real `lodestar` processes on Kafka, Cassandra and OpenSearch.

A producer that is not GMS appends MCPs to the MCP topic (encoded as `Gms.enqueue` encodes
them); two `lodestar gms` processes apply them as one consumer group, two `lodestar
mcl-processor` processes index the MCLs as another. Then the aspect store, the MCL and FailedMCP
topics and the read models are compared with what the workload must produce, and search and
lineage are asked over HTTP.

Exactly once, made exact. MCPs are applied at least once: a GMS that dies after applying a batch
but before committing its offsets leaves the batch to the member that takes its partitions over.
Applying an UPSERT of the stored value again is a noop, but an older UPSERT replayed after a
newer one would add a version. So every proposal of an aspect carries `If-Version-Match` with
the version its predecessor made (the first: -1, "does not exist"): a replayed proposal fails its
condition (412, to the FailedMCP topic) and changes nothing, so version k of an aspect holds
exactly its k-th proposal's value, and a lost proposal leaves a gap or a wrong value. -1 also
matches a deleted aspect, so aspects that end in a DELETE get their first version in a seed
round the MCP group has committed before any fault; aspects first written later are never deleted.

Faults. A GMS and an MCL processor die mid-run; the survivors take their partitions over after
the session timeout (6 s here). Versions the dead GMS stored but whose MCLs it had not published
wait in its outbox: the other GMS takes it over once the dead one's lease on its producer id has
expired (tests/faults/test_outbox_takeover.py), and the dead one is restarted on its data directory,
which waits for that lease and publishes whatever is left. An outbox entry whose write was
still in flight at the SIGKILL is fenced (see gms.store.cassandra), so nothing waits for it.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest

from gms.service import MCP_GROUP
from ingest import topics
from ingest.proposal import Proposal
from mcl_processor.processor import GROUP as MCL_GROUP
from mcl_processor.processor import TOPICS as MCL_TOPICS
from schemas.registry import default_registry
from schemas.urns import Urn
from tests.support.builders import dataset_urn
from tests.support.processes import LODESTAR
from tests.support.stack import Chain, Lodestar, Stack, lineage, properties_chain, tags, upserts

pytestmark = pytest.mark.slow

SEEDED, FRESH = 300, 100  # datasets written from the seed round on / first written after it


# -- the workload ---------------------------------------------------------------------------


def table(i: int) -> str:
    return dataset_urn(f"e2e.t{i:03d}")


def fresh(i: int) -> str:
    return dataset_urn(f"e2e.n{i:03d}")


def staging(i: int) -> str:
    return dataset_urn(f"e2e.s{i:03d}")


def deleted(i: int) -> bool:
    return i % 10 == 3


def workload() -> list[Chain]:
    """Seeded tables t000.. (properties with 3 to 6 versions, a PATCH in some, a DELETE in
    others; lineage to a staging dataset, then to the table before), tags on every third table
    from round 2, and fresh tables n000.. first written in round 2."""
    chains = []
    for i in range(SEEDED):
        urn = table(i)
        chains.append(properties_chain(urn, f"t{i:03d}", 3 + i % 4, 1, patch=i % 7 == 0, delete=deleted(i)))
        if i:
            chains.append(Chain(urn, "upstreamLineage", 1, upserts(
                lineage(staging(i)), lineage(table(i - 1), staging(i)), lineage(table(i - 1)))))
        if i % 3 == 0:
            chains.append(Chain(urn, "globalTags", 2, upserts(tags("e2e_draft"), tags("e2e_gold"))))
    for i in range(FRESH):
        chains.append(properties_chain(fresh(i), f"n{i:03d}", 3, 2, patch=False, delete=False))
    return chains


def rounds(chains: list[Chain]) -> dict[int, list[Proposal]]:
    """The proposals by round; within a round, in chain order."""
    by_round: dict[int, list[Proposal]] = {}
    for chain in chains:
        for number, item in chain.proposals():
            by_round.setdefault(number, []).append(item)
    return dict(sorted(by_round.items()))


# -- processes and servers ------------------------------------------------------------------


# -- what must hold -------------------------------------------------------------------------


def expected_mcls(chains: list[Chain]) -> Counter[tuple[str, str, int]]:
    """One MCL per version: the chains' and each entity's key aspect (version 1)."""
    keys = {(chain.urn, "datasetKey", 1) for chain in chains}
    return Counter({*keys, *((c.urn, c.aspect, k) for c in chains for k, _ in c.versions())})


def await_indexed(stack: Stack, gms: Lodestar, chains: list[Chain]) -> None:
    """Until every MCL is readable on the topic, then until the MCL group has committed past them
    (waitForIndex)."""
    expected = expected_mcls(chains)
    stack.await_(lambda: set(stack.mcl_counts()) >= set(expected), f"the {len(expected)} MCLs on the MCL topic")
    stack.note(f"the {len(expected)} MCLs on the MCL topic")
    stack.await_(lambda: gms.client().call("POST", "/v1/proposals", {"proposals": [], "waitForIndex": True})
                 ["indexed"], "the MCL processors indexing every MCL (waitForIndex)")
    stack.note("every MCL indexed")


def check_store(stack: Stack, chains: list[Chain]) -> None:
    """Each aspect's versions are 1..n with the chain's values; each entity has one key aspect version."""
    registry = default_registry()
    keys = [(urn, "datasetKey", [(1, registry.key_value(Urn.parse(urn)))]) for urn in sorted({c.urn for c in chains})]
    wanted = [(chain.urn, chain.aspect, chain.versions()) for chain in chains] + keys
    with ThreadPoolExecutor(16) as pool:
        histories = pool.map(lambda item: stack.aspects.history(item[0], item[1]), wanted)
        stored = [[(row.version, row.value if row.exists else None) for row in history] for history in histories]
    wrong = [f"{urn} {aspect}: stored {versions}, expected {expected}"
             for (urn, aspect, expected), versions in zip(wanted, stored, strict=True) if versions != expected]
    assert not wrong, f"{len(wrong)} aspect(s) differ from the workload:\n" + "\n".join(wrong[:10])


def check_mcls(stack: Stack, chains: list[Chain]) -> None:
    """Exactly one MCL per stored version on the MCL topic."""
    counts, expected = stack.mcl_counts(), expected_mcls(chains)
    doubled = sorted(key for key, n in counts.items() if n > 1)
    missing, unexpected = sorted(set(expected) - set(counts)), sorted(set(counts) - set(expected))
    assert not (doubled or missing or unexpected), \
        f"MCLs: doubled {doubled[:5]}, missing {missing[:5]}, unexpected {unexpected[:5]}"


def replays(stack: Stack, chains: list[Chain]) -> int:
    """The FailedMCP topic holds nothing but replays: proposals of the workload whose
    If-Version-Match no longer held because they had been applied. Their count."""
    proposals = {(c.urn, c.aspect, str(k - 1 if k > 1 else -1)) for c in chains for k, _ in c.versions()}
    failed = stack.records(topics.FAILED_MCP)
    others = [f for f in failed if not f["error"].startswith("precondition_failed: ")
              or (f["mcp"]["entityUrn"], f["mcp"]["aspectName"], f["mcp"]["headers"]["If-Version-Match"])
              not in proposals]
    assert not others, f"{len(others)} proposal(s) failed other than as replays, e.g. {others[:3]}"
    return len(failed)


def check_search_and_lineage(gms: Lodestar) -> None:
    """Search and lineage over HTTP answer from the final versions only."""
    client = gms.client()

    def search(query: str) -> tuple[int, set[str]]:
        body = client.call("GET", "/v1/search?" + urlencode({"query": query, "count": 1000}))
        return body["total"], {hit["urn"] for hit in body["results"]}

    finals = {table(i) for i in range(SEEDED) if not deleted(i)} | {fresh(i) for i in range(FRESH)}
    assert search("stage:final") == (len(finals), finals)
    assert search("t004final") == (1, {table(4)})
    assert search("t003final") == (0, set())  # its properties were deleted
    assert search("draft* patched")[0] == 0  # no earlier version is left in the index
    gold = {table(i) for i in range(0, SEEDED, 3)}
    assert search("tags:e2e_gold") == (len(gold), gold)
    assert search("tags:e2e_draft")[0] == 0

    walk = client.call("GET", "/v1/lineage?" + urlencode({"urn": table(200), "direction": "upstream",
                                                          "maxHops": 3}))
    assert {(edge["source"], edge["destination"]) for edge in walk["edges"]} == \
        {(table(i - 1), table(i)) for i in (200, 199, 198)}  # upstream to downstream, no staging left
    assert {node["urn"]: node["hops"] for node in walk["nodes"]} == {table(200 - hops): hops for hops in range(4)}


def start(stack: Stack, crash: bool = False) -> tuple[list[Lodestar], list[Lodestar]]:
    """Two GMS (one MCP group) and two MCL processors (one MCL group), once both groups are
    stable. With `crash`, the first of each dies right after it first applies a batch: the GMS
    once its versions are stored, before their MCLs are published and before the offsets are
    committed; the MCL processor once the read models are written, before the offsets are committed."""
    gms = [stack.gms("gms-a", "after-commit" if crash else None), stack.gms("gms-b")]
    processors = [stack.mcl_processor("mcl-a", "mcl-after-write" if crash else None), stack.mcl_processor("mcl-b")]
    stack.await_healthy(*gms)
    stack.note("both GMS answering")
    stack.await_group(MCP_GROUP, topics.PROPOSAL_TOPICS, 2)
    stack.note("MCP group stable")
    stack.await_group(MCL_GROUP, MCL_TOPICS, 2)
    stack.note("MCL group stable")
    return gms, processors


def seed(stack: Stack, chains: list[Chain]) -> list[Proposal]:
    """Produce round 1 and await it applied; the other rounds' proposals, in order."""
    by_round = rounds(chains)
    first = by_round.pop(1)
    stack.produce(first)
    stack.await_mcps_applied()
    stack.note(f"seed round applied: {len(first)} MCPs")
    return [p for proposals in by_round.values() for p in proposals]


def produce(stack: Stack, proposals: list[Proposal]) -> None:
    stack.produce(proposals)
    stack.note(f"produced {len(proposals)} MCPs")


def verify(stack: Stack, gms: Lodestar, chains: list[Chain]) -> int:
    """Every check, `lodestar check` (the read models equal the store) running meanwhile; the
    number of replays."""
    checking = subprocess.Popen([*LODESTAR, "check", "--data-dir", str(stack.root / "tool")], env=stack.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        check_store(stack, chains)
        check_mcls(stack, chains)
        replayed = replays(stack, chains)
        check_search_and_lineage(gms)
        report, _ = checking.communicate(timeout=120)
    finally:
        checking.kill()
        checking.wait()
    assert checking.returncode == 0, f"lodestar check:\n{report}"
    stack.note(f"verified; {replayed} replayed proposal(s) failed their If-Version-Match")
    return replayed


def stop_all(stack: Stack) -> None:
    """SIGTERM every running process: each exits 0, promptly."""
    running = [p for p in stack.processes if p.running]
    for process in running:
        process.terminate()
    assert [(p.name, p.exit_status()) for p in running] == [(p.name, 0) for p in running]


def test_two_gms_and_two_mcl_processors_apply_and_index_every_proposal_once(stack: Stack):
    """Both groups share the work; every proposal is applied once and indexed; no replay."""
    chains = workload()
    gms, _ = start(stack)
    produce(stack, seed(stack, chains))
    stack.await_mcps_applied()
    stack.note("every MCP applied")
    await_indexed(stack, gms[0], chains)
    assert verify(stack, gms[1], chains) == 0  # a stable group hands no record to two members
    stop_all(stack)


@pytest.mark.parametrize("death", ["killed", "crashed"])
def test_a_gms_and_an_mcl_processor_dying_mid_run_lose_and_double_nothing(stack: Stack, death: str):
    """killed: SIGKILL once the MCP group has committed half of the first half of the MCPs after
    the seed round, wherever the two processes are then; the second half is produced after.
    crashed: at the crash points of `start`, so there is certainly a batch applied but not
    committed (replayed by the survivor) and, for the GMS, stored versions whose MCLs were not
    published (published by its restart)."""
    chains = workload()
    gms, processors = start(stack, crash=death == "crashed")
    rest = seed(stack, chains)
    victims = [gms[0], processors[0]]
    if death == "killed":
        first, second = rest[:len(rest) // 2], rest[len(rest) // 2:]
        target = stack.mcp_committed() + len(first) // 2
        produce(stack, first)
        stack.await_(lambda: stack.mcp_committed() >= target, "half of the first half applied")
        for victim in victims:
            victim.kill()
        stack.note("killed gms-a and mcl-a")
        produce(stack, second)
    else:
        produce(stack, rest)
        stack.await_(lambda: not any(v.running for v in victims), "the crash points reached")
        assert [v.proc.returncode for v in victims if v.proc] == [137, 137]
        stack.note("gms-a and mcl-a crashed")
    stack.await_mcps_applied()  # by gms-b, once the session timeout hands it gms-a's partitions
    stack.note("every MCP applied")
    restarted = stack.gms("gms-a")  # publishes what its outbox holds (see the module docstring)
    stack.await_healthy(restarted)
    await_indexed(stack, gms[1], chains)
    replayed = verify(stack, restarted, chains)
    if death == "crashed":
        assert replayed > 0
    stop_all(stack)
