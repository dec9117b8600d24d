"""The native egress queues of ``softswitch run`` (``rt_queues.c``) seen from Python.

:class:`~softswitch.tm.TrafficManager` hands an egress port's queues to C while their
configuration is what C implements (BMv2's strict priority, packet capacity and pps
rate) and takes them back, packets and all, the moment Python must touch them; this
class is what it talks to: configuration in, counters and packets out, as the
traffic manager's own types (:class:`~softswitch.tm.scheduler.QueuedPacket` holding
the same work items :class:`~softswitch.v1model.queueing.QueuedSwitch` queues).

:class:`NativeHop` is the tail-latency lab's switch hop in the same C file: ingress,
the whole traffic manager as the lab configures it, and egress, one call per event.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from softswitch.tm import TrafficManager
from softswitch.tm.native import Evicted, NativeTake
from softswitch.tm.scheduler import Dequeued, QueuedPacket
from softswitch.v1model.switch import _Work


class NativeQueues:
    """One C state of native queues for a :class:`FastSwitch` pipeline
    (``num_queues`` priorities per port, as the traffic manager's)."""

    def __init__(self, switch: Any, num_queues: int) -> None:
        self.switch = switch
        self._mod = switch._mod
        self.capsule = self._mod.queues_new(num_queues)

    def adopt(self, port: int, config: list[tuple[int, float, float]], busy_us: float) -> None:
        """Make ``port``'s (empty) queues native: (capacity, rate, last departure) each."""
        self._mod.queues_adopt(self.capsule, port, config, busy_us)

    def configure(self, port: int, priority: int, capacity: int, rate_pps: float) -> None:
        self._mod.queues_config(self.capsule, port, priority, capacity, float(rate_pps))

    def evict(self, port: int) -> Evicted:
        busy, queues = self._mod.queues_evict(self.capsule, port)
        out = []
        for last, packets in queues:
            out.append((last, [(QueuedPacket(self._work(t), t[2], t[3], t[6], t[7], t[8]), t[4])
                               for t in packets]))
        return Evicted(busy, out)

    def take(self) -> NativeTake | None:
        """The counters since the last take; None when none changed."""
        got = self._mod.queues_take(self.capsule)
        return None if got is None else NativeTake(*got)

    def next_event_us(self, now_us: float) -> float | None:
        return self._mod.queues_next(self.capsule, float(now_us))  # type: ignore[no-any-return]

    def depth(self, port: int, priority: int | None) -> int:
        return int(self._mod.queues_depth(self.capsule, port, -1 if priority is None
                                          else priority))

    def held(self) -> int:
        """Packets in all native queues."""
        return int(self._mod.queues_depth(self.capsule, -1, -1))

    def drain(self, now_us: float) -> tuple[list[tuple[int, bytes]], Any]:
        """Egress and deparser of every packet that may leave at ``now_us``: the frames
        out and what Python must finish (:meth:`finish`), or None."""
        return self._mod.queues_drain(self.switch._ctx, self.capsule,  # type: ignore[no-any-return]
                                      float(now_us))

    def finish(self, handback: Any, now_us: float) -> tuple[deque[_Work], list[_Work]]:
        """A drain's hand-back as work: the remaining work items of the packet whose
        egress made them (recirculation, egress clone), and the packets popped after
        it, each with its :class:`Dequeued` (egress still to run)."""
        items, pending = handback
        work = self.switch.work_of(items)
        popped = []
        for t in pending:
            w = self._work(t)
            w.queue = Dequeued(QueuedPacket(None, t[2], t[3], t[6], t[7], now_us), t[1], t[8],
                               now_us - t[6], now_us)
            popped.append(w)
        return work, popped

    def _work(self, t: tuple[Any, ...]) -> _Work:
        (w,) = self.switch.work_of([t[:6]])
        return w



# (outs as (port, frame, time its last bit is on the wire), PFC events as (ingress port,
# priority, pause?) or None, the next time a packet may leave or None)
HopStep = tuple[list[tuple[int, bytes, float]], list[tuple[int, int, bool]] | None,
                float | None]


class NativeHop:
    """A switch hop in C (``rt_queues.c``, the lab hop): ingress, the traffic manager
    and egress of a :class:`FastSwitch` in one call per event, the traffic manager's
    whole configuration (link rates, depths, byte capacities, rates, DWRR weights, PFC
    thresholds) taken from ``tm`` as it stands, empty. ``tm`` is not used after: the
    hop holds the queues, their pauses and the PFC state from then on (no statistics).
    Virtual time only: the traffic manager must not catch up (``catch_up_us`` 0)."""

    def __init__(self, switch: Any, tm: TrafficManager) -> None:
        if tm.queued or tm.native_ports or tm.pfc.held or tm.pfc.paused or tm.catch_up_us \
                or not tm.per_queue_depth:
            raise ValueError("a native hop starts from an idle traffic manager with "
                             "per-queue depths and no catch-up")
        switch._settle()
        fns = switch._mod.queues_new()
        self.functions: dict[str, Any] = fns      # the lab hop's and fabric's C functions
        self.ctx = switch._ctx
        d = tm.defaults
        self.capsule = fns["hop_new"](tm.num_queues, (d.capacity_pkts, d.capacity_bytes,
                                                      float(d.rate_pps), d.weight),
                                      float(tm.default_link_rate_bps))
        for number, ep in tm.ports.items():
            queues = [(q.config.capacity_pkts, q.config.capacity_bytes,
                       float(q.config.rate_pps), q.config.weight, q.last_sent_us,
                       q.paused_until_us) for q in ep.queues]
            fns["hop_port"](self.capsule, number, float(ep.link_rate_bps),
                            float(ep.busy_until_us), queues)
        for (port, prio), th in tm.pfc.thresholds.items():
            fns["hop_pfc"](self.capsule, port, prio, th.xoff, th.xon)
        self.receive_fn = fns["hop_receive"]
        self.service_fn = fns["hop_service"]
        self._pause = fns["hop_pause"]
        self._paused = fns["hop_paused"]
        self._depth = fns["hop_depth"]

    def receive(self, port: int, data: bytes, now_us: float) -> HopStep:
        """A packet in on ``port``, then what :meth:`service` does."""
        return self.receive_fn(self.ctx, self.capsule, port, data, now_us)  # type: ignore[no-any-return]

    def service(self, now_us: float) -> HopStep:
        """Every packet whose turn has come at ``now_us`` through egress."""
        return self.service_fn(self.ctx, self.capsule, now_us)  # type: ignore[no-any-return]

    def pause(self, port: int, priority: int, quanta: int, now_us: float) -> None:
        """A PFC frame received on ``port`` (:meth:`EgressPort.pause`)."""
        self._pause(self.capsule, port, priority, quanta, now_us)

    def paused(self, port: int, priority: int) -> bool:
        """Whether this switch holds (``port``, ``priority``) paused (XOFF sent)."""
        return bool(self._paused(self.capsule, port, priority))

    def depth(self, port: int | None = None) -> int:
        """Packets held by ``port`` (None: by the whole switch)."""
        return int(self._depth(self.capsule, -1 if port is None else port))
