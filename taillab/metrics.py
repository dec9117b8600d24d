"""Per-class slowdown and its statistics.

Slowdown = completion time / the same message's completion time through an empty
fabric. The unloaded time is computed, not assumed: the message's packets pipelined
store-and-forward through the path's links (each hop: wait for the previous packet on
that link and for the packet itself from the previous hop, serialise, propagate),
then, at a slow receiver, its receive rate. A test checks it equals what the simulator
measures for a lone message, so a slowdown of 1.0 means exactly "no waiting".

Percentiles are nearest rank over the pooled samples of all seeds; the 95% confidence
interval is a percentile bootstrap over whole blocks of time of every seed
(taillab.bootstrap), so its bounds are sampled slowdowns, never below the smallest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from taillab.bootstrap import percentile_intervals
from taillab.report import percentile
from taillab.roce import ETH_IP_UDP_BTH_ICRC


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
    """A percentile over pooled seeds with its 95% block-bootstrap interval."""

    value: float
    ci_low: float
    ci_high: float

    def fmt(self) -> str:
        if math.isnan(self.ci_low):
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci_low:.2f},{self.ci_high:.2f}]"


def block_stats(blocks: Sequence[Sequence[float]], pcts: Sequence[float]) -> list[Stat]:
    """Each percentile ``p`` (in %) of the values of all ``blocks`` pooled, with the
    interval of a bootstrap over the blocks (no interval when fewer than two blocks
    hold values)."""
    pooled = sorted(v for b in blocks for v in b)
    values = [percentile(pooled, p) for p in pcts]
    intervals = percentile_intervals(blocks, [p / 100 for p in pcts])
    if intervals is None:
        return [Stat(v, math.nan, math.nan) for v in values]
    return [Stat(v, low, high) for v, (low, high) in zip(values, intervals, strict=True)]


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index: 1 when every flow gets the same, 1/n when one gets all."""
    total = sum(rates)
    if not rates or total == 0:
        return math.nan
    return total * total / (len(rates) * sum(r * r for r in rates))
