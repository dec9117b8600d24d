"""Reading what the switches count, and what operators conclude from it.

- :mod:`.snapshot` — one read of tailcc's counters and queue registers;
- :mod:`.analysis` — BRIEF §1's diagnostics (sustained ECN mark rate, PFC pauses,
  P99/P50 rising with load) as pure functions over snapshots and latency tables;
- :mod:`.prometheus` — the same counters as Prometheus metrics.
"""
