"""A leaf-spine network on a virtual microsecond clock: host NICs (taillab.host_nic),
links, and switches (taillab.switch_node) that run every packet through tailcc.p4 on
softswitch and its traffic manager; what the run saw is in taillab.observations.

On the C packet path the switches, their links and the event loop's heap run in C (a
native fabric, ``fab_*`` of softswitch/fastpath/rt_queues.c) and call back here for
what only Python keeps; the run is the same event for event as on the interpreter.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable
from functools import partial
from typing import Any

from softswitch.v1model.switch import Switch
from taillab.events import EventLoop
from taillab.host_nic import _QP, HostNic, NicFactory
from taillab.leafspine import (
    RECEIVER_CNP_SPORT,
    Fabric,
    data_queue,
    receiver_qp,
)
from taillab.observations import IP_PAIR, QP_PSN, Observations
from taillab.roce import (
    BTH_OPCODE_OFFSET,
    ECN_CE,
    OPCODE_CNP,
    RoceView,
    parse_roce,
)
from taillab.scenario import Scenario
from taillab.switch_node import FabricSwitch
from taillab.traffic import FabricMessage as Message


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
        self._delivery: dict[str, dict[int, tuple[Callable[..., None], int]]] = {}
        self._prop_us = scenario.topology.prop_us
        self._heap, self._push, self._seq = self.loop.heap, heapq.heappush, self.loop.seq
        self._fabric: tuple[dict[str, Any], Any] | None = None
        self._sample_ports = sample_ports
        self._sample_every = sample_every_us

    # --- wiring -------------------------------------------------------------------------
    def link_rate(self, node: str, port: int) -> float:
        return self.peer[(node, port)][2]

    def carry(self, node: str, port: int, data: bytes, last_bit_us: float) -> None:
        """A packet whose last bit leaves (node, port) at ``last_bit_us`` arrives at the
        peer one propagation delay later."""
        deliver, pport = self._delivery[node][port]
        t = last_bit_us + self._prop_us
        now = self.loop.now
        self._push(self._heap, (now if now > t else t, next(self._seq),
                                partial(deliver, data) if pport < 0
                                else partial(deliver, pport, data)))

    def _deliveries(self) -> dict[str, dict[int, tuple[Callable[..., None], int]]]:
        """Per node and port, what receives a packet sent out of it: a NIC's on_packet
        (-1) or a switch's receive and its port."""
        out: dict[str, dict[int, tuple[Callable[..., None], int]]] = defaultdict(dict)
        for (node, port), (peer, pport, _) in self.peer.items():
            if peer[0] == "h":
                out[node][port] = (self.nics[int(peer[1:])].on_packet, -1)
            else:
                out[node][port] = (self.switches[peer].receive, pport)
        return dict(out)

    def _native_fabric(self) -> tuple[dict[str, Any], Any] | None:
        """When every switch is a C hop and every host's link goes to a switch: the
        loop's events and the switches' work run in C (``fab_*`` of rt_queues.c: the
        loop's at/run on the fabric's heap, NIC packets carried into it), calling back
        here for what only Python knows. None otherwise (the interpreter)."""
        hops = [sw.hop for sw in self.switches.values()]
        if not hops or any(h is None for h in hops) or self.loop.heap or \
                any(peer[0] == "h" for (node, _), (peer, _, _) in self.peer.items()
                    if node[0] == "h"):
            return None
        fns = hops[0].functions  # type: ignore[union-attr]
        index = {name: i for i, name in enumerate(self.switches)}
        specs = []
        hosts: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
        for (node, port), (peer, pport, _) in self.peer.items():
            if node[0] == "h" and peer in index:
                hosts[node][port] = (index[peer], pport)
        for name, sw in self.switches.items():
            links: dict[int, tuple[Any, int, int]] = {}
            for port, (deliver, pport) in self._delivery[name].items():
                peer = self.peer[(name, port)][0]
                links[port] = (deliver, -1, -1) if pport < 0 else (None, index[peer], pport)
            assert sw.hop is not None
            specs.append((sw.hop.ctx, sw.hop.capsule, sw, sw.arrivals, sw.forwarding_cnps,
                          sw.send_pfc_frames, links))
        fabric = fns["fab_new"](self.loop, partial, self.obs.pfc.intervals,
                                (self._switch_cnp, self._ce_marked, self._prio_of_rqp,
                                 self.obs.pfc.paused_flows),
                                (fns["fab_receive"], fns["fab_tick"]),
                                float(self.scenario.topology.prop_us),
                                (BTH_OPCODE_OFFSET, OPCODE_CNP, ECN_CE), specs, dict(hosts))
        # the loop's events are the fabric's: EventLoop.at and run on its heap in C
        self.loop.at = partial(fns["fab_at"], fabric)  # type: ignore[method-assign]
        for name, sw in self.switches.items():
            sw.attach_fabric(fns, fabric, index[name])
        self.carry = partial(fns["fab_carry"], fabric)  # type: ignore[method-assign]
        return fns, fabric

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
        self.switch_sent(sw, [(port, data, done_us)], now)

    def switch_sent(self, sw: FabricSwitch, outs: list[tuple[int, bytes, float]],
                    now: float) -> None:
        """Packets leaving ``sw`` at ``now``: (port, frame, time the last bit leaves)
        each, in order; what they show (CNP origins, CE marks, paused victims) is
        noted and each is carried to the peer."""
        deliveries = self._delivery[sw.name]
        heap, push, seq, prop = self._heap, self._push, self._seq, self._prop_us
        arrivals, intervals = sw.arrivals, self.obs.pfc.intervals
        for port, data, done_us in outs:
            if len(data) > BTH_OPCODE_OFFSET:
                if data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
                    if not sw.is_forwarded_cnp(data):
                        self._switch_cnp(data, now)
                else:
                    # packet_identity, inline: the arrival noted by FabricSwitch.receive
                    arrived = arrivals.pop(data[IP_PAIR] + data[QP_PSN], None)
                    if arrived is not None and intervals:
                        self._check_victim(sw, port, data, arrived, now)
                    if data[15] & 3 == ECN_CE:
                        self._ce_marked(data, now)
            deliver, pport = deliveries[port]
            t = done_us + prop
            push(heap, (now if now > t else t, next(seq),
                        partial(deliver, data) if pport < 0 else partial(deliver, pport, data)))

    def _switch_cnp(self, data: bytes, now: float) -> None:
        """A Fast CNP a switch built leaves it: where its delay is counted from."""
        view = parse_roce(data)
        if view is not None:
            self.cnp_origins[(view.dst_ip, view.dest_qp, "switch")].append(now)

    def _ce_marked(self, data: bytes, now: float) -> None:
        """A CE-marked data packet leaves a switch: the first such time per packet."""
        view = parse_roce(data)
        if view is not None:
            self.mark_time.setdefault((view.src_ip, view.dest_qp, view.psn), now)

    def _check_victim(self, sw: FabricSwitch, port: int, data: bytes, arrived: float,
                      now: float) -> None:
        """A data packet leaving (sw, port), there since ``arrived``: if its queue was
        paused while it waited, its flow was paused."""
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
        # wired now, not when built: whatever receives a packet is what the nodes are
        # when the run starts (a caller may have wrapped a NIC's on_packet meanwhile)
        self._delivery = self._deliveries()
        self._fabric = self._native_fabric()
        for msg in messages:
            rqp = receiver_qp(msg.spec, msg.sender, msg.receiver)
            self._prio_of_rqp[rqp] = data_queue(self.scheme, msg.role)
            nic = self.nics[msg.sender]
            self.loop.at(msg.start_us, lambda n=nic, m=msg: n.post(m))
        self._sample()
        end = self.scenario.duration_us + self.scenario.drain_us
        if self._fabric is not None:
            fns, fabric = self._fabric
            try:
                fns["fab_run"](fabric, end)    # EventLoop.run on the fabric's heap
            finally:
                fns["fab_close"](fabric)  # the heap's events hold the fabric, it them
                del self.loop.at          # the loop's own again
        else:
            self.loop.run(end)
        self.obs.pfc.close(end)
        return self.obs

    def _sample(self) -> None:
        now = self.loop.now
        if now > self.scenario.duration_us:
            return
        depths: dict[str, int] = {}
        for node, port in self._sample_ports:
            depths[f"{node}:{port}"] = self.switches[node].depth(port)
        depths["paused_queues"] = len(self.obs.pfc.paused_since)
        self.obs.depth_samples.append((now, depths))
        for name, sw in self.switches.items():
            held = sw.held_packets()
            if held > self.obs.peak_buffer_pkts.get(name, 0):
                self.obs.peak_buffer_pkts[name] = held
        self.loop.at(now + self._sample_every, self._sample)
