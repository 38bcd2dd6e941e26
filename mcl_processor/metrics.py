"""The MCL processor's own Prometheus metrics (the application's registry serves them at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

INDEXED = Counter("lodestar_indexed_records", "MCL records the MCL processor wrote to the read models, by kind"
                  " (change, point, skipped)", ["kind"])
INDEX_SECONDS = Histogram("lodestar_index_batch_seconds", "Time to write one MCL batch to the read models",
                          ["stage"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
