"""The best tail any scheduler could give: slowdown floors from the offered traffic alone.

A slowdown target can be out of reach for reasons no queueing discipline removes: two
256 KB blocks that start together towards one 10G host both need its downlink, so one
of them finishes no earlier than twice its unloaded time, whatever the switches, NICs or
a receiver-driven scheduler do. This module turns that argument into a number, so a
missed target says whether the scheme or the workload is what limits it.

Model (what every scheme of the lab must obey, so the bound holds for all of them and
for any scheme not yet written): each message's wire bytes (payload plus per-packet
headers) cross its sender's host link and its receiver's host link (at a slow
receiver, its receive rate if lower), each at most at that link's rate, no earlier than
the message starts. It finishes no earlier than its last byte crosses either. Nothing
else is assumed: other classes' traffic, the fabric, propagation and the switches'
pipelines can only make it later, so they are left out and the bound stays valid.

For a slowdown target ``s`` a message is due at ``start + s x unloaded``
(:func:`taillab.metrics.unloaded_us`, the denominator the lab divides by). On one link,
a window ``[r, d]`` whose messages (starting at or after ``r``, due by ``d``) need more
than ``d - r`` of the link's time forces at least one of them late. Windows that share
no message force distinct late messages, so a set of such windows (picked greedily,
earliest deadline first) is a lower bound on how many messages miss ``s`` under any
schedule. If that count exceeds what a percentile allows above its rank, the
percentile itself is above ``s`` for every schedule: :func:`percentile_floor` finds the
largest such ``s`` by bisection.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from taillab.leafspine import Fabric
from taillab.metrics import unloaded_us
from taillab.report import nearest_rank
from taillab.roce import wire_bytes
from taillab.scenario import Scenario
from taillab.traffic import FabricMessage, generate

_BISECT_STEPS = 14
FLOOR_CAP = 1024.0      # class_floors' highest floor: an overloaded receiver's class
_EPS = 1e-9


@dataclass(frozen=True)
class Job:
    """One message as the bound sees it: when it may start, its unloaded completion,
    and how long it holds each of its two host links (µs)."""

    msg_id: int
    start_us: float
    unloaded_us: float
    links: tuple[tuple[tuple[str, int], float], ...]    # ((side, host), busy µs)


def jobs_of(scenario: Scenario, messages: Iterable[FabricMessage]) -> list[Job]:
    """The bound's view of ``messages`` in ``scenario``'s fabric."""
    topo = scenario.topology
    fabric = Fabric(topo)
    slow = {s.host: s.rx_gbps * 1e9 for s in scenario.slow_receivers}
    host_bps = topo.host_gbps * 1e9
    out = []
    for m in messages:
        wire_bits = wire_bytes(m.size, topo.mtu_payload) * 8
        rx_bps = min(host_bps, slow.get(m.receiver, host_bps))
        base = unloaded_us(m.size, topo.mtu_payload, tuple(fabric.path_rates(m.sender,
                                                                             m.receiver)),
                           topo.prop_us, slow.get(m.receiver))
        out.append(Job(m.msg_id, m.start_us, base,
                       ((("tx", m.sender), wire_bits / host_bps * 1e6),
                        (("rx", m.receiver), wire_bits / rx_bps * 1e6))))
    return out


def late_lower_bound(jobs: list[Job], slowdown: float) -> int:
    """How many of ``jobs`` finish later than ``slowdown`` x their unloaded time, at
    least, under any schedule (see the module doc)."""
    per_link: dict[tuple[str, int], list[tuple[float, float, float, int]]] = defaultdict(list)
    for j in jobs:
        due = j.start_us + slowdown * j.unloaded_us
        for link, busy in j.links:
            per_link[link].append((j.start_us, due, busy, j.msg_id))
    windows: list[tuple[float, int, frozenset[int]]] = []
    for items in per_link.values():
        windows += _overloaded_windows(items)
    windows.sort(key=lambda w: (w[0], w[1]))
    used: set[int] = set()
    late = 0
    for _due, _size, ids in windows:
        if not ids & used:
            used |= ids
            late += 1
    return late


def _overloaded_windows(items: list[tuple[float, float, float, int]]
                        ) -> list[tuple[float, int, frozenset[int]]]:
    """For each start time ``r`` on one link, the first deadline ``d`` (earliest) at
    which the messages in ``[r, d]`` need more than ``d - r``: (d, size, their ids).

    Windows are looked for up to twice the longest span (start to due) of one message
    on the link: a shorter search finds fewer windows, never a wrong one, so the bound
    stays valid, and it keeps the scan short where messages are many and small."""
    by_due = sorted(items, key=lambda i: i[1])
    dues = [i[1] for i in by_due]
    horizon = 2 * max(due - start for start, due, _b, _i in items)
    out = []
    for r in sorted({i[0] for i in items}):
        work, ids = 0.0, []
        for k in range(bisect.bisect_left(dues, r), len(by_due)):
            start, due, busy, msg_id = by_due[k]
            if due - r > horizon:
                break
            if start >= r:
                work += busy
                ids.append(msg_id)
                if work > due - r + _EPS:
                    out.append((due, len(ids), frozenset(ids)))
                    break
    return out


def allowed_above(count: int, pct: float) -> int:
    """How many samples a nearest-rank percentile (taillab.report.percentile) leaves
    above its rank."""
    return count - nearest_rank(count, pct)


def percentile_floor(jobs_per_seed: list[list[Job]], pct: float, hi: float = 64.0) -> float:
    """The largest slowdown ``s`` such that, pooled over the seeds, more messages must
    miss ``s`` than the percentile ``pct`` allows above its rank: every schedule's
    ``pct`` is then above ``s``. 1.0 when no such ``s`` exists (the traffic alone does
    not stop a scheduler from reaching its unloaded time)."""
    count = sum(len(jobs) for jobs in jobs_per_seed)
    if not count:
        return math.nan
    allowed = allowed_above(count, pct)

    def forced(s: float) -> bool:
        return sum(late_lower_bound(jobs, s) for jobs in jobs_per_seed) > allowed

    lo = 1.0
    if not forced(lo):
        return 1.0
    if forced(hi):
        return hi
    for _ in range(_BISECT_STEPS):
        mid = math.sqrt(lo * hi)
        if forced(mid):
            lo = mid
        else:
            hi = mid
    return lo


def class_floors(scenario: Scenario, classes: Iterable[str] | None = None,
                 pcts: tuple[float, ...] = (99.0, 99.9)) -> dict[str, dict[str, float]]:
    """Per class (traffic spec name; every class when ``classes`` is None) and per size
    band of the report (Scenario.size_bands): the floor of each percentile over the
    scenario's seeds, from the messages the scenario offers."""
    names = [t.name for t in scenario.traffic] if classes is None else list(classes)
    groups: dict[str, tuple[str, int, float]] = {n: (n, -1, math.inf) for n in names}
    groups.update({b: g for b, g in scenario.size_bands().items() if g[0] in names})
    per_seed = {seed: generate(scenario, seed) for seed in scenario.seeds}
    out: dict[str, dict[str, float]] = {}
    for group, (name, above, upto) in groups.items():
        jobs = [jobs_of(scenario, [m for m in msgs
                                   if m.cls == name and above < m.size <= upto])
                for msgs in per_seed.values()]
        if any(jobs):
            out[group] = {f"p{pct:g}".replace(".", ""): percentile_floor(jobs, pct, FLOOR_CAP)
                          for pct in pcts}
    return out
