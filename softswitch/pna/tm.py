"""The NIC's transmit queues: one per class of service on every port, on the shared
traffic manager (:mod:`softswitch.tm`).

A NIC has no ingress/egress split: main_control decides everything, and what leaves
waits only in the transmit queues of its port. The packet's class is
``pna_main_output_metadata_t.class_of_service`` (0 unless main_control sets it); class
``c`` waits in queue ``min(c, queues - 1)``. The scheduler is the traffic manager's:
strict priority between strict queues (higher class first), DWRR by bytes between
queues given a weight (:meth:`NicQueues.configure_class`), each queue with its own rate
limit in packets/s and its own depth; a port may also have a link rate in bits/s.
Time is the caller's, in microseconds (wall clock in ``softswitch run``).
"""

from __future__ import annotations

from typing import Any

from softswitch.core.control import PacketOut
from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager


class NicQueues:
    """The queued view of a :class:`~softswitch.pna.nic.Nic`, with the interface of
    :class:`softswitch.v1model.queueing.QueuedSwitch` (what the port loop drives)."""

    def __init__(self, switch: Any, tm: TrafficManager) -> None:
        self.switch = switch
        self.tm = tm
        self.dropped_at_enqueue = 0

    def queue_of(self, class_of_service: int) -> int:
        return min(max(class_of_service, 0), self.tm.num_queues - 1)

    def configure_class(self, class_of_service: int, *, weight: int | None = None,
                        rate_pps: float | None = None, depth: int | None = None,
                        port: int | None = None) -> None:
        """A class's queue on ``port`` (None: every port): ``weight`` 0 = strict
        priority, > 0 = DWRR weight; ``rate_pps`` 0 = unlimited."""
        if not 0 <= class_of_service <= 255:
            raise P4Error(f"class of service {class_of_service}: must be 0..255")
        q = self.queue_of(class_of_service)
        try:
            if weight is not None:
                self.tm.set_queue_weight(weight, port, q)
            if rate_pps is not None:
                self.tm.set_queue_rate(rate_pps, port, q)
            if depth is not None:
                self.tm.set_queue_depth(depth, port, q)
        except ValueError as exc:
            raise P4Error(f"class {class_of_service}: {exc}") from None

    def receive(self, port: int, data: bytes, now_us: float,
                out: list[PacketOut] | None = None) -> None:
        """Run the pipeline on an arriving frame now and queue what it sends. Every copy
        takes its transmit queue (``out``, the v1model view's pass-through list, stays
        empty): the port loop sends what may leave at once right after."""
        self.switch.clock.freeze(int(now_us))
        for out in self.switch.inject(port, data):
            self.enqueue(out, now_us)

    def enqueue(self, out: PacketOut, now_us: float) -> None:
        q = self.queue_of(int(out.meta.get("class_of_service", 0)))
        if self.tm.enqueue(out, len(out.data), out.port, q, -1, now_us) is None:
            self.dropped_at_enqueue += 1

    def next_event_us(self, now_us: float) -> float | None:
        return self.tm.next_event_us(now_us)

    def transmit_ready(self, now_us: float) -> list[tuple[PacketOut, float]]:
        """Packets whose turn has come, with the time their last bit is on the wire."""
        return [(dq.packet.item, dq.tx_done_us) for dq in self.tm.dequeue_ready(now_us)]
