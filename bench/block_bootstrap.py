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
The resampling is the lab's (``taillab.bootstrap``), with the bench's percentile rank.
"""

from __future__ import annotations

import numpy as np

from taillab import bootstrap

RESAMPLES = bootstrap.RESAMPLES
LEVEL = bootstrap.LEVEL
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
    got = bootstrap.ratio_intervals(numerator, denominator, [q], rank=rank, paired=paired,
                                     resamples=resamples, level=LEVEL, seed=seed,
                                     dtype=np.int64)
    return None if got is None else got[0]
