"""A RoCEv2 host NIC of the lab (:class:`HostNic`): per-QP DCQCN reaction point and
pacing; the QPs take turns packet by packet on one transmit path with no notion of class
(the NIC of the baseline, priority-only and tailcc switch-only schemes); PFC from the
leaf stops the paused priority. CNPs leave ahead of data. As a receiver it is a DCQCN
notification point; a *slow* receiver drains its receive buffer at ``rx_gbps`` and
pauses the priority whose share of the buffer passes XOFF (a busy prefill node).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taillab.dcqcn import NotificationPoint, ReactionPoint
from taillab.leafspine import (
    CNP_DSCP,
    RECEIVER_CNP_SPORT,
    RECEIVER_QP_OFFSET,
    data_queue,
    receiver_qp,
    sender_qp,
    udp_sport,
)
from taillab.roce import (
    BTH_OPCODE_OFFSET,
    ECN_CE,
    ECN_ECT0,
    ECN_NOT_ECT,
    OPCODE_CNP,
    OPCODE_RC_SEND_ONLY,
    OPCODE_RC_WRITE_FIRST,
    OPCODE_RC_WRITE_LAST,
    OPCODE_RC_WRITE_MIDDLE,
    OPCODE_RC_WRITE_ONLY,
    PAUSE_QUANTA,
    RoceFlowAddr,
    build_roce,
    parse_roce,
)
from taillab.traffic import FabricMessage as Message
from taillab.workload import ROCE_DSCP

if TYPE_CHECKING:
    from taillab.network import Network

NP_DELAY_US = 2.0          # receiver NIC: CE seen -> CNP on the wire


@dataclass
class _QP:
    qp: int
    cls: str
    priority: int
    rp: ReactionPoint
    addr: RoceFlowAddr
    messages: deque[Message] = field(default_factory=deque)
    sent_of_head: int = 0
    psn: int = 0
    next_allowed_us: float = 0.0
    order: int = 0                 # the NIC's QPs in the order they were made


class HostNic:
    """A RoCEv2 host: DCQCN sender per QP, notification point, optional slow receive."""

    def __init__(self, net: Network, host: int, rate_bps: float,
                 rx_rate_bps: float | None) -> None:
        self.net, self.host, self.rate = net, host, rate_bps
        self.name = f"h{host}"
        self.qps: dict[int, _QP] = {}
        self.backlog: dict[int, _QP] = {}      # the QPs holding messages
        self.control: deque[bytes] = deque()
        self.nic_free_us = 0.0
        self._scheduled_at: float | None = None
        self._wake_token = 0
        self.paused_until: dict[int, float] = {}
        self.np = NotificationPoint()
        self.rx_rate = rx_rate_bps
        self.rx_queue: deque[bytes] = deque()
        self.rx_bytes: dict[int, int] = defaultdict(int)
        self.rx_busy = False
        self.rx_paused: set[int] = set()

    # --- transmit -------------------------------------------------------------------
    def post(self, msg: Message) -> None:
        q = self._qp(msg)
        q.messages.append(msg)
        self.backlog[q.qp] = q
        if self.paused_until.get(q.priority, 0.0) > self.net.loop.now:
            self.net.paused_qp(q)
        self._kick(self.net.loop.now)

    def _qp(self, msg: Message) -> _QP:
        dst = msg.receiver
        qp = sender_qp(msg.spec, self.host, dst)
        state = self.qps.get(qp)
        if state is None:
            f = self.net.fabric
            addr = RoceFlowAddr(f.host_mac(self.host),
                                f.switch_mac(f"l{f.leaf_of(self.host)}"),
                                f.host_ip(self.host), f.host_ip(dst), udp_sport(qp),
                                receiver_qp(msg.spec, self.host, dst))
            state = _QP(qp, msg.cls, data_queue(self.net.scheme, msg.role),
                        ReactionPoint(self.rate), addr, order=len(self.qps))
            self.qps[qp] = state
        return state

    def _kick(self, t: float) -> None:
        """Wake the transmit path at ``t`` (not before the NIC is free). One wake-up is
        pending at a time: an earlier one already pending covers ``t``; a new earlier one
        supersedes the pending one, which then fires as a no-op (the token keeps it from
        starting a second polling chain)."""
        t = max(t, self.nic_free_us)
        if self._scheduled_at is not None and self._scheduled_at <= t:
            return
        self._scheduled_at = t
        self._wake_token += 1
        token = self._wake_token
        self.net.loop.at(t, lambda: self._wake(token))

    def _wake(self, token: int) -> None:
        if token == self._wake_token:
            self._scheduled_at = None
            self._send_next()

    def _send_next(self) -> None:
        now = self.net.loop.now
        if self.nic_free_us > now:
            self._kick(self.nic_free_us)
            return
        if self.control:
            self._transmit(self.control.popleft(), now)
            return
        q = self._next_qp(now)
        if q is None:  # every backlogged priority paused: XON (or the pause's end) wakes us
            ends = [self.paused_until.get(s.priority, 0.0) for s in self.backlog.values()]
            if ends:
                self._kick(min(ends))
            return
        if q.next_allowed_us > now:
            self._kick(q.next_allowed_us)
            return
        pkt, first = self._packetise(q)
        if first is not None:
            self.net.obs.first_tx_us[first.msg_id] = now
        q.next_allowed_us = now + len(pkt) * 8 / q.rp.current * 1e6
        q.rp.on_sent(len(pkt), now)
        self._transmit(pkt, now)

    def _next_qp(self, now: float) -> _QP | None:
        """The backlogged, unpaused QP allowed to send first; of equals, the oldest."""
        paused = self.paused_until
        best: _QP | None = None
        for q in self.backlog.values():
            if paused and paused.get(q.priority, 0.0) > now:
                continue
            if best is None or q.next_allowed_us < best.next_allowed_us or (
                    q.next_allowed_us == best.next_allowed_us and q.order < best.order):
                best = q
        return best

    def _transmit(self, pkt: bytes, now: float) -> None:
        tx_us = len(pkt) * 8 / self.rate * 1e6
        self.nic_free_us = now + tx_us
        self.net.carry(self.name, 0, pkt, now + tx_us)
        if self.control or self.backlog:
            self._kick(self.nic_free_us)

    def _packetise(self, q: _QP, dscp: int = ROCE_DSCP,
                   ecn: int = ECN_ECT0) -> tuple[bytes, Message | None]:
        """The next packet of the QP's head message, and that message if this is its
        first packet."""
        msg = q.messages[0]
        mtu = self.net.scenario.topology.mtu_payload
        chunk = min(mtu, msg.size - q.sent_of_head)
        first, last = q.sent_of_head == 0, q.sent_of_head + chunk >= msg.size
        if msg.size <= mtu:
            opcode = OPCODE_RC_SEND_ONLY if msg.size <= 256 else OPCODE_RC_WRITE_ONLY
        else:
            opcode = (OPCODE_RC_WRITE_FIRST if first else
                      OPCODE_RC_WRITE_LAST if last else OPCODE_RC_WRITE_MIDDLE)
        pkt = build_roce(q.addr, opcode, q.psn, chunk, dscp, ecn)
        self.net.expect(q.addr.dest_qp, q.psn, msg, last)
        if last:
            q.messages.popleft()
            q.sent_of_head = 0
            if not q.messages:
                del self.backlog[q.qp]
        else:
            q.sent_of_head += chunk
        q.psn = (q.psn + 1) & 0xFFFFFF
        return pkt, msg if first else None

    def pfc(self, priority: int, pause: bool) -> None:
        now = self.net.loop.now
        key = (self.name, 0, priority)
        if pause:
            self.paused_until[priority] = now + PAUSE_QUANTA * 512 / self.rate * 1e6
            self.net.obs.pfc.start(key, now)
            for q in self.qps.values():
                if q.priority == priority and q.messages:
                    self.net.paused_qp(q)
        else:
            self.paused_until[priority] = now
            self.net.obs.pfc.end(key, now)
            self._kick(now)

    # --- receive --------------------------------------------------------------------
    def on_packet(self, data: bytes) -> None:
        if len(data) > BTH_OPCODE_OFFSET and data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            self.net.on_cnp_at_sender(self, data)
            return
        if self.rx_rate is None:
            self._consume(data)
            return
        prio = self.net.priority_of(data)
        self.rx_queue.append(data)
        self.rx_bytes[prio] += len(data)
        b = self.net.scenario.buffers
        if prio not in self.rx_paused and self.rx_bytes[prio] >= b.host_rx_xoff_bytes:
            self.rx_paused.add(prio)
            self.net.send_pfc(self.name, 0, prio, True)
            self._refresh_rx_pause(prio)
        if not self.rx_busy:
            self._drain()

    def _refresh_rx_pause(self, prio: int) -> None:
        half = PAUSE_QUANTA * 512 / self.rate * 1e6 / 2

        def refresh() -> None:
            if prio in self.rx_paused:
                self.net.send_pfc(self.name, 0, prio, True)
                self._refresh_rx_pause(prio)
        self.net.loop.at(self.net.loop.now + half, refresh)

    def _drain(self) -> None:
        if not self.rx_queue:
            self.rx_busy = False
            return
        self.rx_busy = True
        data = self.rx_queue[0]
        assert self.rx_rate is not None
        self.net.loop.at(self.net.loop.now + len(data) * 8 / self.rx_rate * 1e6,
                         self._drained)

    def _drained(self) -> None:
        data = self.rx_queue.popleft()
        prio = self.net.priority_of(data)
        self.rx_bytes[prio] -= len(data)
        b = self.net.scenario.buffers
        if prio in self.rx_paused and self.rx_bytes[prio] <= b.host_rx_xon_bytes:
            self.rx_paused.discard(prio)
            self.net.send_pfc(self.name, 0, prio, False)
        self._consume(data)
        self._drain()

    def _consume(self, data: bytes) -> None:
        view = parse_roce(data)
        if view is None:
            return
        now = self.net.loop.now
        cls = self.net.on_delivered(view, now)
        if view.ecn == ECN_CE:
            self.net.obs.ce_pkts[cls] += 1
            if self.np.on_ce(view.dest_qp, now):
                mark_us = self.net.mark_time.pop((view.src_ip, view.dest_qp, view.psn), now)
                self._send_cnp(view.src_ip, view.dest_qp - RECEIVER_QP_OFFSET, mark_us)

    def _send_cnp(self, sender_ip: str, sqp: int, mark_us: float) -> None:
        f = self.net.fabric
        addr = RoceFlowAddr(f.host_mac(self.host), f.switch_mac(f"l{f.leaf_of(self.host)}"),
                            f.host_ip(self.host), sender_ip, RECEIVER_CNP_SPORT, sqp)
        cnp = build_roce(addr, OPCODE_CNP, 0, 16, CNP_DSCP, ECN_NOT_ECT, becn=True)
        self.net.cnp_origins[(sender_ip, sqp, "receiver")].append(mark_us)

        def send() -> None:
            self.control.append(cnp)
            self._kick(self.net.loop.now)
        self.net.loop.at(self.net.loop.now + NP_DELAY_US, send)


NicFactory = Callable[["Network", int, float, "float | None"], HostNic]
