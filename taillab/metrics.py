"""Per-class slowdown and its statistics.

Slowdown = completion time / the same message's completion time through an empty
fabric. The unloaded time is computed, not assumed: the message's packets pipelined
store-and-forward through the path's links (each hop: wait for the previous packet on
that link and for the packet itself from the previous hop, serialise, propagate),
then, at a slow receiver, its receive rate. A test checks it equals what the simulator
measures for a lone message, so a slowdown of 1.0 means exactly "no waiting".

Percentiles are nearest rank over the pooled samples of all seeds; the 95% confidence
interval is Student's t over the per-seed values of the same percentile.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from taillab.report import percentile
from taillab.roce import ETH_IP_UDP_BTH_ICRC

# two-sided 95% Student's t quantiles by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(dof: int) -> float:
    if dof <= 0:
        return math.nan
    keys = [k for k in _T95 if k <= dof]
    return _T95[max(keys)] if dof <= 30 else 1.96


@lru_cache(maxsize=4096)
def unloaded_us(size: int, mtu: int, rates_bps: tuple[float, ...], prop_us: float,
                rx_bps: float | None) -> float:
    """Completion time of one message alone in the fabric (first packet sent at 0)."""
    sizes = [min(mtu, size - off) + ETH_IP_UDP_BTH_ICRC for off in range(0, size, mtu)]
    free = [0.0] * len(rates_bps)       # when each link finishes its last packet
    last_arrival = 0.0
    rx_free = 0.0
    for wire in sizes:
        t = 0.0                          # packet ready at the sender
        for h, rate in enumerate(rates_bps):
            start = max(t, free[h])
            free[h] = start + wire * 8 / rate * 1e6
            t = free[h] + prop_us
        if rx_bps:
            rx_free = max(t, rx_free) + wire * 8 / rx_bps * 1e6
            t = rx_free
        last_arrival = t
    return last_arrival


@dataclass(frozen=True)
class Stat:
    """A percentile over pooled seeds with its 95% CI from the per-seed values."""

    value: float
    ci_low: float
    ci_high: float

    def fmt(self) -> str:
        if math.isnan(self.ci_low):
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci_low:.2f},{self.ci_high:.2f}]"


def pooled_stat(per_seed: Sequence[Sequence[float]], p: float) -> Stat:
    pooled = sorted(v for s in per_seed for v in s)
    value = percentile(pooled, p)
    seed_values = [percentile(sorted(s), p) for s in per_seed if s]
    if len(seed_values) < 2:
        return Stat(value, math.nan, math.nan)
    half = t95(len(seed_values) - 1) * statistics.stdev(seed_values) / math.sqrt(
        len(seed_values))
    mean = statistics.fmean(seed_values)
    return Stat(value, mean - half, mean + half)


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index: 1 when every flow gets the same, 1/n when one gets all."""
    total = sum(rates)
    if not rates or total == 0:
        return math.nan
    return total * total / (len(rates) * sum(r * r for r in rates))
