"""How sure a ratio of two tail percentiles is: a block bootstrap.

The urgent bench compares P99s: while a controller writes against between its writes,
or against the elephants scenario. A tail is made by the host's slow spells, which last
from a millisecond to seconds, so the frames are not independent samples: resampling
single frames would claim a precision the run does not have. Resampling whole blocks (a
writing window, a second of frames) with replacement keeps each spell inside its block,
and the spread of the ratio over the resamples says how far one run's figure can be from
the next.

:func:`ratio_interval` gives the central 95% of P99(numerator) / P99(denominator) over
the resamples; ``paired`` resamples the same block indices on both sides (a writing
window and the seconds between that follow it come from the same moments of the host).
"""

from __future__ import annotations

import numpy as np

RESAMPLES = 400
LEVEL = 0.95
Q = 0.99


def rank(count: int, q: float) -> int:
    """Where percentile ``q`` of ``count`` sorted values sits, as the bench counts it
    (here and ``urgent_latency._percentile``): ``int(q * count)``, the last at most."""
    return min(count - 1, int(q * count))


def percentile(values: np.ndarray, q: float = Q) -> float:
    """Percentile ``q`` of unsorted ``values`` (:func:`rank`)."""
    k = rank(len(values), q)
    return float(np.partition(values, k)[k])


def ratio_interval(numerator: list[list[int]], denominator: list[list[int]],
                   paired: bool = False, q: float = Q, resamples: int = RESAMPLES,
                   seed: int = 0) -> tuple[float, float] | None:
    """The central LEVEL of percentile ``q`` of the numerator's values over the
    denominator's, each side resampled by whole blocks (lists of values), with a fixed
    seed (the same run gives the same interval). ``paired``: both sides have as many
    blocks, block i of each from the same moments, and are resampled together. None
    when a side has fewer than two blocks with values: no spread to estimate."""
    num = [np.asarray(b, dtype=np.int64) for b in numerator]
    den = [np.asarray(b, dtype=np.int64) for b in denominator]
    if paired and len(num) != len(den):
        raise ValueError(f"paired blocks: {len(num)} against {len(den)}")
    if sum(1 for b in num if len(b)) < 2 or sum(1 for b in den if len(b)) < 2:
        return None
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(resamples):
        pick_num = rng.integers(0, len(num), len(num))
        pick_den = pick_num if paired else rng.integers(0, len(den), len(den))
        top = np.concatenate([num[i] for i in pick_num])
        bottom = np.concatenate([den[i] for i in pick_den])
        if len(top) and len(bottom):
            low = percentile(bottom, q)
            if low > 0:
                ratios.append(percentile(top, q) / low)
    if not ratios:
        return None
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return float(low), float(high)
