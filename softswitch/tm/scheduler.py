"""Per-egress-port queues and their scheduler.

BMv2 ``simple_switch --priority-queues N`` gives each egress port N FIFO queues selected
by ``standard_metadata.priority`` and served in strict priority (7 = highest), each with a
packet capacity (default 64, tail drop) and an optional rate limit in packets/s
(``set_queue_rate``). softswitch reproduces exactly that by default, with BMv2 1.15's
details (``bm_sim/queueing.h`` ``QueueingLogicPriRL``):

* a rate-limited queue fixes each packet's departure time when the packet is queued:
  ``max(now, previous departure + 1/rate)``, the previous departure starting at the
  time the queue was created; so a new rate applies to packets queued after it, and the
  first packet into a queue made by ``set_queue_rate`` waits one interval;
* ``enq_qdepth``/``deq_qdepth`` count the packet's own priority queue (BMv2 >= 1.15.1;
  ``per_queue_depth=False`` reports the port's total, as older BMv2 did).

It adds, as documented extensions BMv2 does not have:

* DWRR between queues given a weight (weight 0 = strict priority): strict queues are
  served first, highest priority first; the weighted queues share what is left in
  proportion to their weights, measured in bytes (deficit round robin);
* byte-based queue capacity, and a link rate in bits/s (a port serialises like a link);
* pause of a queue by PFC (802.1Qbb) from the downstream neighbour.

Time is passed in by the caller in microseconds (float), so the same scheduler runs
against the wall clock (``softswitch run``) or a simulated one (the tail-latency lab).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_QUEUE_CAPACITY = 64
DWRR_QUANTUM_BYTES = 1500


@dataclass(slots=True)
class QueueConfig:
    """Configuration of one queue; every field can be changed at run time."""

    capacity_pkts: int = DEFAULT_QUEUE_CAPACITY
    capacity_bytes: int = 0          # 0 = no byte limit (extension)
    rate_pps: float = 0.0            # 0 = unlimited (BMv2 set_queue_rate)
    weight: int = 0                  # 0 = strict priority; >0 = DWRR weight (extension)


@dataclass(slots=True)
class QueuedPacket:
    """A packet waiting in a queue, with what egress metadata needs about its stay."""

    item: Any
    size: int
    priority: int
    enq_time_us: float
    enq_qdepth: int
    send_us: float = 0.0             # earliest departure, fixed at enqueue (rate limit)


@dataclass(slots=True)
class Dequeued:
    """A packet leaving a queue: ``deq_qdepth`` and ``deq_timedelta_us`` as BMv2 defines."""

    packet: QueuedPacket
    port: int
    deq_qdepth: int
    deq_timedelta_us: float
    tx_done_us: float


@dataclass
class QueueStats:
    enqueued: int = 0
    dequeued: int = 0
    dropped: int = 0
    bytes_enqueued: int = 0
    max_depth: int = 0


@dataclass(slots=True)
class _Queue:
    config: QueueConfig
    packets: deque[QueuedPacket] = field(default_factory=deque)
    bytes: int = 0
    last_sent_us: float = 0.0        # departure time given to the last packet queued
    paused_until_us: float = 0.0     # PFC pause from downstream
    deficit: int = 0
    stats: QueueStats = field(default_factory=QueueStats)

    def departure(self, now_us: float) -> float:
        """BMv2's get_next_tp: the next packet leaves one interval after the last one
        (at once when unlimited), never before it arrives."""
        rate = self.config.rate_pps
        return max(now_us, self.last_sent_us + (1e6 / rate if rate > 0 else 0.0))

    def eligible(self, now_us: float) -> bool:
        return bool(self.packets) and now_us >= self.packets[0].send_us \
            and now_us >= self.paused_until_us

    def ready_time(self) -> float:
        return max(self.packets[0].send_us, self.paused_until_us)


class EgressPort:
    """The queues of one egress port and the scheduler that drains them."""

    def __init__(self, port: int, num_queues: int = 1, link_rate_bps: float = 0.0,
                 per_queue_depth: bool = True, created_us: float = 0.0,
                 defaults: QueueConfig | None = None) -> None:
        if not 1 <= num_queues <= 8:
            raise ValueError(f"port {port}: number of priority queues must be 1..8, "
                             f"not {num_queues}")
        self.port = port
        base = defaults or QueueConfig()
        self.queues = [_Queue(QueueConfig(base.capacity_pkts, base.capacity_bytes,
                                          base.rate_pps, base.weight),
                              last_sent_us=created_us)
                       for _ in range(num_queues)]
        self.link_rate_bps = link_rate_bps
        self.busy_until_us = 0.0
        # How late (µs) a wall-clock caller may dequeue and still have the link go on
        # from where its last frame ended, as if the frame had left on time; 0 (virtual
        # time, which is never late): the frame starts when dequeued.
        self.catch_up_us = 0.0
        # BMv2 >= 1.15.1 reports the packet's own queue; False: the port's total.
        self.per_queue_depth = per_queue_depth
        self._dwrr_pos = 0
        self._dwrr_fresh = True
        self.held = 0                    # packets in all queues of the port
        # max(earliest head ready time, busy_until_us), None when empty; recomputed
        # after anything that moves a head, a pause or the link (changed())
        self._ready_us: float | None = None
        self._stale = False
        # False when no empty weighted queue has a deficit left (the idle reset of
        # _pick_dwrr would change nothing): set by whatever may leave one
        self._reset_due = False

    def changed(self) -> None:
        """Queues, pauses or the link changed outside this class's own methods (the
        traffic manager taking a port back or flushing it): recompute the next event."""
        self._stale = True

    # --- configuration ------------------------------------------------------------------
    def queue_config(self, priority: int) -> QueueConfig:
        self._reset_due = True       # a weight may change: which queues count as weighted
        return self._queue(priority).config

    def _queue(self, priority: int) -> _Queue:
        if not 0 <= priority < len(self.queues):
            raise ValueError(f"port {self.port}: no queue {priority} "
                             f"(the port has {len(self.queues)})")
        return self.queues[priority]

    # --- state ---------------------------------------------------------------------------
    def depth(self, priority: int | None = None) -> int:
        """Packets queued: in one queue, or in the whole port when ``priority`` is None."""
        if priority is not None:
            return len(self._queue(priority).packets)
        return sum(len(q.packets) for q in self.queues)

    def _reported_depth(self, priority: int) -> int:
        return len(self.queues[priority].packets) if self.per_queue_depth else self.held

    def stats(self, priority: int) -> QueueStats:
        return self._queue(priority).stats

    # --- enqueue -----------------------------------------------------------------------------
    def enqueue(self, item: Any, size: int, priority: int, now_us: float) -> QueuedPacket | None:
        """Queue a packet; None when it is tail-dropped (queue full) or the priority does not
        exist on this port (BMv2 drops priority >= number of queues)."""
        if not 0 <= priority < len(self.queues):
            return None
        q = self.queues[priority]
        cfg = q.config
        if len(q.packets) >= cfg.capacity_pkts or (
                cfg.capacity_bytes and q.bytes + size > cfg.capacity_bytes):
            q.stats.dropped += 1
            return None
        send = q.departure(now_us)
        q.last_sent_us = send
        pkt = QueuedPacket(item, size, priority, now_us, self._reported_depth(priority), send)
        q.packets.append(pkt)
        self.held += 1
        self._stale = True
        q.bytes += size
        q.stats.enqueued += 1
        q.stats.bytes_enqueued += size
        q.stats.max_depth = max(q.stats.max_depth, len(q.packets))
        return pkt

    def pass_through(self, item: Any, size: int, priority: int,
                     now_us: float) -> Dequeued | None:
        """:meth:`enqueue` then :meth:`dequeue` at ``now_us``, without the queue, when
        the result is certain: the packet's queue empty, unlimited, strict and not
        paused, no link rate, and no higher strict queue that may send now. Counters
        and the rate origin move as the round trip would move them. None when the
        packet must really be queued."""
        q = self.queues[priority]
        cfg = q.config
        if q.packets or self.link_rate_bps or cfg.rate_pps or cfg.weight \
                or now_us < q.paused_until_us or now_us < self.busy_until_us \
                or q.last_sent_us > now_us \
                or (cfg.capacity_bytes and size > cfg.capacity_bytes):
            return None
        if self.held:
            # Lower queues holding packets (elephants behind a rate) leave after this one
            # anyway; a higher strict queue that may send now goes first, and a port-wide
            # depth would count the others: then the packet takes the queue.
            if not self.per_queue_depth:
                return None
            for higher in self.queues[priority + 1:]:
                if higher.packets and higher.config.weight == 0 \
                        and now_us >= higher.packets[0].send_us \
                        and now_us >= higher.paused_until_us:
                    return None
        q.last_sent_us = now_us
        self.busy_until_us = now_us
        self._stale = True
        st = q.stats
        st.enqueued += 1
        st.dequeued += 1
        st.bytes_enqueued += size
        if not st.max_depth:
            st.max_depth = 1
        return Dequeued(QueuedPacket(item, size, priority, now_us, 0, now_us), self.port,
                        0, 0.0, now_us)

    def pass_through_mask(self, now_us: float) -> int:
        """Bit p set when :meth:`pass_through` would pass every packet of priority p from
        ``now_us`` on, for as long as nothing but pass-throughs changes the port: no link
        rate; queue p empty, unlimited, strict, without a byte limit and not paused, its
        last departure not in the future; and, while the port holds packets (elephants
        behind a rate), per-queue depths and no higher strict queue holding any (one
        that may not send now may by the next packet). Keep in step with
        :meth:`pass_through`: this may say no where it says yes, never the reverse."""
        if self.link_rate_bps or now_us < self.busy_until_us \
                or (self.held and not self.per_queue_depth):
            return 0
        mask = 0
        for prio in range(len(self.queues) - 1, -1, -1):
            q = self.queues[prio]
            cfg = q.config
            if q.packets:
                if not cfg.weight:
                    break             # this one and every lower one: not certain
                continue
            if not (cfg.rate_pps or cfg.weight or cfg.capacity_bytes
                    or now_us < q.paused_until_us or q.last_sent_us > now_us):
                mask |= 1 << prio
        return mask

    def full_mask(self) -> int:
        """Bit p set when queue p holds as many packets as it may: :meth:`enqueue` drops
        what comes for it at any time until a packet leaves it."""
        mask = 0
        for prio, q in enumerate(self.queues):
            if len(q.packets) >= q.config.capacity_pkts:
                mask |= 1 << prio
        return mask

    def count_dropped(self, priority: int, packets: int) -> None:
        """What ``packets`` calls of :meth:`enqueue` that drop at priority ``priority``
        change."""
        self.queues[priority].stats.dropped += packets

    def count_passed(self, priority: int, packets: int, size: int, last_us: float) -> None:
        """What ``packets`` calls of :meth:`pass_through` at priority ``priority``, of
        ``size`` bytes in all, the last one at ``last_us``, change."""
        q = self.queues[priority]
        q.last_sent_us = last_us
        self.busy_until_us = max(self.busy_until_us, last_us)
        self._stale = True
        st = q.stats
        st.enqueued += packets
        st.dequeued += packets
        st.bytes_enqueued += size
        if not st.max_depth:
            st.max_depth = 1

    # --- dequeue -----------------------------------------------------------------------------
    def next_event_us(self, now_us: float) -> float | None:
        """Earliest time at which :meth:`dequeue` could return a packet, None if empty."""
        if self._stale:
            self._ready_us = self._ready()
            self._stale = False
        ready = self._ready_us
        if ready is None:
            return None
        return now_us if now_us > ready else ready     # max(ready, now) as max() picks

    def _ready(self) -> float | None:
        """max(the earliest time a head packet may leave, busy_until_us); None if empty."""
        if not self.held:
            return None
        best: float | None = None
        for q in self.queues:
            if q.packets:
                t = q.ready_time()
                if best is None or t < best:
                    best = t
        if best is None:
            return None
        busy = self.busy_until_us
        return busy if busy > best else best

    def dequeue(self, now_us: float) -> Dequeued | None:
        """The next packet to transmit at ``now_us``, or None if none may leave yet."""
        if not self.held or now_us < self.busy_until_us:
            return None
        ready = self.next_event_us(now_us)
        if ready is None or ready > now_us:
            # no queue may send: what _pick_dwrr would still do, its idle reset
            if self._reset_due:
                for idle in self.queues:
                    if idle.config.weight > 0 and not idle.packets:
                        idle.deficit = 0
                self._reset_due = False
            return None
        q = self._pick_strict(now_us) or self._pick_dwrr(now_us)
        if q is None:
            return None
        start = self._start_us(q, now_us)
        pkt = q.packets.popleft()
        self.held -= 1
        self._stale = True
        q.bytes -= pkt.size
        q.stats.dequeued += 1
        tx_time = pkt.size * 8 * 1e6 / self.link_rate_bps if self.link_rate_bps else 0.0
        self.busy_until_us = start + tx_time
        return Dequeued(pkt, self.port, self._reported_depth(pkt.priority),
                        now_us - pkt.enq_time_us, self.busy_until_us)

    def _start_us(self, q: _Queue, now_us: float) -> float:
        """When the head of ``q`` starts on the link: now, or, for a caller up to
        ``catch_up_us`` late, when the link and the packet were both ready — so a
        loaded host's late wake-ups do not slow the link down (frames then leave back
        to back until it has caught up)."""
        if not self.catch_up_us or not self.link_rate_bps:
            return now_us
        ready = max(q.ready_time(), q.packets[0].enq_time_us)
        return max(self.busy_until_us, ready, now_us - self.catch_up_us)

    def _pick_strict(self, now_us: float) -> _Queue | None:
        for q in reversed(self.queues):  # highest priority first
            if q.packets and q.config.weight == 0 and now_us >= q.packets[0].send_us \
                    and now_us >= q.paused_until_us:
                return q
        return None

    def _pick_dwrr(self, now_us: float) -> _Queue | None:
        """Deficit round robin over the weighted queues that may send now."""
        self._reset_due = True       # deficits move, and the queue served may empty
        weighted = []
        eligible = False
        for q in self.queues:
            if q.config.weight > 0:
                weighted.append(q)
                if not q.packets:
                    q.deficit = 0
                elif not eligible:
                    eligible = q.eligible(now_us)
        if not eligible:
            return None
        # Classic DRR: arriving at a queue adds one quantum; the queue keeps the turn while
        # its deficit covers its head packet, then the turn moves on. Bounded loop: a head
        # packet of at most 64 quanta is always reached.
        n = len(weighted)
        for _ in range(n * 65):
            q = weighted[self._dwrr_pos % n]
            packets = q.packets
            if packets and now_us >= packets[0].send_us and now_us >= q.paused_until_us:
                if self._dwrr_fresh:
                    q.deficit += q.config.weight * DWRR_QUANTUM_BYTES
                    self._dwrr_fresh = False
                if packets[0].size <= q.deficit:
                    q.deficit -= packets[0].size
                    return q
            self._dwrr_pos += 1
            self._dwrr_fresh = True
        return max((c for c in weighted if c.eligible(now_us)), key=lambda c: c.deficit)

    # --- PFC from downstream ------------------------------------------------------------------
    def pause(self, priority: int, quanta: int, now_us: float) -> None:
        """Apply a received PFC frame: pause ``priority`` for ``quanta`` × 512 bit times
        (quanta 0 = XON resumes at once). Without a link rate a quantum counts as 0.512 µs,
        i.e. 1 Gb/s."""
        q = self._queue(priority)
        rate = self.link_rate_bps or 1e9
        q.paused_until_us = now_us + quanta * 512 * 1e6 / rate if quanta else now_us
        self._stale = True
