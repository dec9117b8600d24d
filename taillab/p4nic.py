"""The host NIC of the ``tailcc-nic`` scheme: tailcc's NIC program
(p4src/nic/tailcc_nic.p4) on softswitch's PNA target, with per-class transmit queues.

* **QPs** (:class:`taillab.host_nic._QP`) hold the posted messages in order, cut them
  into packets and keep the lab's DCQCN reaction point: a packet enters the NIC no
  earlier than its QP's rate allows. At most :data:`QP_WINDOW` packets of a QP are
  inside the NIC, so a backlog waits in its QP, not in front of other classes; within
  a strict (mouse) class the QP whose head message has the fewest bytes left feeds
  first (SRPT at the sender, as the size-split classes approximate it in the switches).
* **The NIC program** runs on every posted packet (host->net): class by destination QP
  (``qp_class``), small one-packet messages into the urgent queue, DSCP + ECT(0) and
  the class's transmit queue (``class_policy``). Hosts post DSCP 0 and Not-ECT, so the
  switches see what the program stamped.
* **The transmit queues** (:class:`softswitch.pna.tm.NicQueues`) serve the classes as
  the switches do, strict for the urgent queue and the small mouse classes, DWRR
  (:data:`NIC_DWRR_WEIGHTS`) for the elephants and for queue 4 when it holds only large
  hot KV blocks, at the host's line rate. PFC pauses the queue of the paused priority;
  the urgent queue (CNPs, as a NIC's CNP queue) is never paused.

The program's per-QP pacing (``qp_rate``) is not installed: one rate-limited queue
shared by every over-rate QP is coarser than the lab's per-QP DCQCN, the reaction point
in every scheme. Entropy spraying is off (``ev_count`` 0), so every scheme's packets
take the same ECMP paths. CNPs for the host pass the program's net->host pipeline
(consumed, counted, their entropy value marked) before the reaction point reacts. The
entries are those controlplane/compile/nic.py compiles, with the default profile's DSCPs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from softswitch.core.control import KeyMatch, PacketOut
from softswitch.pna.nic import Nic
from softswitch.pna.tm import NicQueues
from softswitch.tm import TrafficManager
from taillab.classes import DWRR_WEIGHTS, role
from taillab.host_nic import HostNic
from taillab.roce import BTH_OPCODE_OFFSET, ECN_NOT_ECT, OPCODE_CNP, PAUSE_QUANTA

if TYPE_CHECKING:
    from taillab.host_nic import _QP
    from taillab.network import Network
    from taillab.traffic import FabricMessage

HOST_PORT, NET_PORT, LOOPBACK_PORT = 0, 1, 9
CNP_SESSION = 7                 # include/defines.p4 CNP_MIRROR_SESSION
QUEUE_URGENT = 7                # include/defines.p4
QP_WINDOW = 2                   # packets of one QP inside the NIC at a time
NIC_QUEUE_DEPTH = 4096
RC_ACKNOWLEDGE, NAK_SYNDROME, NAK_MASK = 0x11, 0x60, 0xE0
# A one-packet message of at most 512 B of payload is small and urgent (the default
# profile's sched_signal: packet_size ..512): IPv4 + UDP + BTH + 512 + ICRC.
URGENT_MAX_IPV4_LEN = 20 + 8 + 12 + 512 + 4
# The NIC's DWRR weights per transmit queue. The switches keep queue 4 (large hot KV
# blocks, TP/PP) strict; one host's NIC does not: a block of up to 256 KB in a strict
# queue holds the host's 10 Gb/s link for about 200 us, longer than the MoE dispatch
# period, and the dispatches held behind it leave as one burst. So queue 4 shares by
# DWRR: MoE (queue 3) gets 3/4 of the link against it, more than MoE's offered load, so
# a dispatch keeps its period; queue 4 gets 4/5 against each elephant class (1:1 among
# themselves, as in the switches); MoE keeps its precedence over a host's elephants.
# Within queue 4 the QPs still feed shortest message first (_feed: mouse classes).
# Queue 4 is weighted only where it holds large blocks alone (large_blocks_only).
NIC_DWRR_WEIGHTS = {4: 4, 3: 12, 2: 1, 1: 1, 0: 1}
LARGE_BLOCK_QUEUE = 4
# The DSCP each lab class is stamped with: the default profile's class of that name
# (kv_migration is its "storage" class, bulk its "training_bulk").
# hot_kv_small keeps hot KV's DSCP: the switches tell it by its QP range.
CLASS_DSCP = {"control": 56, "hot_kv": 26, "sched_signal": 40, "tp_pp": 32,
              "moe_a2a": 34, "kv_migration": 24, "bulk": 18, "cold_kv": 10,
              "hot_kv_small": 26}
# class ids in the program's nic_class (bit<4>): the lab's traffic classes
CLASS_ID = {name: i + 1 for i, name in enumerate(CLASS_DSCP)}


def _km(name: str, value: int, mask: int | None = None) -> KeyMatch:
    return KeyMatch(name, "exact", value) if mask is None else \
        KeyMatch(name, "ternary", value, mask)


def program_nic(nic: Nic, qps: Iterable[tuple[int, int, str]], classes: Iterable[str]) -> None:
    """The entries compile_nic writes for one host: ``qps`` are (our QP, the peer's QP,
    class), ``classes`` the lab classes the scenario uses."""
    nic.set_ports(host=[HOST_PORT], net=[NET_PORT], loopback=LOOPBACK_PORT)
    for src, dst in ((HOST_PORT, NET_PORT), (NET_PORT, HOST_PORT), (LOOPBACK_PORT, NET_PORT)):
        nic.table_add("port_map", [_km("input_port", src)], "to_port", [dst])
    for slot, (local, peer, cls) in enumerate(qps):
        add_qp(nic, slot, local, peer, cls)
    for cls in sorted(set(classes)):
        nic.table_add("class_policy", [_km("nic_class", CLASS_ID[cls])], "set_class_policy",
                      [CLASS_DSCP[cls], 1, role(cls).queue])
    nic.table_add("rx_fast_path", [_km("dscp", 0, 0), _km("bth_opcode", RC_ACKNOWLEDGE, 0xFF),
                                   _km("aeth_syndrome", NAK_SYNDROME, NAK_MASK)],
                  "fast_path", [], priority=10)
    nic.mirroring_add(CNP_SESSION, LOOPBACK_PORT)


def add_qp(nic: Nic, slot: int, local_qp: int, peer_qp: int, cls: str) -> None:
    """One QP's entries: the transmit side keys the peer's QP (class, no EV spraying,
    its state slot, the urgent size), the receive side ours (CNPs for it)."""
    nic.table_add("qp_class", [_km("dst_qp", peer_qp)], "set_qp_class",
                  [CLASS_ID[cls], 0, 0, slot, URGENT_MAX_IPV4_LEN])
    nic.table_add("local_qp", [_km("local_qp", local_qp)], "set_local_qp",
                  [slot, peer_qp, CLASS_ID[cls]])


def transmit_queues(rate_bps: float, classes: Iterable[str]) -> TrafficManager:
    """The NIC's transmit queues on its network port: strict for the urgent queue and
    the small mouse classes, DWRR (:data:`NIC_DWRR_WEIGHTS`) between the elephant
    queues and queue 4 when it holds only large hot KV blocks, the host's line rate."""
    classes = set(classes)
    tm = TrafficManager(num_queues=8)
    tm.set_link_rate(rate_bps, NET_PORT)
    tm.set_queue_depth(NIC_QUEUE_DEPTH, NET_PORT)
    weights = dict(NIC_DWRR_WEIGHTS)
    if not large_blocks_only(classes):
        del weights[LARGE_BLOCK_QUEUE]
    weighted = sorted({role(c).queue for c in classes} & set(weights))
    if len(weighted) > 1:
        for q in weighted:
            tm.set_queue_weight(weights[q], NET_PORT, q)
    return tm


def large_blocks_only(classes: set[str]) -> bool:
    """Does queue 4 hold only large hot KV blocks (the scenario splits hot KV by size,
    and no TP/PP)? Only then does the NIC weight it: a small block, or a TP/PP
    message, in queue 4 stays strict above the elephants (weighted, a small block
    would wait behind its host's bulk)."""
    in_queue = {c for c in classes if role(c).queue == LARGE_BLOCK_QUEUE}
    return in_queue == {"hot_kv"} and "hot_kv_small" in classes


class P4HostNic(HostNic):
    """A host whose transmit path is tailcc_nic.p4 and its per-class queues; the QPs,
    the receive side and the notification point are :class:`HostNic`'s."""

    def __init__(self, net: Network, host: int, rate_bps: float, rx_rate_bps: float | None,
                 checked: Any) -> None:
        super().__init__(net, host, rate_bps, rx_rate_bps)
        self.classes = net.scenario.qp_ranges()
        self.nic = Nic.from_program(checked, fastpath="off")
        program_nic(self.nic, [], self.classes)
        self.queues = NicQueues(self.nic, transmit_queues(rate_bps, self.classes))
        self.tm = self.queues.tm
        self.by_rqp: dict[int, _QP] = {}
        self.in_nic: dict[int, int] = {}
        self.inside: dict[int, _QP] = {}     # the QPs with packets in the NIC
        self.first_packet: dict[tuple[int, int], int] = {}   # (rqp, psn) -> message id
        self.pipeline_packets = 0
        self.cnps_consumed = 0

    # --- host side: QPs feed the NIC ---------------------------------------------------
    def _qp(self, msg: FabricMessage) -> _QP:
        """The lab's QP; on first use the control plane installs its entries (the
        serving stack reports the QP, as for compile_nic's ``qps``)."""
        known = len(self.qps)
        q = super()._qp(msg)
        if len(self.qps) > known:
            add_qp(self.nic, known, q.qp, q.addr.dest_qp, msg.role)
            self.by_rqp[q.addr.dest_qp] = q
            self.in_nic[q.qp] = 0
        return q

    def _feed(self, now: float) -> float | None:
        """Every QP with room in the NIC and a rate that allows it posts its next packet
        through the NIC program into a transmit queue; returns when a rate-limited QP
        may post next. In a strict (mouse) class, QPs feed shortest remaining message
        first: a QP waits while one of its class with fewer bytes left has packets in
        the NIC or may send now, so two blocks a host posts at once do not both take
        twice their time (the elephants' DWRR classes keep taking turns)."""
        later: float | None = None
        ahead: set[int] = set()          # strict priorities already served this round
        active = [*self.backlog.values(),
                  *(q for qp, q in self.inside.items() if qp not in self.backlog)]
        for q in sorted(active, key=self._srpt_key):   # an idle QP neither feeds nor blocks
            # a mouse class (strict in the switches) feeds shortest first, queue 4
            # too, though the NIC's scheduler weights it (NIC_DWRR_WEIGHTS)
            strict = q.priority not in DWRR_WEIGHTS
            if strict and q.priority in ahead:
                continue
            fed = self.in_nic[q.qp] > 0
            while q.messages and self.in_nic[q.qp] < QP_WINDOW:
                if q.next_allowed_us > now:
                    later = q.next_allowed_us if later is None else min(later,
                                                                        q.next_allowed_us)
                    break
                psn = q.psn
                pkt, first = self._packetise(q, dscp=0, ecn=ECN_NOT_ECT)
                if first is not None:
                    self.first_packet[(q.addr.dest_qp, psn)] = first.msg_id
                q.next_allowed_us = now + len(pkt) * 8 / q.rp.current * 1e6
                q.rp.on_sent(len(pkt), now)
                self.in_nic[q.qp] += 1
                self.inside[q.qp] = q
                self.pipeline_packets += 1
                self.queues.receive(HOST_PORT, pkt, now)
                fed = True
            if strict and fed:
                ahead.add(q.priority)
        return later

    def _srpt_key(self, q: _QP) -> tuple[int, int]:
        """Bytes left of the QP's head message (0: only packets in the NIC left)."""
        left = q.messages[0].size - q.sent_of_head if q.messages else 0
        return left, q.qp

    def _send_next(self) -> None:
        """Feed the NIC, put what may leave on the wire, feed again (a packet that left
        makes room for its QP), and wake when the next one may leave or post."""
        now = self.net.loop.now
        while self.control:   # the notification point's CNPs: the urgent queue
            self.queues.enqueue(PacketOut(NET_PORT, self.control.popleft(),
                                          {"class_of_service": QUEUE_URGENT}), now)
        self._feed(now)
        for out, done_us in self.queues.transmit_ready(now):
            self._on_wire(out.data, now)
            self.net.carry(self.name, 0, out.data, done_us)
        later = self._feed(now)
        times = [t for t in (self.queues.next_event_us(now), later) if t is not None]
        if times:
            self._kick(max(min(times), now))

    def _on_wire(self, data: bytes, now: float) -> None:
        """A packet's first bit leaves: its QP has room for another; the first packet of
        a message ends its wait at the sender."""
        if data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            return
        rqp = int.from_bytes(data[BTH_OPCODE_OFFSET + 5:BTH_OPCODE_OFFSET + 8], "big")
        psn = int.from_bytes(data[BTH_OPCODE_OFFSET + 9:BTH_OPCODE_OFFSET + 12], "big")
        q = self.by_rqp[rqp]
        self.in_nic[q.qp] -= 1
        if not self.in_nic[q.qp]:
            del self.inside[q.qp]
        msg_id = self.first_packet.pop((rqp, psn), None)
        if msg_id is not None:
            self.net.obs.first_tx_us[msg_id] = now

    def pfc(self, priority: int, pause: bool) -> None:
        """PFC from the leaf pauses the transmit queue of that priority (the class
        queues are the switches' priorities)."""
        now = self.net.loop.now
        key = (self.name, 0, priority)
        self.tm.port(NET_PORT).pause(priority, PAUSE_QUANTA if pause else 0, now)
        self.paused_until[priority] = now + PAUSE_QUANTA * 512 / self.rate * 1e6 \
            if pause else now
        if pause:
            self.net.obs.pfc.start(key, now)
            for q in self.qps.values():
                if q.priority == priority and (q.messages or self.in_nic[q.qp]):
                    self.net.paused_qp(q)
        else:
            self.net.obs.pfc.end(key, now)
        self._kick(now)

    # --- receive: CNPs through the program's net->host pipeline ------------------------
    def on_packet(self, data: bytes) -> None:
        if len(data) > BTH_OPCODE_OFFSET and data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            self.nic.clock.freeze(int(self.net.loop.now))
            if self.nic.inject(NET_PORT, data):
                raise RuntimeError(f"{self.name}: tailcc_nic.p4 passed a CNP to the host")
            self.cnps_consumed += 1
        super().on_packet(data)
