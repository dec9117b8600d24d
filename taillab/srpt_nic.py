"""The host NIC of the ``tailcc-srpt`` scheme: tailcc_nic.p4 on softswitch's PNA target
(:class:`taillab.p4nic.P4HostNic`) under an endpoint transport, modelled here, that
schedules messages, not QPs, shortest remaining first.

* **Message-level SRPT at the sender**: within a mouse class the NIC feeds the message
  with the fewest bytes left among all the host has posted, also among messages on one
  connection (a later, shorter block to the same peer preempts an earlier, longer one
  packet by packet). RC's in-order delivery forbids that on one QP; a message transport
  (Homa, SRD, UEC's RUD) or a QP per outstanding message allows it. Packets keep their
  QP and PSN order on the wire; the receiver places each by PSN.
* **Receiver-paced large blocks** (:class:`Credit`; :data:`PACED_ROLES`: hot KV above
  the size split): a block sends its first :data:`WINDOW_BYTES` unasked, then its
  receiver grants a byte beyond the window for each that arrives (Homa's grants, one
  path delay late), so blocks converging on a node queue at most a window each. Where
  the switches weight the blocks' queue against MoE, every block is granted: no PFC
  pause for them. Where it is strict (no MoE: :func:`strict_large_blocks`), a receiver
  grants only its :data:`SRPT_GRANTS` blocks with the fewest bytes left, and the NIC
  weights queue 4 at :data:`LARGE_NIC_WEIGHT` against the elephants (SRPT across
  senders and at the sender, as a central schedule would); where MoE runs, at
  :data:`MOE_NIC_LARGE_WEIGHT` against MoE's 12, as the switches weight it.
* **MoE in smaller segments** (:data:`SEGMENT_BYTES`): a signal waits at each hop for
  the packet already on the wire, most often a MoE packet; 768-byte MoE segments
  shorten that wait (not an InfiniBand path MTU: a message transport's segment size).
* Everything else is tailcc-nic's: the NIC program, its per-class transmit queues, the
  per-QP DCQCN reaction point, the receivers and the switches.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taillab.p4nic import LARGE_BLOCK_QUEUE, NET_PORT, P4HostNic, large_blocks_only
from taillab.roce import (
    BTH_OPCODE_OFFSET,
    ECN_NOT_ECT,
    OPCODE_CNP,
    OPCODE_RC_SEND_ONLY,
    OPCODE_RC_WRITE_FIRST,
    OPCODE_RC_WRITE_LAST,
    OPCODE_RC_WRITE_MIDDLE,
    OPCODE_RC_WRITE_ONLY,
    build_roce,
)

if TYPE_CHECKING:
    from taillab.host_nic import _QP
    from taillab.network import Network
    from taillab.traffic import FabricMessage

SCHEME = "tailcc-srpt"
PACED_ROLES = frozenset({"hot_kv"})
SEGMENT_BYTES = {"moe_a2a": 768}  # payload per packet, where below the scenario's MTU
WINDOW_BYTES = 16384             # in flight per paced block: about a 10G link's round trip
SRPT_GRANTS = 2                  # blocks a receiver grants at once where queue 4 is strict
LARGE_NIC_WEIGHT = 64            # queue 4's DWRR weight in the NIC there (elephants' 1)
MOE_NIC_LARGE_WEIGHT = 8         # queue 4's where MoE runs (MoE's 12, the elephants' 1)


def strict_large_blocks(classes: list[str]) -> bool:
    """Does queue 4 hold only large hot KV blocks, strict in the switches (no MoE to
    weight it against)? There receivers grant SRPT and the NIC favours the blocks."""
    return large_blocks_only(set(classes)) and "moe_a2a" not in classes


def weighted_large_blocks(classes: list[str]) -> bool:
    """Does queue 4 hold only large hot KV blocks beside MoE? There the switches and
    the NICs weight it against MoE and bulk, and receivers pace every block."""
    return large_blocks_only(set(classes)) and "moe_a2a" in classes


@dataclass
class Credit:
    """The paced blocks of one network: what each may send (granted by its receiver),
    and which block each of their packets in flight belongs to. With ``overcommit`` set,
    a receiver grants only its ``overcommit`` blocks with the fewest bytes left to
    receive (Homa's SRPT grants); the others keep what they were granted."""

    net: Network
    enabled: bool
    overcommit: int | None = None
    window: int = WINDOW_BYTES
    allowed: dict[int, int] = field(default_factory=dict)        # message id -> bytes
    received: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    packets: dict[tuple[int, int], tuple[FabricMessage, int]] = field(default_factory=dict)
    senders: dict[int, SrptHostNic] = field(default_factory=dict)
    granted: dict[int, int] = field(default_factory=dict)        # receiver's view
    inbound: dict[int, dict[int, FabricMessage]] = field(
        default_factory=lambda: defaultdict(dict))               # receiver -> its blocks

    def start(self, msg: FabricMessage, nic: SrptHostNic) -> None:
        self.allowed[msg.msg_id] = self.granted[msg.msg_id] = self.window
        self.senders[msg.msg_id] = nic
        self.inbound[msg.receiver][msg.msg_id] = msg

    def arrived(self, rqp: int, psn: int) -> None:
        """A packet reached its receiver: if it is a paced block's, grant its sender
        one more packet's worth beyond the window (with ``overcommit``, to the
        receiver's blocks with the fewest bytes left)."""
        entry = self.packets.pop((rqp, psn), None)
        if entry is None:
            return
        msg, payload = entry
        got = self.received[msg.msg_id] = self.received[msg.msg_id] + payload
        if got >= msg.size:
            del self.received[msg.msg_id]
            for table in (self.allowed, self.senders, self.granted):
                table.pop(msg.msg_id, None)
            self.inbound[msg.receiver].pop(msg.msg_id, None)
        if self.overcommit is None:
            if got < msg.size:
                self._grant(msg)
            return
        ranked = sorted(self.inbound[msg.receiver].values(),
                        key=lambda m: (m.size - self.received.get(m.msg_id, 0), m.msg_id))
        for block in ranked[:self.overcommit]:
            self._grant(block)

    def _grant(self, msg: FabricMessage) -> None:
        """The receiver lets ``msg`` have a window beyond what it received; the grant
        reaches the sender a path delay later."""
        grant = min(msg.size, self.received.get(msg.msg_id, 0) + self.window)
        if grant <= self.granted.get(msg.msg_id, 0):
            return
        self.granted[msg.msg_id] = grant
        nic = self.senders[msg.msg_id]
        links = len(self.net.fabric.path_rates(msg.sender, msg.receiver))
        self.net.loop.at(self.net.loop.now + links * self.net.scenario.topology.prop_us,
                         lambda: nic.on_grant(msg, grant))


class SrptHostNic(P4HostNic):
    """tailcc-nic's NIC whose transport picks, on each QP, the message with the fewest
    bytes left (not the oldest), and orders the QPs of a class by that message."""

    def __init__(self, net: Network, host: int, rate_bps: float, rx_rate_bps: float | None,
                 checked: Any, credit: Credit) -> None:
        super().__init__(net, host, rate_bps, rx_rate_bps, checked)
        self.sent: dict[int, int] = {}       # message id -> bytes already packetised
        self.credit = credit
        self.parked: dict[int, _QP] = {}     # paced blocks waiting for a grant
        if strict_large_blocks(self.classes):
            self.tm.set_queue_weight(LARGE_NIC_WEIGHT, NET_PORT, LARGE_BLOCK_QUEUE)
        elif weighted_large_blocks(self.classes):
            self.tm.set_queue_weight(MOE_NIC_LARGE_WEIGHT, NET_PORT, LARGE_BLOCK_QUEUE)

    def post(self, msg: FabricMessage) -> None:
        if self.credit.enabled and msg.role in PACED_ROLES and msg.size > WINDOW_BYTES:
            self.credit.start(msg, self)
        super().post(msg)

    def on_grant(self, msg: FabricMessage, grant: int) -> None:
        """The receiver lets the block send up to ``grant`` bytes."""
        if msg.msg_id not in self.credit.allowed:
            return
        self.credit.allowed[msg.msg_id] = max(self.credit.allowed[msg.msg_id], grant)
        q = self.parked.pop(msg.msg_id, None)
        if q is not None:
            q.messages.append(msg)
            self.backlog[q.qp] = q
            self._kick(self.net.loop.now)

    def left(self, msg: FabricMessage) -> int:
        return msg.size - self.sent.get(msg.msg_id, 0)

    def _shortest(self, q: _QP) -> FabricMessage:
        return min(q.messages, key=self.left)

    def _srpt_key(self, q: _QP) -> tuple[int, int]:
        return (self.left(self._shortest(q)) if q.messages else 0), q.qp

    def _packetise(self, q: _QP, dscp: int = 0,
                   ecn: int = ECN_NOT_ECT) -> tuple[bytes, FabricMessage | None]:
        """The next packet of the QP's message with the fewest bytes left, and that
        message if this is its first packet."""
        msg = self._shortest(q)
        mtu = self.net.scenario.topology.mtu_payload
        mtu = min(mtu, SEGMENT_BYTES.get(msg.role, mtu))
        done = self.sent.get(msg.msg_id, 0)
        chunk = min(mtu, msg.size - done)
        first, last = done == 0, done + chunk >= msg.size
        if msg.size <= mtu:
            opcode = OPCODE_RC_SEND_ONLY if msg.size <= 256 else OPCODE_RC_WRITE_ONLY
        else:
            opcode = (OPCODE_RC_WRITE_FIRST if first else
                      OPCODE_RC_WRITE_LAST if last else OPCODE_RC_WRITE_MIDDLE)
        pkt = build_roce(q.addr, opcode, q.psn, chunk, dscp, ecn)
        self.net.expect(q.addr.dest_qp, q.psn, msg, last)
        allowed = self.credit.allowed.get(msg.msg_id)
        if allowed is not None:
            self.credit.packets[(q.addr.dest_qp, q.psn)] = (msg, chunk)
        q.psn = (q.psn + 1) & 0xFFFFFF
        if last:
            self.sent.pop(msg.msg_id, None)
            self._leave(q, msg)
        else:
            self.sent[msg.msg_id] = done + chunk
            if allowed is not None and done + chunk >= allowed:
                self._leave(q, msg)
                self.parked[msg.msg_id] = q
        return pkt, msg if first else None

    def _leave(self, q: _QP, msg: FabricMessage) -> None:
        """The message leaves its QP's sendable ones (sent, or waiting for a grant)."""
        q.messages.remove(msg)
        if not q.messages:
            del self.backlog[q.qp]

    def _consume(self, data: bytes) -> None:
        if data[BTH_OPCODE_OFFSET] != OPCODE_CNP:
            self.credit.arrived(
                int.from_bytes(data[BTH_OPCODE_OFFSET + 5:BTH_OPCODE_OFFSET + 8], "big"),
                int.from_bytes(data[BTH_OPCODE_OFFSET + 9:BTH_OPCODE_OFFSET + 12], "big"))
        super()._consume(data)
