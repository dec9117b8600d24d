"""Per-class results of one mix run: latency percentiles, loss, goodput, order.

Latency is one-way: the kernel's receive stamp (``SO_TIMESTAMPNS``) minus the send
time the sender wrote into the datagram, both on the machine's one clock. Loss counts
what the senders handed to the kernel and the receiver never got; order counts
datagrams that arrived after a later one of the same flow (a flow is one class from
one sender, so "order kept within a class" means per sender).
"""

from __future__ import annotations

import math
import struct
from dataclasses import asdict, dataclass, field

from topologies.mix_plan import ETH_IP_UDP, Plan

RECORD = struct.Struct("<IIqq")


@dataclass
class ClassResult:
    name: str
    mouse: bool
    urgent: bool
    sent: int = 0
    received: int = 0
    reordered: int = 0
    goodput_mbps: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    max_ms: float | None = None
    latencies_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def lost(self) -> int:
        return max(0, self.sent - self.received)

    @property
    def loss_pct(self) -> float:
        return 100.0 * self.lost / self.sent if self.sent else 0.0

    def summary(self) -> dict:
        out = asdict(self)
        del out["latencies_ms"]
        out["lost"] = self.lost
        out["loss_pct"] = round(self.loss_pct, 3)
        return out


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (the value below which ``q`` of the samples lie)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def decode(records: bytes) -> list[tuple[int, int, int, int]]:
    """(flow id, sequence, send ns, receive ns) per datagram, in arrival order."""
    return [RECORD.unpack_from(records, i) for i in range(0, len(records) - RECORD.size + 1,
                                                          RECORD.size)]


def per_class(plan: Plan, records: bytes, sent: dict[int, int],
              seconds: float) -> dict[str, ClassResult]:
    """Fold the receiver's records and the senders' counts into one result per class."""
    flows = {f.id: f for f in plan.flows}
    results = {c.name: ClassResult(c.name, c.mouse, c.urgent) for c in plan.classes()}
    last_seq: dict[int, int] = {}
    received_bytes: dict[str, int] = dict.fromkeys(results, 0)
    for flow_id, seq, sent_ns, recv_ns in decode(records):
        flow = flows.get(flow_id)
        if flow is None:
            continue
        r = results[flow.cls.name]
        r.received += 1
        r.latencies_ms.append((recv_ns - sent_ns) / 1e6)
        received_bytes[flow.cls.name] += flow.cls.size + ETH_IP_UDP
        if seq < last_seq.get(flow_id, -1):
            r.reordered += 1
        last_seq[flow_id] = max(seq, last_seq.get(flow_id, -1))
    for flow_id, count in sent.items():
        if flow_id in flows:
            results[flows[flow_id].cls.name].sent += count
    for name, r in results.items():
        lat = sorted(r.latencies_ms)
        r.p50_ms, r.p99_ms = percentile(lat, 0.5), percentile(lat, 0.99)
        r.p999_ms, r.max_ms = percentile(lat, 0.999), (lat[-1] if lat else None)
        r.goodput_mbps = received_bytes[name] * 8 / seconds / 1e6 if seconds > 0 else 0.0
    return results


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(runs: dict[str, dict[str, ClassResult]]) -> str:
    """One row per class and configuration (FIFO next to tailcc), fixed-width text."""
    head = (f"{'class':<14} {'kind':<5} {'config':<7} {'P50 ms':>8} {'P99 ms':>8} {'P999 ms':>8} "
            f"{'max ms':>8} {'sent':>7} {'lost':>6} {'loss%':>6} {'reord':>5} "
            f"{'Mb/s':>6}")
    lines = [head, "-" * len(head)]
    names = list(next(iter(runs.values())).keys()) if runs else []
    for name in names:
        for config, results in runs.items():
            r = results[name]
            kind = "mouse" if r.mouse else "eleph"
            lines.append(f"{name[:14]:<14} {kind:<5} {config:<7} {_ms(r.p50_ms):>8} "
                         f"{_ms(r.p99_ms):>8} {_ms(r.p999_ms):>8} {_ms(r.max_ms):>8} "
                         f"{r.sent:>7} {r.lost:>6} "
                         f"{r.loss_pct:>6.1f} {r.reordered:>5} {r.goodput_mbps:>6.2f}")
    return "\n".join(lines)


def _elephant_goodput(results: dict[str, ClassResult]) -> float:
    return sum(r.goodput_mbps for r in results.values() if not r.mouse)


def verdict(runs: dict[str, dict[str, ClassResult]]) -> list[str]:
    """The comparison in three lines: urgent mice lost, their P99 FIFO/tailcc, and how
    much of FIFO's elephant goodput tailcc keeps."""
    if set(runs) != {"fifo", "tailcc"}:
        return []
    fifo, tailcc = runs["fifo"], runs["tailcc"]
    out = []
    for name, r in tailcc.items():
        slow = fifo[name].p99_ms
        if not r.urgent or r.p99_ms is None or slow is None:
            continue
        out.append(f"{name}: tailcc lost {r.lost}/{r.sent}, P99 {r.p99_ms:.2f} ms vs FIFO "
                   f"{slow:.2f} ms ({slow / max(r.p99_ms, 1e-6):.0f}x lower)")
    base = _elephant_goodput(fifo)
    if base > 0:
        out.append(f"elephants: tailcc {_elephant_goodput(tailcc):.2f} Mb/s = "
                   f"{100 * _elephant_goodput(tailcc) / base:.0f}% of FIFO's {base:.2f} Mb/s")
    return out
