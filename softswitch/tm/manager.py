"""The traffic manager between ingress and egress: one :class:`EgressPort` per port.

It mirrors BMv2's ``egress_buffers`` (``--priority-queues N``, capacity 64 packets,
``set_queue_depth``/``set_queue_rate`` per port or per port+priority) and carries the
softswitch extensions (DWRR weights, byte capacity, link rate, PFC). Callers pass the
current time in microseconds; :meth:`next_event_us` tells an event loop when to call
:meth:`dequeue_ready` again, so it works on the wall clock and on simulated time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.tm.native import NativeQueueStore
from softswitch.tm.pfc import PfcEvent, PfcMonitor, PfcThresholds
from softswitch.tm.scheduler import Dequeued, EgressPort, QueueConfig, QueuedPacket

GATE_PORTS = 512        # egress ports a pass-through gate covers (v1model: 9-bit ports)


class TrafficManager:
    """``clock``: the caller's time in µs, read when a port's queues are created (a rate
    limit counts its first interval from then, as BMv2's does); default: time 0.
    ``catch_up_us``: for callers on the wall clock, how late a dequeue may come and the
    link rate still hold (:attr:`EgressPort.catch_up_us`); 0 in virtual time."""

    def __init__(self, num_queues: int = 1, per_queue_depth: bool = True,
                 link_rate_bps: float = 0.0,
                 clock: Callable[[], float] | None = None,
                 catch_up_us: float = 0.0) -> None:
        if not 1 <= num_queues <= 8:
            raise ValueError(f"--priority-queues must be 1..8, not {num_queues}")
        self.num_queues = num_queues
        self.per_queue_depth = per_queue_depth
        self.default_link_rate_bps = link_rate_bps
        self.clock = clock or (lambda: 0.0)
        self.catch_up_us = catch_up_us
        # what set_queue_rate/set_queue_depth without a port set: every port, also the
        # ones that carry their first packet later (BMv2's set_*_for_all)
        self.defaults = QueueConfig()
        self.ports: dict[int, EgressPort] = {}
        self.pfc = PfcMonitor()
        self.pfc_received: dict[tuple[int, int], int] = {}  # (port, priority) -> frames
        self._ingress_of: dict[int, int] = {}  # id(QueuedPacket) -> ingress port
        # packets held in all queues, and the ports holding them: an idle switch (the
        # common case between bursts) answers dequeue_ready/next_event_us without a scan
        self.queued = 0
        self.enqueues = 0                      # calls of enqueue, dropped ones included
        self._holding: dict[int, EgressPort] = {}
        # ports whose queues changed (created, enqueue, dequeue) since the last
        # pass_through_gate: the only ones a refresh of a gate must look at again
        self.touched: set[int] = set()
        # Native queues (``softswitch run`` on the C fast path, v1model/native_queues.py): the
        # ports whose queues C holds, with their packets; this object keeps their
        # configuration and statistics (folded in by sync_native) and takes a port back
        # before anything else touches it (claim).
        self.native: NativeQueueStore | None = None
        self.native_ports: set[int] = set()

    def port(self, port: int) -> EgressPort:
        """The egress port, created on first use with the switch-wide defaults."""
        ep = self.ports.get(port)
        if ep is None:
            ep = EgressPort(port, self.num_queues, self.default_link_rate_bps,
                            self.per_queue_depth, self.clock(), self.defaults)
            ep.catch_up_us = self.catch_up_us
            self.ports[port] = ep
            self.touched.add(port)
        return ep

    # --- native queues ---------------------------------------------------------------
    def attach_native(self, native: NativeQueueStore | None) -> None:
        """Use ``native`` (None: no native queues) from now on; ports held by the
        previous one come back to Python first."""
        for number in list(self.native_ports):
            self.claim(number)
        self.native = native

    def claim(self, port: int) -> EgressPort:
        """The port with its queues in Python: taken back from the native queues,
        packets, departures and counters as they are, when C held them."""
        ep = self.port(port)
        if port not in self.native_ports:
            return ep
        assert self.native is not None
        self.sync_native()
        back = self.native.evict(port)
        self.native_ports.discard(port)
        self.touched.add(port)
        ep.busy_until_us = max(ep.busy_until_us, back.busy_us)
        for q, (last, packets) in zip(ep.queues, back.queues, strict=False):
            q.last_sent_us = last
            for pkt, ingress in packets:
                q.packets.append(pkt)
                q.bytes += pkt.size
                self._ingress_of[id(pkt)] = ingress
            ep.held += len(packets)
            self.queued += len(packets)
        ep.changed()
        if ep.held:
            self._holding[port] = ep
        return ep

    def sync_native(self) -> int:
        """Fold the native queues' counters into the statistics (queue stats, enqueue
        calls, PFC held counts); how many packets they dropped since the last call."""
        if self.native is None:
            return 0
        got = self.native.take()
        if got is None:
            return 0
        self.enqueues += got.enqueues
        for port, prio, enq, deq, drop, size, top in got.queues:
            st = self.ports[port].queues[prio].stats
            st.enqueued += enq
            st.dequeued += deq
            st.dropped += drop
            st.bytes_enqueued += size
            st.max_depth = max(st.max_depth, top)
        held = self.pfc.held
        for ingress, prio, change in got.held:
            held[(ingress, prio)] = max(held.get((ingress, prio), 0) + change, 0)
        return got.dropped

    def _may_go_native(self, ep: EgressPort, now_us: float) -> bool:
        """Whether C can hold the port's queues exactly as :class:`EgressPort` would:
        empty queues, per-queue depths, strict priority, packet capacity and pps rate
        only (no link rate, DWRR weight, byte capacity, pause) and no PFC thresholds."""
        return (self.native is not None and not ep.held and self.per_queue_depth
                and not ep.link_rate_bps and not self.pfc.thresholds
                and 0 <= ep.port < GATE_PORTS
                and all(not q.config.weight and not q.config.capacity_bytes
                        and q.paused_until_us <= now_us for q in ep.queues))

    def _adopt(self, ep: EgressPort) -> None:
        assert self.native is not None
        self.native.adopt(ep.port, [(q.config.capacity_pkts, float(q.config.rate_pps),
                                     q.last_sent_us) for q in ep.queues], ep.busy_until_us)
        self.native_ports.add(ep.port)

    # --- runtime configuration (simple_switch_CLI set_queue_*) -----------------------
    def _targets(self, port: int | None, priority: int | None,
                 claim: bool = False) -> list[tuple[EgressPort, int]]:
        """The queues a set_queue_* names; with ``claim``, their ports back in Python
        (the setting is one C does not implement)."""
        get = self.claim if claim else self.port
        ports = [get(port)] if port is not None else [get(n) for n in list(self.ports)]
        prios = [priority] if priority is not None else list(range(self.num_queues))
        return [(ep, p) for ep in ports for p in prios]

    def set_queue_rate(self, pps: float, port: int | None = None,
                       priority: int | None = None) -> None:
        if pps < 0:
            raise ValueError(f"queue rate must be >= 0 packets/s, not {pps}")
        if port is None and priority is None:
            self.defaults.rate_pps = pps
        for ep, p in self._targets(port, priority):
            ep.queue_config(p).rate_pps = pps
            self._configure_native(ep, p)

    def set_queue_depth(self, packets: int, port: int | None = None,
                        priority: int | None = None) -> None:
        if packets < 1:
            raise ValueError(f"queue depth must be >= 1 packet, not {packets}")
        if port is None and priority is None:
            self.defaults.capacity_pkts = packets
        for ep, p in self._targets(port, priority):
            ep.queue_config(p).capacity_pkts = packets
            self._configure_native(ep, p)

    def _configure_native(self, ep: EgressPort, priority: int) -> None:
        if ep.port in self.native_ports and self.native is not None:
            cfg = ep.queue_config(priority)
            self.native.configure(ep.port, priority, cfg.capacity_pkts, cfg.rate_pps)

    def set_queue_weight(self, weight: int, port: int | None = None,
                         priority: int | None = None) -> None:
        """DWRR weight (extension); 0 returns the queue to strict priority."""
        if weight < 0:
            raise ValueError(f"queue weight must be >= 0, not {weight}")
        for ep, p in self._targets(port, priority, claim=True):
            ep.queue_config(p).weight = weight

    def set_link_rate(self, bps: float, port: int) -> None:
        if bps < 0:
            raise ValueError(f"link rate must be >= 0 bits/s, not {bps}")
        self.claim(port).link_rate_bps = bps

    def set_pfc(self, ingress_port: int, priority: int, thresholds: PfcThresholds | None) -> None:
        if thresholds is not None:         # PFC counts held packets per ingress in Python
            for number in list(self.native_ports):
                self.claim(number)
        self.pfc.configure(ingress_port, priority, thresholds)

    def pause(self, port: int, priority: int, quanta: int, now_us: float) -> None:
        """A received PFC frame pauses ``priority`` of ``port`` (:meth:`EgressPort.pause`)."""
        self.claim(port).pause(priority, quanta, now_us)

    # --- data path ------------------------------------------------------------------
    def enqueue(self, item: Any, size: int, egress_port: int, priority: int,
                ingress_port: int, now_us: float) -> QueuedPacket | None:
        """Queue a packet for ``egress_port``; None when dropped (full queue or a priority
        the port does not have, as BMv2)."""
        ep = self.ports.get(egress_port)
        if ep is None or egress_port in self.native_ports:
            ep = self.claim(egress_port)
        queued = ep.enqueue(item, size, priority, now_us)
        self.enqueues += 1
        self.touched.add(egress_port)
        if queued is not None:
            self.queued += 1
            self._holding[egress_port] = ep
            self._ingress_of[id(queued)] = ingress_port
            self.pfc.on_enqueue(ingress_port, priority, now_us)
        return queued

    def pass_through(self, item: Any, size: int, egress_port: int, priority: int,
                     ingress_port: int, now_us: float) -> Dequeued | None:
        """Enqueue and dequeue at once, when that is what :meth:`enqueue` followed by
        :meth:`dequeue_ready` at ``now_us`` would do for this packet
        (:meth:`EgressPort.pass_through`) and (ingress port, priority) has no PFC
        thresholds. None otherwise (the caller enqueues as usual)."""
        if not 0 <= priority < self.num_queues or (ingress_port, priority) in \
                self.pfc.thresholds:
            return None
        return self.claim(egress_port).pass_through(item, size, priority, now_us)

    def pass_through_gate(self, ingress_port: int, now_us: float,
                          gate: bytearray | None = None) -> bytearray:
        """For a burst from ``ingress_port`` run without a call per packet (the native
        loop of ``softswitch run``, ``fastpath/rt_loop.c``), two bit masks per egress port
        (0..511). Byte ``port``: bit p set when :meth:`pass_through` would pass packets
        of priority p to that port from ``now_us`` on, for as long as only pass-throughs
        happen (:meth:`EgressPort.pass_through_mask`, and no PFC thresholds for
        (``ingress_port``, p)). Byte ``GATE_PORTS + port``: bit p set when the queue is
        full (:meth:`EgressPort.full_mask`): :meth:`enqueue` drops until something
        leaves, which :meth:`next_event_us` bounds. Ports not created yet stay closed:
        the first packet to a port takes the usual path, which creates it. A port whose
        queues may be native (:meth:`_may_go_native`) is handed to the native queues
        here, and its bytes say nothing: the loop asks the native queues first.

        With ``gate``, this method's earlier answer for the same ingress port, while no
        configuration changed and no pause arrived since: only the ports whose queues
        changed since (``touched``) are looked at again, so a burst with many packets
        for a full, rate-limited queue (elephants) does not rebuild it for each one."""
        if gate is None:
            gate = bytearray(2 * GATE_PORTS)
            ports = list(self.ports)
        else:
            ports = list(self.touched)
        self.touched.clear()
        thresholds = self.pfc.thresholds
        for number in ports:
            if 0 <= number < GATE_PORTS:
                ep = self.ports[number]
                if number not in self.native_ports and self._may_go_native(ep, now_us):
                    self._adopt(ep)
                if number in self.native_ports:
                    gate[number] = gate[GATE_PORTS + number] = 0
                    continue
                mask = ep.pass_through_mask(now_us)
                if mask and thresholds:
                    for prio in range(self.num_queues):
                        if (ingress_port, prio) in thresholds:
                            mask &= ~(1 << prio)
                gate[number] = mask
                gate[GATE_PORTS + number] = ep.full_mask() if ep.held else 0
        return gate

    def count_passed(self, passed: list[tuple[int, int, int, int, float, int]]) -> int:
        """Apply the native loop's tallies, (egress port, priority, packets, bytes, time
        of the last one, dropped?) each, as :meth:`pass_through` (or :meth:`enqueue`
        dropping them) would have one by one; how many were dropped."""
        dropped = 0
        for port, priority, packets, size, last_us, drop in passed:
            if drop:
                self.ports[port].count_dropped(priority, packets)
                self.enqueues += packets
                dropped += packets
            else:
                self.ports[port].count_passed(priority, packets, size, last_us)
        return dropped

    def next_event_us(self, now_us: float) -> float | None:
        """When the next packet may leave, native queues included; None if none waits."""
        native = self.native.next_event_us(now_us) if self.native is not None else None
        if not self.queued:
            return native
        best = None
        for ep in self._holding.values():
            t = ep.next_event_us(now_us)
            if t is not None and (best is None or t < best):
                best = t
        if native is not None and (best is None or native < best):
            best = native
        return best

    def holding(self) -> bool:
        """Whether any queue holds a packet, native ones included."""
        return bool(self.queued) or (self.native is not None and self.native.held() > 0)

    def dequeue_ready(self, now_us: float) -> list[Dequeued]:
        """Every packet that may leave at ``now_us`` (with a link rate, those whose turn
        on the link has come: one per port per call in virtual time, more when a late
        wall-clock caller catches up; all eligible ones otherwise)."""
        out: list[Dequeued] = []
        if not self.queued:
            return out
        touched = self.touched
        emptied = []
        ingress_of = self._ingress_of
        on_dequeue = self.pfc.on_dequeue
        for number, ep in self._holding.items():
            touched.add(number)
            if now_us < ep.busy_until_us:
                continue          # still sending (a held port: ep.dequeue says None)
            while (d := ep.dequeue(now_us)) is not None:
                on_dequeue(ingress_of.pop(id(d.packet), 0), d.packet.priority, now_us)
                out.append(d)
                if ep.link_rate_bps and ep.busy_until_us > now_us:
                    break
            if not ep.held:
                emptied.append(number)
        for number in emptied:
            del self._holding[number]
        self.queued -= len(out)
        return out

    def flush(self) -> int:
        """Drop every queued packet (a new pipeline cannot run the old one's packets);
        configuration (rates, depths, weights, PFC) stays. Returns how many were dropped."""
        for number in list(self.native_ports):
            self.claim(number)
        dropped = 0
        for ep in self.ports.values():
            for q in ep.queues:
                dropped += len(q.packets)
                q.packets.clear()
                q.bytes = 0
                q.deficit = 0
            ep.held = 0
            ep.changed()
        self.queued = 0
        self._holding.clear()
        self._ingress_of.clear()
        self.touched.update(self.ports)
        self.pfc.held.clear()
        for port, prio in sorted(self.pfc.paused):  # the neighbours must not stay paused
            self.pfc.events.append(PfcEvent(port, prio, False, 0.0))
        self.pfc.paused.clear()
        return dropped

    def depth(self, port: int, priority: int | None = None) -> int:
        ep = self.ports.get(port)
        if ep is not None and port in self.native_ports and self.native is not None:
            ep.depth(priority)          # the same error for a queue the port has not
            return self.native.depth(port, priority)
        return ep.depth(priority) if ep is not None else 0
