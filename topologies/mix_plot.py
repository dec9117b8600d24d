"""The mix's picture: one latency CDF per class, FIFO and tailcc on the same axes."""

from __future__ import annotations

from pathlib import Path

from topologies.mix_stats import ClassResult

COLOURS = {"fifo": "tab:red", "tailcc": "tab:blue"}


def cdf_png(runs: dict[str, dict[str, ClassResult]], path: Path, title: str) -> Path:
    """Write the PNG (matplotlib's Agg back end: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(next(iter(runs.values())).keys())
    cols = 3
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        for config, results in runs.items():
            lat = sorted(results[name].latencies_ms)
            if not lat:
                continue
            ys = [(i + 1) / len(lat) for i in range(len(lat))]
            r = results[name]
            ax.step([max(v, 1e-3) for v in lat], ys, where="post",
                    color=COLOURS.get(config), label=f"{config} (P99 {r.p99_ms:.2f} ms, "
                                                       f"lost {r.loss_pct:.0f}%)")
        ax.set_xscale("log")
        ax.set_title(f"{name} ({'mouse' if results[name].mouse else 'elephant'})")
        ax.set_xlabel("one-way latency (ms)")
        ax.set_ylabel("CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
