"""GMS's own Prometheus counters (the application's registry serves them at /metrics)."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import Counter

PROPOSALS = Counter("lodestar_proposals", "Proposals GMS handled, by outcome (applied, noop, dropped, failed)"
                    " and failure reason (the error code)", ["outcome", "reason"])


def count_results(results: Iterable[object]) -> None:
    """Count proposal results (gms.write_path.Result) by outcome and reason: one increment per
    distinct pair, not per result (a batch is mostly one pair)."""
    tally = Tally((getattr(result, "status", "failed"),
                   failure.code if (failure := getattr(result, "failure", None)) is not None else "")
                  for result in results)
    for (outcome, reason), count in tally.items():
        PROPOSALS.labels(outcome, reason).inc(count)
