"""GMS's own Prometheus counters (the application's registry serves them at /metrics)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter

PROPOSALS = Counter("lodestar_proposals", "Proposals GMS handled, by outcome (applied, noop, dropped, failed)"
                    " and failure reason (the error code)", ["outcome", "reason"])


def count_results(results: Iterable[object]) -> None:
    """Count proposal results (gms.write_path.Result) by outcome and reason."""
    for result in results:
        failure = getattr(result, "failure", None)
        PROPOSALS.labels(getattr(result, "status", "failed"), failure.code if failure is not None else "").inc()
