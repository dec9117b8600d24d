"""The host NIC of the ``tailcc-srpt`` scheme: tailcc_nic.p4 on softswitch's PNA target
(:class:`taillab.p4nic.P4HostNic`) under an endpoint transport, modelled here, that
schedules messages, not QPs, shortest remaining first.

* **Message-level SRPT at the sender**: within a mouse class the NIC feeds the message
  with the fewest bytes left among all the host has posted, also among messages on one
  connection (a later, shorter block to the same peer preempts an earlier, longer one
  packet by packet). RC's in-order delivery forbids that on one QP; a message transport
  (Homa, SRD, UEC's RUD) or a QP per outstanding message allows it. Packets keep their
  QP and PSN order on the wire; the receiver places each by PSN.
* Everything else is tailcc-nic's: the NIC program, its per-class transmit queues, the
  per-QP DCQCN reaction point, the receivers and the switches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taillab.p4nic import P4HostNic
from taillab.roce import (
    ECN_NOT_ECT,
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


class SrptHostNic(P4HostNic):
    """tailcc-nic's NIC whose transport picks, on each QP, the message with the fewest
    bytes left (not the oldest), and orders the QPs of a class by that message."""

    def __init__(self, net: Network, host: int, rate_bps: float, rx_rate_bps: float | None,
                 checked: Any) -> None:
        super().__init__(net, host, rate_bps, rx_rate_bps, checked)
        self.sent: dict[int, int] = {}       # message id -> bytes already packetised

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
        q.psn = (q.psn + 1) & 0xFFFFFF
        if last:
            q.messages.remove(msg)
            self.sent.pop(msg.msg_id, None)
            if not q.messages:
                del self.backlog[q.qp]
        else:
            self.sent[msg.msg_id] = done + chunk
        return pkt, msg if first else None
