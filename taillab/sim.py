"""Discrete-event simulation of hosts, links and one switch, on a microsecond clock.

Topology: sender hosts 1..N on switch ports 1..N, the receiver (a decode node) on port 0;
every link has the same rate and propagation delay, so the switch's port 0 is the
incast bottleneck. Hosts are RoCEv2 endpoints: each sender paces every QP at its DCQCN
rate and serialises on its NIC; the receiver completes messages and, as a DCQCN
notification point, returns CNPs for CE-marked packets. The switch is anything with the
:class:`SwitchModel` interface — in the lab, tailcc's P4 program on softswitch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from taillab.dcqcn import NotificationPoint, ReactionPoint
from taillab.events import EventLoop
from taillab.roce import (
    ECN_CE,
    ECN_ECT0,
    ECN_NOT_ECT,
    OPCODE_CNP,
    OPCODE_RC_SEND_ONLY,
    OPCODE_RC_WRITE_FIRST,
    OPCODE_RC_WRITE_LAST,
    OPCODE_RC_WRITE_MIDDLE,
    OPCODE_RC_WRITE_ONLY,
    RoceFlowAddr,
    build_roce,
    parse_roce,
)
from taillab.workload import MTU_PAYLOAD, ROCE_DSCP, Message

RECEIVER_PORT = 0
RECEIVER_QP_OFFSET = 0x10000
CNP_DSCP = 48


def host_ip(port: int) -> str:
    return "10.0.1.1" if port == RECEIVER_PORT else f"10.0.0.{port}"


def host_mac(port: int) -> str:
    return f"02:00:00:00:00:{port + 1:02x}"


SWITCH_MAC = "02:00:00:00:ff:ff"


class SwitchModel(Protocol):
    """What the simulation needs from a switch."""

    def receive(self, port: int, data: bytes, now_us: float) -> None: ...
    def next_event_us(self, now_us: float) -> float | None: ...
    def transmit_ready(self, now_us: float) -> list[tuple[int, bytes, float]]:
        """Packets starting transmission now: (port, bytes, time the last bit leaves)."""
        ...


@dataclass
class LinkSpec:
    rate_bps: float = 10e9
    prop_us: float = 1.0


@dataclass
class Completion:
    msg: Message
    done_us: float

    @property
    def latency_us(self) -> float:
        return self.done_us - self.msg.start_us


@dataclass
class _QP:
    qp: int
    rp: ReactionPoint
    addr: RoceFlowAddr
    messages: deque[Message] = field(default_factory=deque)
    sent_of_head: int = 0
    psn: int = 0
    next_allowed_us: float = 0.0


class SenderHost:
    """A RoCEv2 sender: per-QP DCQCN pacing, one NIC serialising at line rate."""

    def __init__(self, sim: Simulation, port: int) -> None:
        self.sim, self.port = sim, port
        self.qps: dict[int, _QP] = {}
        self.nic_free_us = 0.0
        self._scheduled_at: float | None = None
        self.last_psn: dict[int, list[tuple[int, Message]]] = {}

    def _qp(self, qp: int) -> _QP:
        state = self.qps.get(qp)
        if state is None:
            addr = RoceFlowAddr(host_mac(self.port), SWITCH_MAC, host_ip(self.port),
                                host_ip(RECEIVER_PORT), 49152 + qp % 16384,
                                qp + RECEIVER_QP_OFFSET)
            state = _QP(qp, ReactionPoint(self.sim.link.rate_bps), addr)
            self.qps[qp] = state
        return state

    def post(self, msg: Message) -> None:
        self._qp(msg.qp).messages.append(msg)
        self._kick(self.sim.loop.now)

    def _kick(self, t: float) -> None:
        t = max(t, self.nic_free_us)
        if self._scheduled_at is not None and self._scheduled_at <= t:
            return
        self._scheduled_at = t
        self.sim.loop.at(t, self._send_next)

    def _send_next(self) -> None:
        now = self.sim.loop.now
        self._scheduled_at = None
        ready = [q for q in self.qps.values() if q.messages]
        if not ready:
            return
        q = min(ready, key=lambda s: s.next_allowed_us)
        if q.next_allowed_us > now or self.nic_free_us > now:
            self._kick(max(q.next_allowed_us, self.nic_free_us))
            return
        pkt = self._packetise(q)
        tx_us = len(pkt) * 8 / self.sim.link.rate_bps * 1e6
        self.nic_free_us = now + tx_us
        q.next_allowed_us = now + len(pkt) * 8 / q.rp.current * 1e6
        q.rp.on_sent(len(pkt), now)
        self.sim.loop.at(now + tx_us + self.sim.link.prop_us,
                         lambda: self.sim.switch_receive(self.port, pkt))
        if any(s.messages for s in self.qps.values()):
            self._kick(self.nic_free_us)

    def _packetise(self, q: _QP) -> bytes:
        msg = q.messages[0]
        chunk = min(MTU_PAYLOAD, msg.size - q.sent_of_head)
        first, last = q.sent_of_head == 0, q.sent_of_head + chunk >= msg.size
        if msg.size <= MTU_PAYLOAD:
            opcode = OPCODE_RC_SEND_ONLY if msg.size <= 256 else OPCODE_RC_WRITE_ONLY
        else:
            opcode = (OPCODE_RC_WRITE_FIRST if first else
                      OPCODE_RC_WRITE_LAST if last else OPCODE_RC_WRITE_MIDDLE)
        pkt = build_roce(q.addr, opcode, q.psn, chunk, ROCE_DSCP, ECN_ECT0)
        if last:
            self.sim.expect_last(q.addr.dest_qp, q.psn, msg)
            q.messages.popleft()
            q.sent_of_head = 0
        else:
            q.sent_of_head += chunk
        q.psn = (q.psn + 1) & 0xFFFFFF
        return pkt

    def on_packet(self, data: bytes) -> None:
        view = parse_roce(data)
        if view is None or view.opcode != OPCODE_CNP:
            return
        q = self.qps.get(view.dest_qp)
        if q is not None:
            q.rp.on_cnp(self.sim.loop.now)
            self.sim.cnps_received += 1


class ReceiverHost:
    """The decode node: completes messages and returns CNPs as a DCQCN NP."""

    def __init__(self, sim: Simulation, np_delay_us: float = 2.0) -> None:
        self.sim = sim
        self.np = NotificationPoint()
        self.np_delay_us = np_delay_us
        self.nic_free_us = 0.0

    def on_packet(self, data: bytes) -> None:
        view = parse_roce(data)
        if view is None or view.opcode == OPCODE_CNP:
            return
        now = self.sim.loop.now
        self.sim.on_delivered(view.dest_qp, view.psn, now)
        if view.ecn == ECN_CE:
            self.sim.ce_received += 1
            if self.sim.receiver_cnps and self.np.on_ce(view.dest_qp, now):
                self._send_cnp(view.src_ip, view.dest_qp - RECEIVER_QP_OFFSET, now)

    def _send_cnp(self, sender_ip: str, sender_qp: int, now: float) -> None:
        sender_port = int(sender_ip.rsplit(".", 1)[1])
        addr = RoceFlowAddr(host_mac(RECEIVER_PORT), SWITCH_MAC, host_ip(RECEIVER_PORT),
                            sender_ip, 49152, sender_qp)
        del sender_port
        cnp = build_roce(addr, OPCODE_CNP, 0, 16, CNP_DSCP, ECN_NOT_ECT, becn=True)
        start = max(now + self.np_delay_us, self.nic_free_us)
        tx_us = len(cnp) * 8 / self.sim.link.rate_bps * 1e6
        self.nic_free_us = start + tx_us
        self.sim.loop.at(start + tx_us + self.sim.link.prop_us,
                         lambda: self.sim.switch_receive(RECEIVER_PORT, cnp))


class Simulation:
    """Wires hosts, links and the switch; collects message completions."""

    def __init__(self, switch: SwitchModel, num_senders: int, link: LinkSpec,
                 receiver_cnps: bool = True) -> None:
        self.loop = EventLoop()
        self.switch = switch
        self.link = link
        self.receiver_cnps = receiver_cnps
        self.senders = {p: SenderHost(self, p) for p in range(1, num_senders + 1)}
        self.receiver = ReceiverHost(self)
        self.completions: list[Completion] = []
        self._expect: dict[tuple[int, int], Message] = {}
        self._switch_scheduled: float | None = None
        self.cnps_received = 0
        self.ce_received = 0
        self.packets_delivered = 0

    def expect_last(self, receiver_qp: int, psn: int, msg: Message) -> None:
        self._expect[(receiver_qp, psn)] = msg

    def on_delivered(self, receiver_qp: int, psn: int, now: float) -> None:
        self.packets_delivered += 1
        msg = self._expect.pop((receiver_qp, psn), None)
        if msg is not None:
            self.completions.append(Completion(msg, now))

    def switch_receive(self, port: int, data: bytes) -> None:
        self.switch.receive(port, data, self.loop.now)
        self._service_switch()

    def _service_switch(self) -> None:
        now = self.loop.now
        for port, data, done_us in self.switch.transmit_ready(now):
            host = self.receiver if port == RECEIVER_PORT else self.senders.get(port)
            if host is not None:
                self.loop.at(done_us + self.link.prop_us,
                             lambda h=host, d=data: h.on_packet(d))
        nxt = self.switch.next_event_us(now)
        if nxt is not None and (self._switch_scheduled is None or nxt < self._switch_scheduled
                                or self._switch_scheduled <= now):
            self._switch_scheduled = nxt
            self.loop.at(nxt, self._switch_tick)

    def _switch_tick(self) -> None:
        self._switch_scheduled = None
        self._service_switch()

    def run(self, messages: list[Message], duration_us: float, drain_us: float) -> None:
        for msg in messages:
            sender = self.senders[msg.sender + 1]
            self.loop.at(msg.start_us, lambda s=sender, m=msg: s.post(m))
        self.loop.run(duration_us + drain_us)
