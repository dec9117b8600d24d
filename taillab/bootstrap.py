"""How sure a tail percentile is: a percentile bootstrap over whole blocks of samples.

A tail is made by a few congested spells, so neighbouring messages are not independent
samples: resampling single messages would claim a precision a run does not have. The
unit here is a block: the lab's messages of one seed that start in one slice of the
run's time (:func:`time_blocks`), so a spell stays inside its block and a seed's
traffic is spread over its blocks. Resampling the blocks of all seeds together, with
replacement, varies both which seeds and which moments make the tail.

The interval is the central ``level`` of the statistic over the resamples (a percentile
bootstrap, no normal or t approximation): each resample's percentile is one of the
sampled values, and the bounds are resampled percentiles themselves, so they lie within
the sampled values by construction (a slowdown's bounds never fall below 1).

:func:`ratio_interval` does the same for the ratio of two percentiles; ``paired``
resamples the same block indices on both sides (the lab's schemes see identical offered
traffic, so block ``i`` of each holds the same messages' fates). The percentile rule is
a parameter, so the urgent bench (``bench/block_bootstrap.py``) shares this code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

RESAMPLES = 400
LEVEL = 0.95
SEED = 0

Rank = Callable[[int, float], int]      # (count, percentile as a share) -> 0-based index


def nearest_rank(count: int, q: float) -> int:
    """The lab's nearest-rank percentile (taillab.report.percentile), 0-based."""
    return max(0, math.ceil(q * count - 1e-9) - 1)


def time_blocks(samples: Sequence[tuple[float, float]], duration_us: float,
                count: int) -> list[list[float]]:
    """(start time, value) pairs cut into ``count`` equal slices of ``[0, duration_us]``
    by start time (the last slice also takes later starts)."""
    if count < 1 or duration_us <= 0:
        raise ValueError(f"time_blocks: need count >= 1 and a positive duration "
                         f"(got {count}, {duration_us})")
    out: list[list[float]] = [[] for _ in range(count)]
    width = duration_us / count
    for start, value in samples:
        out[min(count - 1, max(0, int(start / width)))].append(value)
    return out


class _Pool:
    """The values of every block sorted once; a resample is a count per block, and its
    percentile is found by a running sum of those counts in value order (no copy of
    the resampled values)."""

    def __init__(self, blocks: Sequence[Sequence[float]], dtype: type) -> None:
        arrays: list[np.ndarray] = [np.asarray(b, dtype=dtype) for b in blocks]
        self.blocks = len(arrays)
        self.sizes = np.array([len(a) for a in arrays], dtype=np.int64)
        values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)
        ids = np.repeat(np.arange(len(arrays)), self.sizes)
        order = np.argsort(values, kind="stable")
        self.values, self.ids = values[order], ids[order]

    def usable(self) -> bool:
        return int(np.count_nonzero(self.sizes)) >= 2

    def counts(self, picks: np.ndarray) -> np.ndarray:
        return np.bincount(picks, minlength=self.blocks)

    def percentiles(self, counts: np.ndarray, qs: Sequence[float], rank: Rank
                    ) -> list[float] | None:
        """Each percentile of the resample that takes block i ``counts[i]`` times."""
        total = int(counts @ self.sizes)
        if not total:
            return None
        running = np.cumsum(counts[self.ids])
        return [float(self.values[np.searchsorted(running, rank(total, q) + 1)]) for q in qs]


def _central(draws: list[float], level: float) -> tuple[float, float]:
    """The central ``level`` of ``draws``, each bound one of the draws (inverted CDF: no
    interpolation between them)."""
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], method="inverted_cdf")
    return float(low), float(high)


def percentile_intervals(blocks: Sequence[Sequence[float]], qs: Sequence[float],
                         rank: Rank = nearest_rank, resamples: int = RESAMPLES,
                         level: float = LEVEL, seed: int = SEED
                         ) -> list[tuple[float, float]] | None:
    """For each percentile ``q`` (a share, 0.99 for P99) of the pooled values: the central
    ``level`` of it over block resamples (fixed seed: the same data gives the same
    interval). None when fewer than two blocks hold values: no spread to estimate."""
    pool = _Pool(blocks, np.float64)
    if not pool.usable():
        return None
    rng = np.random.default_rng(seed)
    draws: list[list[float]] = [[] for _ in qs]
    for _ in range(resamples):
        got = pool.percentiles(pool.counts(rng.integers(0, pool.blocks, pool.blocks)), qs,
                               rank)
        if got is not None:
            for d, v in zip(draws, got, strict=True):
                d.append(v)
    if not draws[0]:
        return None
    return [_central(d, level) for d in draws]


def ratio_intervals(numerator: Sequence[Sequence[float]],
                    denominator: Sequence[Sequence[float]], qs: Sequence[float],
                    rank: Rank = nearest_rank, paired: bool = False,
                    resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED,
                    dtype: type = np.float64) -> list[tuple[float, float]] | None:
    """For each percentile ``q``: the central ``level`` of the numerator's percentile
    over the denominator's, each side resampled by whole blocks. ``paired``: both sides
    have as many blocks, block i of each from the same moments, resampled together.
    None when a side has fewer than two blocks with values."""
    num, den = _Pool(numerator, dtype), _Pool(denominator, dtype)
    if paired and num.blocks != den.blocks:
        raise ValueError(f"paired blocks: {num.blocks} against {den.blocks}")
    if not num.usable() or not den.usable():
        return None
    rng = np.random.default_rng(seed)
    ratios: list[list[float]] = [[] for _ in qs]
    for _ in range(resamples):
        pick_num = rng.integers(0, num.blocks, num.blocks)
        pick_den = pick_num if paired else rng.integers(0, den.blocks, den.blocks)
        top = num.percentiles(num.counts(pick_num), qs, rank)
        bottom = den.percentiles(den.counts(pick_den), qs, rank)
        if top is None or bottom is None or not all(b > 0 for b in bottom):
            continue
        for r, t, b in zip(ratios, top, bottom, strict=True):
            r.append(t / b)
    if not ratios[0]:
        return None
    return [_central(r, level) for r in ratios]
