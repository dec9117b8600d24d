"""BRIEF §1's operator diagnostics as pure functions.

- ECN mark rate above 5% *sustained* means congestion control fires too often ("the more
  it controls, the more it jitters");
- P99/P50 ≥ 3 and growing with load means congestion oscillation in the network;
- PFC pause frames mean a whole port-priority stalls (and the pause may cascade).
Thresholds are parameters; the CLI exposes them as options.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from controlplane.telemetry.snapshot import Snapshot, delta


@dataclass(frozen=True)
class Finding:
    check: str        # ecn | pfc | tail
    message: str


@dataclass(frozen=True)
class WindowRate:
    queue: int | None          # None: all queues together
    marks: int
    packets: int

    @property
    def rate(self) -> float:
        # Counters are read one after another, so a window may see a mark whose packet
        # it did not count; a rate above 100% is that skew, not information.
        return min(1.0, self.marks / self.packets) if self.packets else 0.0


def mark_rates(before: Snapshot, after: Snapshot, class_queue: dict[int, int] | None
               ) -> list[WindowRate]:
    """ECN marks / packets in one window: overall, and per queue when the class->queue
    map is known (marks are counted per egress queue, packets per class)."""
    marks = delta(before, after, "ecn_mark")
    packets = delta(before, after, "class")
    out = [WindowRate(None, sum(marks.values()), sum(packets.values()))]
    if class_queue:
        for queue in sorted(set(class_queue.values())):
            q_marks = sum(n for slot, n in marks.items() if slot & 7 == queue)
            q_pkts = sum(n for tc, n in packets.items() if class_queue.get(tc) == queue)
            if q_pkts or q_marks:
                out.append(WindowRate(queue, q_marks, q_pkts))
    return out


def sustained_ecn(windows: list[list[WindowRate]], threshold: float, sustain: int
                  ) -> list[Finding]:
    """Queues whose mark rate exceeded ``threshold`` in ``sustain`` consecutive windows."""
    findings = []
    keys = sorted({w.queue for ws in windows for w in ws}, key=lambda q: (q is not None, q))
    for queue in keys:
        rates = [next((w.rate for w in ws if w.queue == queue), 0.0) for ws in windows]
        run = best = 0
        for r in rates:
            run = run + 1 if r > threshold else 0
            best = max(best, run)
        if best >= sustain:
            where = "all queues" if queue is None else f"queue {queue}"
            peak = max(rates)
            findings.append(Finding("ecn", f"ECN mark rate on {where} above "
                                    f"{threshold:.0%} for {best} consecutive windows "
                                    f"(peak {peak:.1%}): congestion control fires too often"))
    return findings


def pfc_pauses(before: Snapshot, after: Snapshot, max_per_s: float) -> list[Finding]:
    seconds = max(after.time - before.time, 1e-9)
    findings = []
    for slot, count in sorted(delta(before, after, "pfc").items()):
        rate = count / seconds
        if rate > max_per_s:
            findings.append(Finding("pfc", f"port {slot >> 3} priority {slot & 7}: {count} "
                                    f"PFC pause frames ({rate:.1f}/s): every flow of that "
                                    "priority on the link stalls"))
    return findings


@dataclass(frozen=True)
class LatencyPoint:
    load: float
    p50: float
    p99: float

    @property
    def ratio(self) -> float:
        return self.p99 / self.p50 if self.p50 > 0 else float("inf")


class LatencyFileError(Exception):
    """A latency table that cannot be read (names the file, line and column)."""


def read_latency_csv(path: str | Path) -> dict[str, list[LatencyPoint]]:
    """CSV with a header ``load,p50,p99`` (and optionally ``class``): per class points."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LatencyFileError(f"{path}: {exc.strerror}") from None
    reader = csv.DictReader(lines)
    missing = {"load", "p50", "p99"} - set(reader.fieldnames or ())
    if missing:
        raise LatencyFileError(f"{path}:1: missing column(s) {', '.join(sorted(missing))} "
                               "(header must name load, p50, p99 and optionally class)")
    out: dict[str, list[LatencyPoint]] = {}
    for lineno, row in enumerate(reader, start=2):
        try:
            point = LatencyPoint(float(row["load"]), float(row["p50"]), float(row["p99"]))
        except (TypeError, ValueError):
            raise LatencyFileError(f"{path}:{lineno}: load, p50 and p99 must be numbers") \
                from None
        out.setdefault(row.get("class") or "all", []).append(point)
    return out


def tail_oscillation(points: dict[str, list[LatencyPoint]], threshold: float
                     ) -> list[Finding]:
    """P99/P50 at the highest load ≥ threshold and higher than at the lowest load."""
    findings = []
    for name, pts in sorted(points.items()):
        pts = sorted(pts, key=lambda p: p.load)
        if len(pts) < 2:
            continue
        low, high = pts[0], pts[-1]
        rising = sum(b.ratio >= a.ratio for a, b in zip(pts, pts[1:], strict=False))
        if high.ratio >= threshold and high.ratio > low.ratio and rising * 2 >= len(pts) - 1:
            findings.append(Finding("tail", f"{name}: P99/P50 = {high.ratio:.1f} at load "
                                    f"{high.load:g}, up from {low.ratio:.1f} at load "
                                    f"{low.load:g} (threshold {threshold:g}): congestion "
                                    "oscillation in the network"))
    return findings
