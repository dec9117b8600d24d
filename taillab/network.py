"""A leaf-spine network on a virtual microsecond clock: host NICs, links, and switches
that run every packet through tailcc.p4 on softswitch and its traffic manager.

What each part does, and why it is here rather than in the P4 program:

* **Switch** (:class:`FabricSwitch`): ``QueuedSwitch`` (ingress -> traffic manager ->
  egress) with per-port link rates, per-queue depth, PFC thresholds per ingress port and
  lossless priority. The traffic manager decides XOFF/XON; this module carries the pause
  to the upstream neighbour after the link's propagation delay, and refreshes an XOFF
  before its 65535 quanta run out while the priority is still congested.
* **NIC** (:class:`HostNic`): per-QP DCQCN reaction point and pacing; the QPs take turns
  packet by packet on one transmit path with no notion of class (the NIC of the
  baseline, priority-only and tailcc switch-only schemes); PFC from the leaf stops the
  paused priority. CNPs leave ahead of data. As a receiver it is a DCQCN notification
  point; a *slow* receiver drains its receive buffer at ``rx_gbps`` and pauses the
  priority whose share of the buffer passes XOFF (a busy prefill node).
* **Observation**: message completions, where packets got CE-marked, CNP feedback delay
  (CE mark or switch CNP -> CNP at the sender), PFC pause frames, paused time and the
  flows caught in a paused queue, queue depth samples for the plots.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.tm import TrafficManager
from softswitch.v1model.queueing import QueuedSwitch
from softswitch.v1model.switch import Switch
from taillab.dcqcn import NotificationPoint, ReactionPoint
from taillab.events import EventLoop
from taillab.leafspine import (
    CNP_DSCP,
    CNP_RECIRCULATION_PORT,
    CNP_SESSION,
    RECEIVER_CNP_SPORT,
    RECEIVER_QP_OFFSET,
    Fabric,
    data_queue,
    receiver_qp,
    sender_qp,
    udp_sport,
)
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
    RoceView,
    build_roce,
    parse_roce,
)
from taillab.scenario import Scenario
from taillab.traffic import FabricMessage as Message
from taillab.workload import ROCE_DSCP

PAUSE_QUANTA = 0xFFFF
NP_DELAY_US = 2.0          # receiver NIC: CE seen -> CNP on the wire
BTH_OPCODE_OFFSET = 14 + 20 + 8


def packet_identity(data: bytes) -> bytes:
    """What stays the same hop by hop (MACs, TTL, ECN and checksum change): source IP,
    destination IP, BTH destination QP and PSN."""
    return data[26:34] + data[BTH_OPCODE_OFFSET + 4:BTH_OPCODE_OFFSET + 12]


@dataclass
class PfcLedger:
    """Pause frames and paused time, per (node, port, priority) that was paused."""

    frames: int = 0
    paused_since: dict[tuple[str, int, int], float] = field(default_factory=dict)
    paused_us: dict[tuple[str, int, int], float] = field(default_factory=dict)
    intervals: dict[tuple[str, int, int], list[list[float]]] = field(default_factory=dict)
    paused_flows: set[tuple[bytes, bytes, int]] = field(default_factory=set)  # src, dst IP, QP

    def start(self, key: tuple[str, int, int], now: float) -> None:
        self.frames += 1
        if key not in self.paused_since:
            self.paused_since[key] = now
            self.intervals.setdefault(key, []).append([now, float("inf")])

    def end(self, key: tuple[str, int, int], now: float) -> None:
        self.frames += 1
        since = self.paused_since.pop(key, None)
        if since is not None:
            self.paused_us[key] = self.paused_us.get(key, 0.0) + now - since
            self.intervals[key][-1][1] = now

    def paused_during(self, key: tuple[str, int, int], t0: float, t1: float) -> bool:
        """Was ``key`` paused at some time in [t0, t1] (a packet's stay in a queue)?"""
        for start, end in reversed(self.intervals.get(key, ())):
            if end < t0:
                return False
            if start <= t1:
                return True
        return False

    def close(self, now: float) -> None:
        for key in list(self.paused_since):
            self.end(key, now)
            self.frames -= 1

    @property
    def total_paused_us(self) -> float:
        return sum(self.paused_us.values())


@dataclass
class Observations:
    completions: list[tuple[Message, float]] = field(default_factory=list)
    delivered_bytes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    delivered_pkts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ce_pkts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cnp_delay_us: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    pfc: PfcLedger = field(default_factory=PfcLedger)
    depth_samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    # message id -> when its first packet left the sender's NIC: what came before is
    # waiting at the sender (its QP busy with an earlier message, the NIC with others)
    first_tx_us: dict[int, float] = field(default_factory=dict)
    peak_buffer_pkts: dict[str, int] = field(default_factory=dict)


class FabricSwitch:
    """tailcc.p4 on softswitch behind its traffic manager, wired into the network."""

    def __init__(self, net: Network, name: str, switch: Switch, commands: list[str]) -> None:
        self.net, self.name = net, name
        self.tm = TrafficManager(num_queues=8)
        channel = RuntimeChannel(switch, self.tm)
        for line in commands:
            ok, output = channel.execute(line)
            if not ok:
                raise ValueError(f"switch {name}: {line!r}: {output}")
        switch.mirroring_add(CNP_SESSION, CNP_RECIRCULATION_PORT)
        self.queued = QueuedSwitch(switch, self.tm)
        self._scheduled: float | None = None
        self._tick_token = 0
        self._forwarding_cnps: dict[tuple[bytes, bytes], int] = defaultdict(int)
        self.arrivals: dict[bytes, float] = {}   # packet identity -> arrival here
        self.received = 0

    def receive(self, port: int, data: bytes) -> None:
        self.received += 1
        if len(data) > BTH_OPCODE_OFFSET and data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            self._forwarding_cnps[data[30:34], data[46:50]] += 1
        elif len(data) > BTH_OPCODE_OFFSET + 12:
            self.arrivals[packet_identity(data)] = self.net.loop.now
        self.queued.receive(port, data, self.net.loop.now)
        self.service()

    def pause(self, port: int, priority: int, pause: bool) -> None:
        now = self.net.loop.now
        self.tm.port(port).pause(priority, PAUSE_QUANTA if pause else 0, now)
        key = (self.name, port, priority)
        if pause:
            self.net.obs.pfc.start(key, now)
        else:
            self.net.obs.pfc.end(key, now)
        self.service()

    def service(self) -> None:
        net = self.net
        now = net.loop.now
        for out, done_us in self.queued.transmit_ready(now):
            net.on_switch_transmit(self, out.port, out.data, now, done_us)
        self._send_pfc(now)
        nxt = self.tm.next_event_us(now)
        if nxt is not None and (self._scheduled is None or nxt < self._scheduled):
            # one pending wake-up: a superseded one fires as a no-op (token), so an
            # earlier arrival does not start another polling chain
            self._scheduled = nxt
            self._tick_token += 1
            token = self._tick_token
            net.loop.at(nxt, lambda: self._tick(token))

    def _tick(self, token: int) -> None:
        if token == self._tick_token:
            self._scheduled = None
            self.service()

    def _send_pfc(self, now: float) -> None:
        if not self.tm.pfc.events:
            return
        for ev in self.tm.pfc.take_events():
            self.net.send_pfc(self.name, ev.port, ev.priority, ev.pause)
            if ev.pause:
                self._schedule_refresh(ev.port, ev.priority)

    def _schedule_refresh(self, port: int, priority: int) -> None:
        """Re-send XOFF at half the pause time while the priority stays congested."""
        rate = self.net.link_rate(self.name, port)
        half = PAUSE_QUANTA * 512 / rate * 1e6 / 2

        def refresh() -> None:
            if (port, priority) in self.tm.pfc.paused:
                self.net.send_pfc(self.name, port, priority, True)
                self._schedule_refresh(port, priority)
        self.net.loop.at(self.net.loop.now + half, refresh)

    def is_forwarded_cnp(self, data: bytes) -> bool:
        key = (data[30:34], data[46:50])
        if self._forwarding_cnps.get(key, 0) > 0:
            self._forwarding_cnps[key] -= 1
            return True
        return False

    def held_packets(self) -> int:
        return sum(ep.depth() for ep in self.tm.ports.values())


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


class Network:
    """Builds switches and NICs for a scenario and a scheme, runs the messages."""

    def __init__(self, scenario: Scenario, scheme: str, switch_factory: Callable[[], Switch],
                 commands: Callable[[str], list[str]], sample_ports: list[tuple[str, int]],
                 sample_every_us: float = 10.0, nic_factory: NicFactory | None = None) -> None:
        """``nic_factory`` builds each host's NIC (default: the class-blind
        :class:`HostNic`; the tailcc-nic scheme's runs tailcc_nic.p4)."""
        self.scenario, self.scheme = scenario, scheme
        self.fabric = Fabric(scenario.topology)
        self.loop = EventLoop()
        self.obs = Observations()
        self.peer: dict[tuple[str, int], tuple[str, int, float]] = {}
        for a, b, rate in self.fabric.links():
            self.peer[a] = (*b, rate)
            self.peer[b] = (*a, rate)
        self.switches = {n: FabricSwitch(self, n, switch_factory(), commands(n))
                         for n in self.fabric.switches()}
        slow = {s.host: s.rx_gbps * 1e9 for s in scenario.slow_receivers}
        t = scenario.topology
        make_nic = nic_factory or HostNic
        self.nics = {h: make_nic(self, h, t.host_gbps * 1e9, slow.get(h))
                     for h in range(t.num_hosts)}
        self.congested_hosts = set(slow)
        self._expect: dict[tuple[int, int], tuple[Message, bool]] = {}
        self.mark_time: dict[tuple[str, int, int], float] = {}
        self.cnp_origins: dict[tuple[str, int, str], deque[float]] = defaultdict(deque)
        self._prio_of_rqp: dict[int, int] = {}
        self._sample_ports = sample_ports
        self._sample_every = sample_every_us

    # --- wiring -------------------------------------------------------------------------
    def link_rate(self, node: str, port: int) -> float:
        return self.peer[(node, port)][2]

    def carry(self, node: str, port: int, data: bytes, last_bit_us: float) -> None:
        """A packet whose last bit leaves (node, port) at ``last_bit_us`` arrives at the
        peer one propagation delay later."""
        peer, pport, _ = self.peer[(node, port)]
        t = last_bit_us + self.scenario.topology.prop_us
        if peer[0] == "h":
            nic = self.nics[int(peer[1:])]
            self.loop.at(t, lambda: nic.on_packet(data))
        else:
            sw = self.switches[peer]
            self.loop.at(t, lambda: sw.receive(pport, data))

    def send_pfc(self, node: str, port: int, priority: int, pause: bool) -> None:
        peer, pport, _ = self.peer[(node, port)]
        t = self.loop.now + self.scenario.topology.prop_us
        if peer[0] == "h":
            nic = self.nics[int(peer[1:])]
            self.loop.at(t, lambda: nic.pfc(priority, pause))
        else:
            sw = self.switches[peer]
            self.loop.at(t, lambda: sw.pause(pport, priority, pause))

    def on_switch_transmit(self, sw: FabricSwitch, port: int, data: bytes, now: float,
                           done_us: float) -> None:
        if len(data) > BTH_OPCODE_OFFSET:
            if data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
                if not sw.is_forwarded_cnp(data):  # a Fast CNP this switch built
                    view = parse_roce(data)
                    if view is not None:
                        self.cnp_origins[(view.dst_ip, view.dest_qp, "switch")].append(now)
            else:
                self._check_victim(sw, port, data, now)
                if data[15] & 3 == ECN_CE:
                    view = parse_roce(data)
                    if view is not None:
                        self.mark_time.setdefault((view.src_ip, view.dest_qp, view.psn), now)
        self.carry(sw.name, port, data, done_us)

    def _check_victim(self, sw: FabricSwitch, port: int, data: bytes, now: float) -> None:
        """A data packet leaving (sw, port): if its queue was paused while it waited, its
        flow was paused."""
        arrived = sw.arrivals.pop(packet_identity(data), None)
        if arrived is None or not self.obs.pfc.intervals:
            return
        rqp = int.from_bytes(data[BTH_OPCODE_OFFSET + 5:BTH_OPCODE_OFFSET + 8], "big")
        key = (sw.name, port, self._prio_of_rqp.get(rqp, 0))
        if self.obs.pfc.paused_during(key, arrived, now):
            self.obs.pfc.paused_flows.add((data[26:30], data[30:34], rqp))

    # --- hosts ----------------------------------------------------------------------------
    def expect(self, rqp: int, psn: int, msg: Message, last: bool) -> None:
        self._expect[(rqp, psn)] = (msg, last)

    def priority_of(self, data: bytes) -> int:
        view = parse_roce(data)
        return self._prio_of_rqp.get(view.dest_qp, 0) if view else 0

    def on_delivered(self, view: RoceView, now: float) -> str:
        msg, last = self._expect.pop((view.dest_qp, view.psn), (None, False))
        if msg is None:
            return "?"
        self.obs.delivered_pkts[msg.cls] += 1
        if now <= self.scenario.duration_us:
            self.obs.delivered_bytes[msg.cls] += view.length
        if last:
            self.obs.completions.append((msg, now))
        return msg.cls

    def on_cnp_at_sender(self, nic: HostNic, data: bytes) -> None:
        view = parse_roce(data)
        if view is None:
            return
        q = nic.qps.get(view.dest_qp)
        if q is None:
            return
        sport = int.from_bytes(data[34:36], "big")
        source = "receiver" if sport == RECEIVER_CNP_SPORT else "switch"
        origins = self.cnp_origins.get((view.dst_ip, view.dest_qp, source))
        if origins:
            self.obs.cnp_delay_us[source].append(self.loop.now - origins.popleft())
        q.rp.on_cnp(self.loop.now)

    def paused_qp(self, q: _QP) -> None:
        import ipaddress
        self.obs.pfc.paused_flows.add((ipaddress.IPv4Address(q.addr.src_ip).packed,
                                       ipaddress.IPv4Address(q.addr.dst_ip).packed,
                                       q.addr.dest_qp))

    def innocent_victims(self) -> int:
        """Flows that waited in a paused queue (switch or NIC) although their
        destination is not a congested receiver: they never crossed the congested
        egress."""
        import ipaddress
        congested = {ipaddress.IPv4Address(self.fabric.host_ip(h)).packed
                     for h in self.congested_hosts}
        return sum(1 for _, dst, _ in self.obs.pfc.paused_flows if dst not in congested)

    # --- run ----------------------------------------------------------------------------
    def run(self, messages: list[Message]) -> Observations:
        for msg in messages:
            rqp = receiver_qp(msg.spec, msg.sender, msg.receiver)
            self._prio_of_rqp[rqp] = data_queue(self.scheme, msg.role)
            nic = self.nics[msg.sender]
            self.loop.at(msg.start_us, lambda n=nic, m=msg: n.post(m))
        self._sample()
        end = self.scenario.duration_us + self.scenario.drain_us
        self.loop.run(end)
        self.obs.pfc.close(end)
        return self.obs

    def _sample(self) -> None:
        now = self.loop.now
        if now > self.scenario.duration_us:
            return
        depths: dict[str, int] = {}
        for node, port in self._sample_ports:
            depths[f"{node}:{port}"] = self.switches[node].tm.depth(port)
        depths["paused_queues"] = len(self.obs.pfc.paused_since)
        self.obs.depth_samples.append((now, depths))
        for name, sw in self.switches.items():
            held = sw.held_packets()
            if held > self.obs.peak_buffer_pkts.get(name, 0):
                self.obs.peak_buffer_pkts[name] = held
        self.loop.at(now + self._sample_every, self._sample)
