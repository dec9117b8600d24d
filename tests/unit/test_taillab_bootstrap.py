"""The lab's confidence intervals (taillab.bootstrap, taillab.metrics.block_stats): a
percentile bootstrap over blocks. It covers a heavy-tailed P99 about as often as it
claims, more often than resampling single messages when the tail comes in spells, and
its bounds are sampled values, so a slowdown's interval never goes below 1."""

import math

import numpy as np
import pytest

from taillab.bootstrap import nearest_rank, percentile_intervals, ratio_intervals, time_blocks
from taillab.metrics import block_stats
from taillab.report import percentile

BLOCKS, PER_BLOCK, TRIALS = 30, 200, 100


def _blocks(rng: np.random.Generator, spells: bool) -> list[np.ndarray]:
    """Slowdown-like samples, 1 + Pareto(1.5): 30 blocks of 200; with ``spells`` each
    block's tail scaled by a factor of its own (a congested stretch of time)."""
    return [1 + (rng.lognormal(0, 0.5) if spells else 1.0) * rng.pareto(1.5, PER_BLOCK)
            for _ in range(BLOCKS)]


def _coverage(spells: bool, per_message: bool = False) -> tuple[float, float]:
    """Share of seeded trials whose 95% interval of P99 holds the true P99, and the
    median width of the intervals."""
    rng = np.random.default_rng(7)
    truth = float(np.quantile(np.concatenate([np.concatenate(_blocks(rng, spells))
                                              for _ in range(300)]), 0.99))
    hits, widths = 0, []
    for k in range(TRIALS):
        blocks = _blocks(rng, spells)
        if per_message:
            blocks = [[x] for x in np.concatenate(blocks)]
        ((low, high),) = percentile_intervals(blocks, [0.99], resamples=200, seed=k)
        hits += low <= truth <= high
        widths.append(high - low)
    return hits / TRIALS, float(np.median(widths))


def test_coverage_of_a_heavy_tailed_p99():
    coverage, width = _coverage(spells=False)
    assert 0.88 <= coverage <= 0.995
    assert width < 15        # true P99 is 21.5: informative, not everything-covering


def test_blocks_cover_a_tail_made_in_spells_where_single_messages_do_not():
    by_block, _ = _coverage(spells=True)
    by_message, _ = _coverage(spells=True, per_message=True)
    assert by_block >= 0.82
    assert by_block - by_message >= 0.08


def test_bounds_are_sampled_values_never_below_one():
    rng = np.random.default_rng(3)
    blocks = [list(1 + rng.pareto(1.2, 50)) for _ in range(6)]
    blocks[2] = [1.0] * 50                                    # a block of no waiting
    pooled = sorted(v for b in blocks for v in b)
    stats = block_stats(blocks, [50.0, 99.0, 99.9])
    for stat, p in zip(stats, [50.0, 99.0, 99.9], strict=True):
        assert stat.value == percentile(pooled, p)
        assert 1.0 <= stat.ci_low <= stat.ci_high <= pooled[-1]
        assert stat.ci_low in pooled and stat.ci_high in pooled
    # two samples, wildly apart: a t-interval would reach below zero, this cannot
    (p99,) = block_stats([[1.0], [80.0]], [99.0])
    assert p99.ci_low >= 1.0 and p99.ci_high <= 80.0


def test_too_few_blocks_give_no_interval():
    (stat,) = block_stats([[1.0, 2.0, 3.0], []], [99.0])
    assert stat.value == 3.0 and math.isnan(stat.ci_low) and math.isnan(stat.ci_high)


def test_paired_ratio_of_two_schemes():
    rng = np.random.default_rng(5)
    base = [list(1 + rng.pareto(2.0, 100)) for _ in range(20)]
    ((low, high),) = ratio_intervals(base, base, [0.99], paired=True)
    assert low == high == 1.0                # the same messages' fates on both sides
    double = [[2 * v for v in b] for b in base]
    ((low, high),) = ratio_intervals(double, base, [0.99], paired=True)
    assert low == pytest.approx(2.0) and high == pytest.approx(2.0)
    with pytest.raises(ValueError, match="paired blocks: 20 against 19"):
        ratio_intervals(base, base[1:], [0.99], paired=True)


def test_time_blocks_and_ranks():
    pairs = [(0.0, 1.0), (99.9, 2.0), (100.0, 3.0), (999.0, 4.0), (1500.0, 5.0)]
    assert time_blocks(pairs, 1000.0, 10) == [[1.0, 2.0], [3.0]] + [[]] * 7 + [[4.0, 5.0]]
    with pytest.raises(ValueError, match="time_blocks: need count >= 1"):
        time_blocks(pairs, 1000.0, 0)
    for count in (1, 7, 1000, 1001):
        for q in (0.5, 0.99, 0.999):
            values = list(range(count))
            assert values[nearest_rank(count, q)] == percentile(values, q * 100)
