"""Crash safety under SIGKILL (see tests/support/fault_injection.py; bench/reliability.py runs the long
version: 100,000 MCPs and 20+ kills)."""

from __future__ import annotations

import pytest

from schemas.mcl_wire import WIRE_FORMATS
from tests.support.fault_injection import run_distributed, run_embedded

pytestmark = [pytest.mark.slow, pytest.mark.fault_injection,
              pytest.mark.parametrize("wire_format", WIRE_FORMATS)]  # of the MCLs: both hold the guarantees


def test_embedded_server_killed_at_random_moments_applies_every_proposal_exactly_once(tmp_path, wire_format):
    report = run_embedded(tmp_path, entities=250, kills=4, wire_format=wire_format)
    assert report.kills == 4 and report.mcps > 1900
    assert report.verdict.ok, "\n".join(report.verdict.examples[:10])
    assert report.verdict.versions > 1500


def test_distributed_stack_with_processes_killed_at_random_moments_applies_every_proposal_exactly_once(stack):  # noqa: F811
    """Two GMS and two MCL processors on Kafka, Cassandra and OpenSearch (the `stack` fixture of
    tests/server/test_distributed_stack.py; `wire_format` parametrizes it), a random one of them
    SIGKILLed and restarted three times."""
    report = run_distributed(stack, entities=150, kills=3)
    assert report.verdict.ok, "\n".join(report.verdict.examples[:10])
    assert report.verdict.versions > 900
