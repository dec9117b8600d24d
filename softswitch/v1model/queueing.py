"""A v1model switch with simple_switch's traffic manager between ingress and egress.

:meth:`Switch.inject` runs a packet through ingress and egress at once (what STF tests
need). A real switch queues between the two: :class:`QueuedSwitch` puts every packet
instance that ingress (or a clone, multicast copy or egress clone) sends to an egress
port into :class:`softswitch.tm.TrafficManager`, in the queue its
``standard_metadata.priority`` selects, and runs egress only when the scheduler lets it
leave — so ``enq_qdepth``, ``deq_qdepth``, ``deq_timedelta`` and ``enq_timestamp`` carry
real values and a small urgent packet can overtake queued bulk. Time is the caller's
(microseconds): the wall clock in ``softswitch run``, a simulated one in the lab.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from softswitch.core.control import PacketOut
from softswitch.core.execution import ParserError
from softswitch.tm import TrafficManager
from softswitch.v1model.switch import MAX_PASSES, Switch, _Work


class QueuedSwitch:
    """Ingress → traffic manager → egress, driven by :meth:`receive` and
    :meth:`transmit_ready` at the caller's notion of now."""

    def __init__(self, switch: Switch, tm: TrafficManager) -> None:
        self.switch = switch
        self.tm = tm
        self.dropped_at_enqueue = 0

    def receive(self, port: int, data: bytes, now_us: float,
                out: list[PacketOut] | None = None) -> None:
        """A packet arrives on ``port``: run ingress (with resubmits) and queue its copies.

        With ``out`` (``softswitch run``, which transmits right after each packet), a
        copy whose queue is empty and free to send now goes through egress at once
        (:meth:`TrafficManager.pass_through`: same metadata and counters as a trip
        through the queue at this ``now_us``), and what leaves is appended to ``out``."""
        self._run(deque([_Work("ingress", port, bytes(data))]), now_us,
                  [] if out is None else out, out is not None)

    def next_event_us(self, now_us: float) -> float | None:
        return self.tm.next_event_us(now_us)

    def transmit_ready(self, now_us: float) -> list[tuple[PacketOut, float]]:
        """Packets whose turn has come: run their egress (recirculations go back to
        ingress) and return what leaves, with the time its last bit is on the wire."""
        out: list[tuple[PacketOut, float]] = []
        for dq in self.tm.dequeue_ready(now_us):
            w: _Work = dq.packet.item
            dq.packet.item = None     # w.queue -> dq -> w would be a cycle (see _pass_through)
            w.queue = dq
            emitted: list[PacketOut] = []
            work: deque[_Work] = deque([w])
            self._run(work, now_us, emitted)
            out.extend((p, dq.tx_done_us) for p in emitted)
        return out

    def transmit_native(self, now_us: float, out: list[PacketOut]) -> None:
        """What :meth:`transmit_ready` does for the ports whose queues are native
        (``TrafficManager.native``): one drain in C, and in Python what a packet's
        egress left (a recirculation, an egress clone) and the packets popped after it."""
        native = self.tm.native
        if native is None:
            return
        frames, handback = native.drain(now_us)
        out.extend(PacketOut(p, d) for p, d in frames)
        if handback is not None:
            self.finish_native(handback, now_us, out)

    def finish_native(self, handback: Any, now_us: float, out: list[PacketOut]) -> None:
        """Finish a native drain's hand-back as :meth:`transmit_ready` would have gone on
        (its first item follows the egress pass of a dequeued packet)."""
        assert self.tm.native is not None
        work, popped = self.tm.native.finish(handback, now_us)
        self._run(work, now_us, out, False, 1)
        for w in popped:
            self._run(deque([w]), now_us, out)

    def resume(self, work: deque[_Work], now_us: float, out: list[PacketOut],
               passes: int) -> None:
        """Finish a packet that arrived at ``now_us`` and whose first ``passes`` work
        items ran elsewhere (the native loop of ``softswitch run``): as :meth:`receive`
        with ``out`` would have gone on."""
        self._run(work, now_us, out, True, passes)

    def _run(self, work: deque[_Work], now_us: float, out: list[PacketOut],
             pass_through: bool = False, passes: int = 0) -> None:
        """Process work items: ingress runs now; egress items are queued unless they have
        just been dequeued (``queue`` set), in which case egress runs now."""
        self.switch.clock.freeze(int(now_us))
        while work and passes < MAX_PASSES:
            passes += 1
            w = work.popleft()
            try:
                if w.stage == "ingress":
                    self.switch._ingress(w, work)
                elif w.queue is None:
                    if pass_through and self._pass_through(w, now_us):
                        self.switch._egress(w, work, out)
                    else:
                        self._enqueue(w, now_us)
                else:
                    self.switch._egress(w, work, out)
            except ParserError:
                continue  # a stack/parse fault outside the parser: BMv2 drops the packet

    def _pass_through(self, w: _Work, now_us: float) -> bool:
        sm = w.sm
        dq = self.tm.pass_through(w, w.length, w.port, int(getattr(sm, "f_priority", 0)),
                                  int(getattr(sm, "f_ingress_port", 0)), now_us)
        if dq is None:
            return False
        # Egress reads only the stay's metadata. Left in, the packet would reach itself
        # (w.queue.packet.item is w): a cycle per packet, freed only by the cyclic
        # collector, whose young-generation passes would then stop a busy switch for
        # long pauses every few tens of thousands of packets.
        dq.packet.item = None
        w.queue = dq
        return True

    def _enqueue(self, w: _Work, now_us: float) -> None:
        priority = int(getattr(w.sm, "f_priority", 0))
        size = w.length
        ingress = int(getattr(w.sm, "f_ingress_port", 0))
        if self.tm.enqueue(w, size, w.port, priority, ingress, now_us) is None:
            self.dropped_at_enqueue += 1
