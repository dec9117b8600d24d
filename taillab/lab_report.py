"""What a scenario run reports: the per-class slowdown table with confidence intervals,
PFC/ECN/CNP figures per scheme, every class's measured tail beside its floor (what the
offered traffic forces on any scheduler, taillab.bounds) and beside ``ideal-srpt``
(what a central SRPT schedule achieves, taillab.ideal), the issue's targets checked
against the numbers, and the JSON, CSV and PNG files.

Classes of a banded role (hot KV) are also reported by message size
(Scenario.size_bands). Intervals are percentile block bootstraps (taillab.bootstrap):
a class's percentiles over the blocks of time of every seed, and ratios between two
schemes with the same blocks resampled on both sides (identical offered traffic)."""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from taillab.bootstrap import ratio_intervals, time_blocks
from taillab.classes import ROLES
from taillab.ideal import SCHEME as IDEAL
from taillab.metrics import Stat, block_stats
from taillab.scenario import MOUSE_CLASSES, Scenario

PCTS = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))
Floors = dict[str, dict[str, float]]      # class -> {"p99": s, "p999": s} (taillab.bounds)
BLOCKS_PER_SEED = 10                      # blocks of time each seed's run is cut into
Blocks = dict[str, dict[str, list[list[float]]]]     # scheme -> group -> blocks of slowdowns


def groups(scenario: Scenario) -> dict[str, tuple[str, int, float]]:
    """What the report has a row for: every class (traffic spec), then its size bands:
    name -> (class, above this many bytes, up to this many)."""
    out: dict[str, tuple[str, int, float]] = {t.name: (t.name, -1, math.inf)
                                              for t in scenario.traffic}
    out.update(scenario.size_bands())
    return out


def _blocks(scenario: Scenario, runs: list[dict[str, Any]], name: str, above: int,
            upto: float) -> list[list[float]]:
    """The slowdowns of ``name``'s messages of (above, upto] bytes, in blocks: each
    seed's run cut into BLOCKS_PER_SEED slices of its duration by message start."""
    out: list[list[float]] = []
    for r in runs:
        pairs = [(t, v) for t, v, b in zip(r["start_us"].get(name, ()),
                                           r["slowdown"].get(name, ()),
                                           r["msg_bytes"].get(name, ()), strict=True)
                 if above < b <= upto]
        out += time_blocks(pairs, scenario.duration_us, BLOCKS_PER_SEED)
    return out


def aggregate(scenario: Scenario, cells: list[dict[str, Any]],
              floors: Floors | None = None) -> dict[str, Any]:
    """Per scheme: per-class (and size band) slowdown statistics over the seeds, the
    fabric's PFC/ECN/CNP figures (means over seeds), and each class's distance to its
    floor, to ``ideal-srpt`` and to the baseline when they are in the run."""
    by_scheme: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        by_scheme[c["scheme"]].append(c)
    roles = {t.name: t.role for t in scenario.traffic}
    offered = _offered(scenario, {c["seed"] for c in cells})
    out: dict[str, Any] = {}
    blocks: Blocks = {}
    for scheme, runs in by_scheme.items():
        runs.sort(key=lambda r: r["seed"])
        classes: dict[str, Any] = {}
        blocks[scheme] = {}
        for group, (name, above, upto) in groups(scenario).items():
            b = _blocks(scenario, runs, name, above, upto)
            n = sum(len(x) for x in b)
            if not n:
                continue
            blocks[scheme][group] = b
            classes[group] = _class_entry(runs, name, roles[name], n,
                                          block_stats(b, [p for _, p in PCTS]))
            classes[group]["offered"] = sum(offered[(seed, group)] for seed in
                                            (r["seed"] for r in runs))
            if group != name:
                classes[group]["band_of"] = name
        out[scheme] = _scheme_entry(runs, classes)
    _distances(out, blocks, floors or {})
    return out


def _offered(scenario: Scenario, seeds: set[int]) -> dict[tuple[int, str], int]:
    """How many messages of each group (class, size band) each seed offers: the
    percentiles are over those completed by the end of the drain, the floor over all."""
    from taillab.traffic import generate

    out: dict[tuple[int, str], int] = defaultdict(int)
    for seed in seeds:
        for m in generate(scenario, seed):
            for group, (name, above, upto) in groups(scenario).items():
                if m.cls == name and above < m.size <= upto:
                    out[(seed, group)] += 1
    return out


def _class_entry(runs: list[dict[str, Any]], name: str, role: str, n: int,
                 stats: list[Stat]) -> dict[str, Any]:
    by = dict(zip((k for k, _ in PCTS), stats, strict=True))
    return {
        "role": role, "mouse": role in MOUSE_CLASSES, "messages": n,
        **{k: vars(v) for k, v in by.items()},
        "p99_over_p50": by["p99"].value / by["p50"].value,
        "sender_wait_p99_us": _pooled_pct(runs, "sender_wait_us", name, 99.0),
        "wire_p99": _pooled_pct(runs, "wire_slowdown", name, 99.0),
        "wire_p999": _pooled_pct(runs, "wire_slowdown", name, 99.9),
        "ecn_mark_rate": _mean(r["ecn_mark_rate"].get(name, 0.0) for r in runs),
        "goodput_gbps": _mean(r["goodput_gbps"].get(name, 0.0) for r in runs),
    }


def _scheme_entry(runs: list[dict[str, Any]], classes: dict[str, Any]) -> dict[str, Any]:
    delays = {src: [d for r in runs for d in r["cnp_delay_us"].get(src, [])]
              for src in ("switch", "receiver")}
    return {
        "seeds": [r["seed"] for r in runs], "classes": classes,
        "elephant_goodput_gbps": _mean(sum(r["goodput_gbps"].get(c, 0.0)
                                           for c in r["elephant_classes"]) for r in runs),
        "pfc_frames": _mean(r["pfc_frames"] for r in runs),
        "pfc_paused_us": _mean(r["pfc_paused_us"] for r in runs),
        "innocent_victims": _mean(r["innocent_victims"] for r in runs),
        "paused_flows": _mean(r["paused_flows"] for r in runs),
        "cnps": {s: _mean(r["cnps"].get(s, 0) for r in runs) for s in delays},
        "cnp_delay_us_median": {s: statistics.median(v) if v else math.nan
                                for s, v in delays.items()},
        "peak_buffer_pkts": max(max(r["peak_buffer_pkts"].values(), default=0)
                                for r in runs),
        "wall_s": sum(r["wall_s"] for r in runs),
    }


def _distances(summary: dict[str, Any], blocks: Blocks, floors: Floors) -> None:
    """Adds to each class of each scheme: ``vs_floor`` (its P99 and P999 over the
    floor's), ``vs_ideal`` and ``vs_baseline`` (over ideal-srpt's and the baseline's,
    each a point value with a paired bootstrap interval)."""
    keys = [k for k, _ in PCTS if k != "p50"]
    qs = [p / 100 for k, p in PCTS if k != "p50"]
    for scheme, s in summary.items():
        for group, c in s["classes"].items():
            floor = floors.get(group)
            if floor:
                c["vs_floor"] = {k: c[k]["value"] / floor[k] for k in keys}
            for ref, key in ((IDEAL, "vs_ideal"), ("baseline", "vs_baseline")):
                other = summary.get(ref, {}).get("classes", {}).get(group)
                if scheme == ref or other is None or summary[ref]["seeds"] != s["seeds"]:
                    continue
                ci = ratio_intervals(blocks[scheme][group], blocks[ref][group], qs,
                                     paired=True)
                c[key] = {k: vars(Stat(c[k]["value"] / other[k]["value"],
                                       *(ci[i] if ci else (math.nan, math.nan))))
                          for i, k in enumerate(keys)}


def _pooled_pct(runs: list[dict[str, Any]], key: str, name: str, p: float) -> float:
    from taillab.report import percentile
    return percentile(sorted(v for r in runs for v in r.get(key, {}).get(name, ())), p)


def _mean(values: Any) -> float:
    v = list(values)
    return statistics.fmean(v) if v else math.nan


def _stat(d: dict[str, float]) -> Stat:
    return Stat(d["value"], d["ci_low"], d["ci_high"])


def format_tables(summary: dict[str, Any]) -> str:
    lines = []
    for scheme, s in summary.items():
        lines.append(f"\n{scheme} (seeds {', '.join(map(str, s['seeds']))}): slowdown "
                     f"= completion / unloaded completion, [95% CI: bootstrap over seeds "
                     f"and blocks of time]")
        lines.append(f"  {'class':<15}{'msgs':>7}  {'P50':<24}{'P99':<24}{'P999':<24}"
                     f"{'P99/P50':>8}{'ECN':>7}{'Gb/s':>7}")
        for name, c in s["classes"].items():
            tag = name + ("*" if c["mouse"] else "")
            tail = (f"{'':>7}{'':>7}" if "band_of" in c else
                    f"{c['ecn_mark_rate']:>7.3f}{c['goodput_gbps']:>7.2f}")
            lines.append(f"  {tag:<15}{c['messages']:>7}  " + "".join(
                f"{_stat(c[k]).fmt():<24}" for k, _ in PCTS)
                + f"{c['p99_over_p50']:>8.2f}" + tail)
        if scheme == IDEAL:
            lines.append(f"  fluid model (taillab.ideal): no packets, so no ECN, PFC or "
                         f"CNPs; elephant goodput {s['elephant_goodput_gbps']:.2f} Gb/s")
            continue
        lines += _fabric_lines(s)
    lines.append("  (* mouse class)")
    return "\n".join(lines)


def _fabric_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    waits = [f"{n} {c['sender_wait_p99_us']:.0f} us (slowdown from its first packet "
             f"on the wire: P99 {c['wire_p99']:.2f}, P999 {c['wire_p999']:.2f})"
             for n, c in s["classes"].items() if c["mouse"] and "band_of" not in c]
    if waits:
        lines.append("  P99 wait at the sender's NIC before the first packet: "
                     + "; ".join(waits))
    cd = s["cnp_delay_us_median"]
    lines.append(f"  PFC: {s['pfc_frames']:.0f} frames, paused {s['pfc_paused_us']:.0f} "
                 f"us (port-priority time), {s['innocent_victims']:.0f} innocent victim "
                 f"flows of {s['paused_flows']:.0f} paused;  elephant goodput "
                 f"{s['elephant_goodput_gbps']:.2f} Gb/s")
    lines.append(f"  CNPs: switch {s['cnps']['switch']:.0f} (median feedback "
                 f"{cd['switch']:.1f} us), receiver {s['cnps']['receiver']:.0f} (median "
                 f"{cd['receiver']:.1f} us);  peak switch buffer "
                 f"{s['peak_buffer_pkts']} pkts;  {s['wall_s']:.0f} s of cell run time (wall)")
    return lines


def format_distances(summary: dict[str, Any], floors: Floors) -> str:
    """Per class and size band: the floor, then each scheme's P99 and P999 with their
    ratio to the floor and to ideal-srpt (with its paired bootstrap interval)."""
    names = list(dict.fromkeys(g for s in summary.values() for g in s["classes"]))
    lines = ["against the floor (what the offered traffic forces on any scheduler, "
             "taillab.bounds) and ideal-srpt (central SRPT, taillab.ideal), same seeds:",
             f"  {'class':<16}{'scheme':<15}{'done/offered':>14}{'P99':>8}{'/floor':>8}  "
             f"{'/ideal [95% CI]':<22}{'P999':>7}{'/floor':>8}  {'/ideal [95% CI]':<22}"]
    for name in names:
        f = floors.get(name)
        lines.append(f"  {name:<16}{'floor':<15}{'':>14}" + (
            f"{f['p99']:>8.2f}{'':>8}  {'':<22}{f['p999']:>7.2f}" if f else f"{'-':>8}"))
        for scheme, s in summary.items():
            c = s["classes"].get(name)
            if c is None:
                continue
            cols = ""
            for k in ("p99", "p999"):
                vf = c.get("vs_floor", {}).get(k)
                vi = c.get("vs_ideal", {}).get(k)
                cols += (f"{c[k]['value']:>7.2f}" + (f"{vf:>7.2f}x" if vf else f"{'-':>8}")
                         + f"  {(_stat(vi).fmt() + 'x') if vi else '-':<22}")
            done = f"{c['messages']}/{c.get('offered', '?')}"
            lines.append(f"  {'':<16}{scheme:<15}{done:>14} " + cols)
    if any(c["messages"] < c.get("offered", 0) for s in summary.values()
           for c in s["classes"].values()):
        lines.append("  (where not every offered message completed by the end of the drain, "
                     "the percentiles are over those that did; the floor counts them all)")
    return "\n".join(lines)


TAILCC_SCHEMES = ("tailcc", "tailcc-nic", "tailcc-srpt")


MOUSE_P99, MOUSE_P999 = 1.5, 2.0
NEAR_FLOOR, NEAR_IDEAL, IDEAL_ABOVE_FLOOR = 1.15, 1.05, 1.10


def verdict(summary: dict[str, Any], floors: Floors | None = None
            ) -> list[tuple[str, bool, str]]:
    """The issue's 'Done when' targets, each with its measured figure, for each tailcc
    scheme in the run (switch-only, NIC+switch). ``floors`` (taillab.bounds): a missed
    mouse target says whether any scheduler could have met it, and a banded class as a
    whole is judged against its floor (or ideal-srpt, where that lies above it)."""
    if "baseline" not in summary:
        return []
    out: list[tuple[str, bool, str]] = []
    for scheme in TAILCC_SCHEMES:
        if scheme in summary:
            out += _targets(scheme, summary["baseline"], summary[scheme], floors or {},
                            summary.get(IDEAL))
    return out


def _banded(ours: dict[str, Any]) -> set[str]:
    return {c["band_of"] for c in ours["classes"].values() if "band_of" in c}


def _targets(scheme: str, base: dict[str, Any], ours: dict[str, Any],
             floors: Floors, ideal: dict[str, Any] | None = None
             ) -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = []
    banded = _banded(ours)
    for n, c in ours["classes"].items():
        if not c["mouse"] or c.get("band_of") and "<=" not in n:
            continue
        if n not in banded:          # a banded class as a whole: against its floor below
            ok = c["p99"]["value"] <= MOUSE_P99 and c["p999"]["value"] <= MOUSE_P999
            out.append((f"{scheme} {n} P99 <= {MOUSE_P99}, P999 <= {MOUSE_P999}", ok,
                        f"P99 {c['p99']['value']:.2f}, P999 {c['p999']['value']:.2f}"
                        + ("" if ok else _reach(floors.get(n)))))
        b = base["classes"].get(n)
        if b and "band_of" not in c:
            ratio = b["p99"]["value"] / c["p99"]["value"]
            out.append((f"baseline {n} P99 >= 3x {scheme}'s", ratio >= 3.0, f"{ratio:.3g}x"))
    for n in banded:
        out += _near_floor(scheme, n, ours["classes"][n], floors.get(n),
                           (ideal or {}).get("classes", {}).get(n))
    below_bulk = {name for name, r in ROLES.items() if r.queue < ROLES["bulk"].queue}
    for n, c in ours["classes"].items():
        b = base["classes"].get(n)
        if b and c["role"] not in below_bulk and "band_of" not in c:
            ratio = c["p99"]["value"] / b["p99"]["value"]
            ci = c.get("vs_baseline", {}).get("p99")
            shown = (_stat(ci).fmt() + "x" if ci else f"{ratio:.3g}x") + " baseline"
            out.append((f"{scheme} {n} P99 no worse than baseline +10%", ratio <= 1.10,
                        shown))
    if base["elephant_goodput_gbps"] > 0:   # a short run may deliver no elephant bytes
        g = ours["elephant_goodput_gbps"] / base["elephant_goodput_gbps"]
        out.append((f"{scheme} elephant goodput >= 0.95x baseline", g >= 0.95, f"{g:.3f}x"))
    if base["pfc_paused_us"] > 0:
        red = 1 - ours["pfc_paused_us"] / base["pfc_paused_us"]
        out.append((f"{scheme} PFC paused time >= 90% lower", red >= 0.90,
                    f"{red * 100:.1f}% lower"))
    return out


def _near_floor(scheme: str, name: str, c: dict[str, Any], floor: dict[str, float] | None,
                ideal: dict[str, Any] | None) -> list[tuple[str, bool, str]]:
    """A banded class as a whole: P99 and P999 each within NEAR_FLOOR of the floor, or,
    where ideal-srpt itself lies above IDEAL_ABOVE_FLOOR x the floor, within NEAR_IDEAL
    of ideal-srpt."""
    if not floor:
        return []
    out = []
    for k, label in (("p99", "P99"), ("p999", "P999")):
        v, fl = c[k]["value"], floor[k]
        ref = ideal[k]["value"] if ideal else math.nan
        if ideal and ref > IDEAL_ABOVE_FLOOR * fl:
            out.append((f"{scheme} {name} {label} <= {NEAR_IDEAL}x ideal-srpt's (ideal-srpt "
                        f"above {IDEAL_ABOVE_FLOOR}x the floor)", v <= NEAR_IDEAL * ref,
                        f"{v:.2f} = {v / ref:.3f}x ideal-srpt {ref:.2f} (floor {fl:.2f})"))
        else:
            out.append((f"{scheme} {name} {label} <= {NEAR_FLOOR}x the floor",
                        v <= NEAR_FLOOR * fl, f"{v:.2f} = {v / fl:.3f}x floor {fl:.2f}"))
    return out


def _reach(floor: dict[str, float] | None) -> str:
    """Whether a missed mouse target was within any scheduler's reach."""
    if not floor:
        return ""
    out = [f"P99 {floor['p99']:.3f}" if floor["p99"] > MOUSE_P99 else "",
           f"P999 {floor['p999']:.3f}" if floor["p999"] > MOUSE_P999 else ""]
    out = [o for o in out if o]
    if not out:
        return (f" (within reach: no scheduler is forced above P99 {floor['p99']:.2f}, "
                f"P999 {floor['p999']:.2f})")
    return " (out of reach for any scheduler: the offered traffic forces " + \
        " and ".join(out) + " at least)"


def format_verdict(rows: list[tuple[str, bool, str]]) -> str:
    return "\n".join(f"  [{'met' if ok else 'MISSED'}] {what}: {fig}" for what, ok, fig in rows)


def write_outputs(scenario: Scenario, cells: list[dict[str, Any]], summary: dict[str, Any],
                  out: Path, floors: Floors | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "summary.json", out / "slowdown.csv"]
    paths[0].write_text(json.dumps({"scenario": scenario.name, "summary": summary,
                                    "floors": floors or {},
                                    "verdict": [{"target": w, "met": ok, "measured": f}
                                                for w, ok, f in verdict(summary, floors)]},
                                   indent=1, default=_json_default))
    with paths[1].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scheme", "class", "role", "mouse", "messages", "p50", "p50_ci_low",
                    "p50_ci_high", "p99", "p99_ci_low", "p99_ci_high", "p999", "p999_ci_low",
                    "p999_ci_high", "p99_over_p50", "ecn_mark_rate", "goodput_gbps",
                    "offered", "p99_over_floor", "p999_over_floor", "p99_over_ideal",
                    "p999_over_ideal"])
        for scheme, s in summary.items():
            for name, c in s["classes"].items():
                w.writerow([scheme, name, c["role"], c["mouse"], c["messages"]]
                           + [round(c[k][f], 4) for k, _ in PCTS
                              for f in ("value", "ci_low", "ci_high")]
                           + [round(c["p99_over_p50"], 4)]
                           + (["", ""] if "band_of" in c else      # the class's, not the band's
                              [round(c["ecn_mark_rate"], 5), round(c["goodput_gbps"], 4)])
                           + [c.get("offered", "")]
                           + [_csv(c.get("vs_floor", {}).get(k)) for k in ("p99", "p999")]
                           + [_csv(c.get("vs_ideal", {}).get(k, {}).get("value"))
                              for k in ("p99", "p999")])
    paths += plot_cdfs(scenario, cells, out / "slowdown_cdf.png")
    paths += plot_cascade(cells, out / "queues_pfc.png")
    return paths


def _csv(x: float | None) -> float | str:
    """A ratio for the CSV: empty where the run has none (no floor, no ideal-srpt)."""
    return "" if x is None else round(x, 4)


def _json_default(o: Any) -> Any:
    if isinstance(o, float) and math.isnan(o):
        return None
    raise TypeError(type(o).__name__)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_cdfs(scenario: Scenario, cells: list[dict[str, Any]], path: Path) -> list[Path]:
    """One panel per class: the CDF of slowdown (log x), one line per scheme; the tail
    is drawn on a 1 - CDF log scale so P99 and P999 are visible."""
    plt = _pyplot()
    names = [t.name for t in scenario.traffic]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8))
    schemes = list(dict.fromkeys(c["scheme"] for c in cells))
    for ax, name in zip(list(axes) if len(names) > 1 else [axes], names, strict=True):
        for scheme in schemes:
            v = sorted(x for c in cells if c["scheme"] == scheme
                       for x in c["slowdown"].get(name, []))
            if not v:
                continue
            x, y = _survival(v)
            ax.plot(x, y, label=scheme, drawstyle="steps-post")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(name)
        ax.set_xlabel("slowdown")
        ax.grid(alpha=0.3, which="both")
    (axes[0] if len(names) > 1 else axes).set_ylabel("fraction of messages slower (1-CDF)")
    (axes[0] if len(names) > 1 else axes).legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def _survival(v: list[float], points: int = 4000) -> tuple[list[float], list[float]]:
    """1 - CDF of the sorted values ``v``, at most about ``points`` steps spaced evenly
    on the plot's log scale (every step of the last ``points // 4`` messages kept)."""
    n = len(v)
    if n <= points:
        idx = list(range(n))
    else:
        left = [n * (1 / n) ** (k / (points - 1)) for k in range(points)]   # n down to 1
        idx = sorted({min(n - 1, n - round(m)) for m in left} | set(range(n - points // 4, n)))
    return [v[i] for i in idx], [1 - i / n for i in idx]


def plot_cascade(cells: list[dict[str, Any]], path: Path) -> list[Path]:
    """Queue depth of the congested downlink, the spine port above it and another
    leaf's uplink, and the number of paused port-priorities, over time (first seed)."""
    plt = _pyplot()
    first: dict[str, dict[str, Any]] = {}
    for c in cells:
        if c["depth_samples"]:              # ideal-srpt, a fluid model, has no queues
            first.setdefault(c["scheme"], c)
    if not first:
        return []
    fig, axes = plt.subplots(len(first), 1, figsize=(10, 2.6 * len(first)), sharex=True,
                             squeeze=False)
    for ax, (scheme, cell) in zip(axes[:, 0], first.items(), strict=True):
        samples = cell["depth_samples"]
        if not samples:
            continue
        t = [s[0] / 1000 for s in samples]
        for key in samples[0][1]:
            if key == "paused_queues":
                continue
            ax.plot(t, [s[1][key] for s in samples], label=f"depth {key}", lw=0.8)
        ax2 = ax.twinx()
        ax2.fill_between(t, [s[1]["paused_queues"] for s in samples], step="post",
                         alpha=0.2, color="red", label="paused port-priorities")
        ax2.set_ylabel("paused", color="red")
        ax.set_ylabel("packets")
        ax.set_title(f"{scheme} (seed {cell['seed']})")
        ax.legend(loc="upper left", fontsize=7)
    axes[-1, 0].set_xlabel("ms")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def write_sweep(points: list[tuple[float, dict[str, Any]]], out: Path) -> list[Path]:
    """P99 slowdown (with its CI) per class and scheme against load: CSV and a plot."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = out / "sweep.csv", out / "sweep.png"
    rows = []
    for load, summary in points:
        for scheme, s in summary.items():
            for name, c in s["classes"].items():
                rows.append((load, scheme, name, c["messages"], c["p99"]["value"],
                             c["p99"]["ci_low"], c["p99"]["ci_high"]))
    with csv_path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["load", "scheme", "class", "messages", "p99", "p99_ci_low", "p99_ci_high"])
        w.writerows(rows)
    plt = _pyplot()
    names = list(dict.fromkeys(r[2] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for scheme in dict.fromkeys(r[1] for r in rows):
            pts = sorted((r[0], r[4], r[5], r[6]) for r in rows
                         if r[1] == scheme and r[2] == name)
            xs = [p[0] * 100 for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", label=scheme)
            lo = [p[2] for p in pts]
            if not any(math.isnan(v) for v in lo):
                ax.fill_between(xs, lo, [p[3] for p in pts], alpha=0.15)
        ax.set_yscale("log")
        ax.set_title(f"{name}: P99 slowdown")
        ax.set_xlabel("average host-link load (%)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return [csv_path, png_path]
