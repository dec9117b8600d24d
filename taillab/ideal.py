"""The ``ideal-srpt`` reference scheme: pFabric's "Ideal", a flow-level central schedule.

What a scheme could achieve on the lab's traffic, as opposed to what the traffic alone
forces (taillab.bounds): a fluid model with no packets, queues, pauses or congestion
control. At every arrival and completion (and only then) the messages in flight are
sorted by remaining bytes, and each in turn gets the largest rate its path still has
(greedy shortest-remaining-processing-time, ties by arrival). A path is the sender's
host link, its leaf's uplinks (every spine's capacity pooled: a central scheduler may
spread a message), the receiver leaf's downlinks and the receiver's host link (at a
slow receiver, its receive rate).

Each message carries its wire bytes (payload and per-packet headers), like the bound.
Its completion is when its last bit leaves the fluid links plus what the unloaded time
adds beyond its bottleneck's serialisation (pipeline fill and propagation), so a
message alone finishes at exactly its unloaded time (slowdown 1.0), the denominator the
other schemes divide by. Every message of the offered traffic (all classes, the same
seeds) is scheduled; the run stops at the scenario's duration plus drain, as the
packet-level cells do.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from taillab.leafspine import Fabric
from taillab.metrics import unloaded_us
from taillab.roce import wire_bytes
from taillab.scenario import Scenario
from taillab.traffic import FabricMessage

SCHEME = "ideal-srpt"
_TINY = 1e-9               # share of a link's rate treated as nothing left (float noise)


@dataclass
class _Flow:
    msg: FabricMessage
    remaining: float                  # wire bits still to send
    wire: float
    links: tuple[int, ...]
    overhead_us: float                # unloaded time beyond the bottleneck's serialisation
    rate: float = 0.0                 # bits per µs
    first_us: float = math.nan        # when it first got a rate


@dataclass
class FluidResult:
    """What :func:`schedule` returns: (message, completion µs) in completion order, when
    each message first got a rate, the payload bytes per class delivered by the end of
    the scenario's duration (as the packet-level cells count goodput), events."""

    completions: list[tuple[FabricMessage, float]] = field(default_factory=list)
    first_tx_us: dict[int, float] = field(default_factory=dict)
    delivered_bytes: dict[str, float] = field(default_factory=dict)
    events: int = 0


class _Links:
    """Link indices and capacities (bits per µs) of the scenario's fabric."""

    def __init__(self, scenario: Scenario) -> None:
        topo = scenario.topology
        self.fabric = Fabric(topo)
        self.scenario = scenario
        n, host = topo.num_hosts, topo.host_gbps * 1e3
        self.slow = {s.host: s.rx_gbps * 1e9 for s in scenario.slow_receivers}
        rx = [min(host, self.slow.get(h, math.inf) / 1e6) for h in range(n)]
        pool = topo.spines * topo.fabric_gbps * 1e3
        # tx[h] = h, rx[h] = n + h, up[leaf] = 2n + leaf, down[leaf] = 2n + leaves + leaf
        self.capacity = [host] * n + rx + [pool] * (2 * topo.leaves)

    def path(self, sender: int, receiver: int) -> tuple[int, ...]:
        n, leaves = self.scenario.topology.num_hosts, self.scenario.topology.leaves
        ls, lr = self.fabric.leaf_of(sender), self.fabric.leaf_of(receiver)
        if ls == lr:
            return sender, n + receiver
        return sender, 2 * n + ls, 2 * n + leaves + lr, n + receiver

    def flow(self, m: FabricMessage) -> _Flow:
        topo = self.scenario.topology
        wire = wire_bytes(m.size, topo.mtu_payload) * 8.0
        links = self.path(m.sender, m.receiver)
        base = unloaded_us(m.size, topo.mtu_payload,
                           tuple(self.fabric.path_rates(m.sender, m.receiver)), topo.prop_us,
                           self.slow.get(m.receiver))
        bottleneck = min(self.capacity[k] for k in links)
        return _Flow(m, wire, wire, links, max(0.0, base - wire / bottleneck))


def _allocate(heads: list[_Flow], capacity: list[float], now: float) -> None:
    """Greedy SRPT over ``heads`` (shortest remaining first): each takes what its path
    has left."""
    left = capacity.copy()
    for f in heads:
        rate = min(left[k] for k in f.links)
        if rate <= _TINY * min(capacity[k] for k in f.links):
            f.rate = 0.0
            continue
        f.rate = rate
        for k in f.links:
            left[k] -= rate
        if math.isnan(f.first_us):
            f.first_us = now


Queue = list[tuple[float, int, _Flow]]     # a path's messages: (remaining, id, flow) heap


def schedule(scenario: Scenario, messages: list[FabricMessage]) -> FluidResult:
    """The fluid SRPT schedule of ``messages`` (in start order) up to the scenario's
    duration plus drain.

    Only the shortest message of each path can get a rate: once it has taken what its
    path has left, one of the path's links has nothing more. So each path keeps its
    messages in a heap by remaining bytes, and only the paths' heads are sorted and
    served; a served head's key is refreshed, as it stays its path's shortest."""
    links = _Links(scenario)
    horizon = scenario.duration_us + scenario.drain_us
    out = FluidResult()
    paths: dict[tuple[int, ...], Queue] = {}
    now, i = 0.0, 0
    checkpoint = scenario.duration_us      # goodput counts bytes delivered by then
    while i < len(messages) or paths:
        while i < len(messages) and messages[i].start_us <= now:
            f = links.flow(messages[i])
            heapq.heappush(paths.setdefault(f.links, []), (f.remaining, f.msg.msg_id, f))
            i += 1
        heads = [e[2] for e in sorted(q[0] for q in paths.values())]
        _allocate(heads, links.capacity, now)
        out.events += 1
        next_arrival = messages[i].start_us if i < len(messages) else math.inf
        next_done = min((f.remaining / f.rate for f in heads if f.rate), default=math.inf)
        t = min(next_arrival, now + next_done, checkpoint)
        if t > horizon:
            break
        _advance(paths, heads, t - now, out, t)
        now = t
        if now == checkpoint:
            _count_delivered(out, paths)
            checkpoint = math.inf
    if not math.isinf(checkpoint):
        _count_delivered(out, paths)
    return out


def _advance(paths: dict[tuple[int, ...], Queue], heads: list[_Flow], step: float,
             out: FluidResult, now: float) -> None:
    """The heads send at their rates for ``step`` µs; those done are recorded in
    ``out`` (completing at ``now``) and leave their path's heap."""
    for f in heads:
        if not f.rate:
            continue
        f.remaining -= f.rate * step
        queue = paths[f.links]
        if f.remaining <= _TINY * f.rate:
            out.completions.append((f.msg, now + f.overhead_us))
            out.first_tx_us[f.msg.msg_id] = f.first_us
            heapq.heappop(queue)
            if not queue:
                del paths[f.links]
        else:
            heapq.heapreplace(queue, (f.remaining, f.msg.msg_id, f))


def _count_delivered(out: FluidResult, paths: dict[tuple[int, ...], Queue]) -> None:
    """Payload delivered so far: every message completed, and the sent share of each
    one in flight."""
    for m, _ in out.completions:
        out.delivered_bytes[m.cls] = out.delivered_bytes.get(m.cls, 0.0) + m.size
    for f in (e[2] for q in paths.values() for e in q):
        out.delivered_bytes[f.msg.cls] = (out.delivered_bytes.get(f.msg.cls, 0.0)
                                          + f.msg.size * (1 - f.remaining / f.wire))
