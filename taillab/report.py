"""Per-class latency percentiles: the table the lab prints and the figure it draws."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PERCENTILES = (50.0, 99.0, 99.9)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an ascending sequence (no interpolation: a P999 of a
    thousand samples is the 999th sample, not an invented value)."""
    if not sorted_values:
        return math.nan
    return sorted_values[nearest_rank(len(sorted_values), p) - 1]


def nearest_rank(count: int, p: float) -> int:
    """The 1-based rank of the ``p``-th percentile among ``count`` samples."""
    return max(1, math.ceil(p * count / 100 - 1e-9))  # 1e-9: float noise


@dataclass(frozen=True)
class ClassLatency:
    cls: str
    count: int
    p50: float
    p99: float
    p999: float

    @property
    def tail_ratio(self) -> float:
        """P99/P50: the operators' oscillation indicator (≥ 3 is trouble, BRIEF §1)."""
        return self.p99 / self.p50 if self.p50 else math.nan


def summarise(samples: dict[str, list[float]]) -> list[ClassLatency]:
    rows = []
    for cls, values in samples.items():
        v = sorted(values)
        rows.append(ClassLatency(cls, len(v), *(percentile(v, p) for p in PERCENTILES)))
    return rows


def format_table(title: str, rows: Iterable[ClassLatency]) -> str:
    lines = [title, f"  {'class':<14}{'msgs':>7}{'P50 us':>11}{'P99 us':>11}{'P999 us':>11}"
                    f"{'P99/P50':>9}"]
    for r in rows:
        lines.append(f"  {r.cls:<14}{r.count:>7}{r.p50:>11.1f}{r.p99:>11.1f}{r.p999:>11.1f}"
                     f"{r.tail_ratio:>9.2f}")
    return "\n".join(lines)


def plot(results: dict[str, list[ClassLatency]], path: str) -> None:
    """Grouped bars of P50/P99/P999 per class, one group per configuration (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(results)
    classes = [r.cls for r in results[configs[0]]]
    fig, axes = plt.subplots(1, len(PERCENTILES), figsize=(4.2 * len(PERCENTILES), 4),
                             sharey=True)
    width = 0.8 / len(configs)
    for ax, (label, attr) in zip(axes, (("P50", "p50"), ("P99", "p99"), ("P999", "p999")),
                                 strict=True):
        for i, cfg in enumerate(configs):
            by_cls = {r.cls: getattr(r, attr) for r in results[cfg]}
            xs = [j + i * width for j in range(len(classes))]
            ax.bar(xs, [by_cls.get(c, math.nan) for c in classes], width, label=cfg)
        ax.set_title(f"{label} message completion time")
        ax.set_xticks([j + width * (len(configs) - 1) / 2 for j in range(len(classes))])
        ax.set_xticklabels(classes, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("microseconds (log)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
