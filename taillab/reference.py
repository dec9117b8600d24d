"""Reference scenarios without P4 semantics: one bottleneck port of softswitch's traffic
manager (the scheduler every lab switch uses), fed by Poisson sources or DCQCN senders,
with RED-ECN decided here as the P4 program would.

They exist to validate the lab's substrate against things with known answers: queueing
theory (M/D/1 mean wait, the M/G/1 preemptive-priority response times), DCQCN's
fairness, and ns-3 on the same scenarios (taillab.ns3_check). The P4 pipeline is left
out on purpose: what is checked is the scheduler, the clock and the congestion control,
which the P4 program does not change.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from softswitch.tm.scheduler import EgressPort
from taillab.dcqcn import NotificationPoint, ReactionPoint
from taillab.events import EventLoop

WIRE_BYTES = 1000


@dataclass
class QueueRun:
    """Per-class queueing delays (µs, from arrival to start of transmission) and
    per-message response times (arrival to the last packet's last bit)."""

    waits: dict[int, list[float]] = field(default_factory=dict)
    responses: dict[int, list[float]] = field(default_factory=dict)


def poisson_queue(rate_bps: float, classes: Sequence[tuple[int, float, Sequence[int]]],
                  messages: int, seed: int, warmup_share: float = 0.05) -> QueueRun:
    """A single port at ``rate_bps`` with strict priority between classes.

    ``classes``: (priority, load share of the link, packets-per-message choices); each
    class's messages arrive as a Poisson process and put all their packets in the queue
    at once (a burst from one sender). Every class arrives over the same horizon (long
    enough for about ``messages`` messages of the rarest class): were each class cut at
    its own count, the tail of one would run without the others. Messages arriving in
    the first ``warmup_share`` of the horizon are not measured.
    """
    rng = random.Random(seed)
    port = EgressPort(0, num_queues=8, link_rate_bps=rate_bps)
    for prio, _, _ in classes:
        port.queue_config(prio).capacity_pkts = 10**9
    pkt_us = WIRE_BYTES * 8 / rate_bps * 1e6
    gaps = {prio: sum(sizes) / len(sizes) * pkt_us / load for prio, load, sizes in classes}
    horizon = messages * max(gaps.values()) / (1 - warmup_share)
    warmup = horizon * warmup_share
    arrivals: list[tuple[float, int, int]] = []
    for prio, _, sizes in classes:
        t = rng.expovariate(1 / gaps[prio])
        while t < horizon:
            arrivals.append((t, prio, rng.choice(sizes)))
            t += rng.expovariate(1 / gaps[prio])
    arrivals.sort()
    run = QueueRun({p: [] for p, _, _ in classes}, {p: [] for p, _, _ in classes})
    pending: dict[int, tuple[int, float, int]] = {}   # msg id -> prio, arrival, packets left
    now, i = 0.0, 0
    while i < len(arrivals) or port.depth():
        nxt = port.next_event_us(now)
        if i < len(arrivals) and (nxt is None or arrivals[i][0] <= nxt):
            now, prio, n = arrivals[i]
            pending[i] = (prio, now, n)
            for _ in range(n):
                port.enqueue((i, now >= warmup), WIRE_BYTES, prio, now)
            i += 1
            continue
        now = nxt if nxt is not None else now
        d = port.dequeue(now)
        if d is None:
            continue
        mid, keep = d.packet.item
        prio, arrived, left = pending[mid]
        if keep:
            run.waits[prio].append(d.deq_timedelta_us)
        if left == 1:
            del pending[mid]
            if keep:
                run.responses[prio].append(d.tx_done_us - arrived)
        else:
            pending[mid] = (prio, arrived, left - 1)
    return run


@dataclass
class DcqcnRun:
    windows_us: list[float]
    goodput_bps: list[list[float]]     # per window, per flow
    marks: int = 0
    cnps: int = 0


def dcqcn_bottleneck(flows: int, rate_bps: float, duration_us: float,
                     starts_us: Sequence[float], kmin: int, kmax: int, pmax: float,
                     prop_us: float = 1.0, window_us: float = 1000.0,
                     seed: int = 1) -> DcqcnRun:
    """``flows`` DCQCN senders (each on its own ``rate_bps`` access link) into one port
    of ``rate_bps``; RED-ECN on that port's depth; the receiver's notification point
    returns CNPs (one per 50 µs per flow) after a propagation delay each way."""
    rng = random.Random(seed)
    loop = EventLoop()
    port = EgressPort(0, num_queues=1, link_rate_bps=rate_bps)
    port.queue_config(0).capacity_pkts = 10**9
    rps = [ReactionPoint(rate_bps) for _ in range(flows)]
    npoint = NotificationPoint()
    nwin = int(duration_us // window_us)
    delivered = [[0.0] * flows for _ in range(nwin)]
    run = DcqcnRun([window_us * (w + 1) for w in range(nwin)], [])
    scheduled: list[float | None] = [None]

    def send(f: int) -> None:
        now = loop.now
        loop.at(now + WIRE_BYTES * 8 / rate_bps * 1e6 + prop_us, lambda: arrive(f))
        rps[f].on_sent(WIRE_BYTES, now)
        loop.at(now + WIRE_BYTES * 8 / rps[f].current * 1e6, lambda: send(f))

    def arrive(f: int) -> None:
        depth = port.depth()   # RED on the depth the packet joins, as ecn_marking.p4
        marked = depth >= kmax or (depth > kmin and
                                   rng.random() < pmax * (depth - kmin) / (kmax - kmin))
        run.marks += marked
        port.enqueue((f, marked), WIRE_BYTES, 0, loop.now)
        service()

    def service() -> None:
        now = loop.now
        while (d := port.dequeue(now)) is not None:
            f, marked = d.packet.item
            loop.at(d.tx_done_us + prop_us, lambda f=f, m=marked: receive(f, m))
        nxt = port.next_event_us(now)
        if nxt is not None and (scheduled[0] is None or scheduled[0] <= now
                                or nxt < scheduled[0]):
            scheduled[0] = nxt
            loop.at(nxt, service)

    def receive(f: int, marked: bool) -> None:
        w = int(loop.now // window_us)
        if w < nwin:
            delivered[w][f] += WIRE_BYTES * 8
        if marked and npoint.on_ce(f, loop.now):
            run.cnps += 1
            loop.at(loop.now + 2 * prop_us, lambda: rps[f].on_cnp(loop.now))

    for f in range(flows):
        loop.at(starts_us[f], lambda f=f: send(f))
    loop.run(duration_us)
    run.goodput_bps = [[b / window_us * 1e6 for b in win] for win in delivered]
    return run
