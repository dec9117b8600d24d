"""The mix's sender schedule (topologies/mix_traffic.next_gap): mice Poisson, elephants
at their mean rate but never strictly periodic (a periodic flow phase-locks with a
tail-drop queue: one class then loses nearly everything, another little)."""

from __future__ import annotations

import random
import statistics

from topologies import mix_traffic


def _gaps(flow: dict, n: int = 4000, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [mix_traffic.next_gap(flow, rng) for _ in range(n)]


def test_elephant_gaps_keep_the_mean_rate_and_vary_within_the_jitter():
    gaps = _gaps({"pps": 200.0})
    mean = 1 / 200.0
    assert abs(statistics.fmean(gaps) - mean) < 0.01 * mean
    low, high = (1 - mix_traffic.ELEPHANT_JITTER) * mean, (1 + mix_traffic.ELEPHANT_JITTER) * mean
    assert all(low <= g <= high for g in gaps)
    assert statistics.pstdev(gaps) > 0.1 * mean          # not periodic
    assert _gaps({"pps": 200.0}) == gaps                 # seeded: the same run twice


def test_mice_gaps_are_exponential():
    gaps = _gaps({"pps": 100.0, "poisson": True}, n=20000)
    mean = statistics.fmean(gaps)
    assert abs(mean - 0.01) < 0.03 * 0.01
    assert abs(statistics.pstdev(gaps) - mean) < 0.05 * mean   # exponential: sd = mean
