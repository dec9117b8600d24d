"""The tailcc NIC (p4src/nic/tailcc_nic.p4) with packets through ``softswitch run``:
frames go in at the host port or the network port and come out of the other one (and
back), with the NIC programmed over P4Runtime as the controller programs it.

Run with ``ptf_tests/run.py --suite nic`` (softswitch: host port 1, network port 2,
loopback port 9). One test per NIC feature; tests/test_tailcc_nic.py checks the same
features in-process, with more cases.
"""

from __future__ import annotations

import struct
import time

from scapy.contrib.roce import BTH  # noqa: E402  (binds UDP 4791 to BTH)
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

from ptf_tests.tailcc_base import TailccTest  # noqa: E402

HOST, NET, LOOP = 1, 2, 9
LOCAL_QP, PEER_QP, SLOT = 0x200, 0x300, 5
EV_BASE = 0xC000
CLASS_ROCE, Q_ROCE, Q_URGENT = 8, 5, 7
RC_SEND_ONLY, RC_WRITE_ONLY, RC_ACK, CNP = 0x04, 0x0A, 0x11, 0x81
HOST_MAC, PEER_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"


def roce(opcode: int, dst_qp: int, payload: int = 64, src: str = "10.0.0.1",
         dst: str = "10.0.0.2", sport: int = 50000, ecn: int = 0, extra: bytes = b"",
         smac: str = HOST_MAC, dmac: str = PEER_MAC) -> Ether:
    bth = struct.pack("!BBHII", opcode, 0, 0xFFFF, dst_qp & 0xFFFFFF, 0)
    return (Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, tos=ecn)
            / UDP(sport=sport, dport=4791, chksum=0) / bth / extra / (b"\x5a" * payload))


def from_peer(opcode: int, dst_qp: int, **kw: object) -> Ether:
    return roce(opcode, dst_qp, src="10.0.0.2", dst="10.0.0.1", smac=PEER_MAC,
                dmac=HOST_MAC, **kw)


class NicTest(TailccTest):
    """The NIC with the controller's tables: ports, one QP, hot_kv's class policy.

    Not in PTF's standard group: the switch suite's run (PTF walks ptf_tests/ and its
    subfolders) must not run these against tailcc.p4; ``run.py --suite nic`` names them."""

    _nonstandard = True

    def setUp(self) -> None:
        super().setUp()
        for src, dst in ((HOST, NET), (NET, HOST), (LOOP, NET)):
            self.insert("port_map", {"input_port": src}, "to_port", {"port": dst})
        self.insert("qp_class", {"dst_qp": PEER_QP}, "set_qp_class",
                    {"nic_class": CLASS_ROCE, "ev_count": 4, "ev_base": EV_BASE,
                     "slot": SLOT, "urgent_max_len": 200})
        self.insert("local_qp", {"local_qp": LOCAL_QP}, "set_local_qp",
                    {"slot": SLOT, "peer_qp": PEER_QP, "nic_class": CLASS_ROCE})
        self.insert("class_policy", {"nic_class": CLASS_ROCE}, "set_class_policy",
                    {"dscp": 26, "ecn_capable": 1, "queue": Q_ROCE})
        self.insert("qp_rate", {"qp_slot": SLOT}, "set_qp_rate",
                    {"max_bytes_per_1024ns": 100, "min_bytes_per_1024ns": 2,
                     "burst_bytes": 2000})
        self.insert("rx_fast_path", {"bth_opcode": f"{RC_ACK}&&&0xff",
                                     "aeth_syndrome": "0x60&&&0xe0"}, "fast_path",
                    priority=10)
        self.clone_session(7, LOOP)

    def sent_to(self, port: int, count: int, timeout: float = 5.0) -> list[Ether]:
        return [Ether(data) for _, data in self.collect(port, count, timeout)]


class TxStampsDscpEct0(NicTest):
    """Host -> network: QP class -> DSCP 26, ECT(0), EV in the UDP source port."""

    def runTest(self) -> None:
        sent = roce(RC_WRITE_ONLY, PEER_QP, payload=600)
        self.send(HOST, sent)
        expected = sent.copy()
        expected[IP].tos = (26 << 2) | 2
        expected[UDP].sport = EV_BASE + 1
        del expected[IP].chksum
        self.expect(Ether(bytes(expected)), NET)
        self.expect_nothing()


class TxEntropySpraysOverEvs(NicTest):
    def runTest(self) -> None:
        for _ in range(5):
            self.send(HOST, roce(RC_WRITE_ONLY, PEER_QP))
        got = [p[UDP].sport - EV_BASE for p in self.sent_to(NET, 5)]
        self.assertEqual(got, [1, 2, 3, 0, 1])


class TxUrgentOvertakesBulk(NicTest):
    """A small SEND-only waits behind no more than the bulk packet on the wire: the
    network port is shaped (softswitch's link rate) and bulk queued first."""

    def runTest(self) -> None:
        self.set_link_rate(50_000, NET)      # 170 ms per bulk frame: a queue builds
        for _ in range(5):
            self.send(HOST, roce(RC_WRITE_ONLY, PEER_QP, payload=1000))
        self.send(HOST, roce(RC_SEND_ONLY, PEER_QP, payload=16))
        got = self.sent_to(NET, 6, timeout=20.0)
        opcodes = [bytes(p[UDP].payload)[0] for p in got]
        self.assertEqual(len(opcodes), 6)
        self.assertLessEqual(opcodes.index(RC_SEND_ONLY), 2, opcodes)


class RxCnpReaction(NicTest):
    """Network -> NIC: a CNP ends at the NIC, cuts the QP's rate, marks its EV."""

    def runTest(self) -> None:
        self.send(NET, from_peer(CNP, LOCAL_QP, payload=16, sport=EV_BASE + 2))
        self.assertEqual(self.wait_counter("cnp_received", SLOT, 1), 1)
        self.assertEqual(self.register_read("NicMain.rate.rate", SLOT), 50)   # 100 halved
        for _ in range(4):                    # within EV_CE_HOLD_NS (50 ms) of the CNP
            self.send(HOST, roce(RC_WRITE_ONLY, PEER_QP))
        evs = [p[UDP].sport - EV_BASE for p in self.sent_to(NET, 4)]
        self.assertNotIn(2, evs)
        # each packet >= 100 us after the last change recovers the rate by 1/8
        self.assertGreater(self.register_read("NicMain.rate.rate", SLOT), 50)


class RxReceiverCnp(NicTest):
    """CE-marked data for our QP: delivered to the host, and a CNP to the sender. (The
    50 us spacing is shown in tests/test_tailcc_nic.py on a frozen clock: frames
    through veths and a Python switch are further apart than that.)"""

    def runTest(self) -> None:
        data = from_peer(RC_WRITE_ONLY, LOCAL_QP, payload=300, ecn=3, sport=EV_BASE + 3)
        self.send(NET, data)
        self.expect(data, HOST)
        (cnp,) = self.sent_to(NET, 1)
        self.assertEqual((cnp[IP].src, cnp[IP].dst, cnp[IP].len), ("10.0.0.1", "10.0.0.2", 60))
        self.assertEqual((cnp[BTH].opcode, cnp[BTH].dqpn, cnp[BTH].becn), (CNP, PEER_QP, 1))
        self.assertEqual(cnp[UDP].sport, EV_BASE + 3)
        again = cnp.copy()
        again[BTH].icrc = None
        self.assertEqual(Ether(bytes(again))[BTH].icrc, cnp[BTH].icrc)
        self.expect_nothing(timeout=0.3)
        self.assertEqual(self.wait_counter("cnp_decisions", 0, 1), 1)


class RxNakFastPath(NicTest):
    def runTest(self) -> None:
        nak = from_peer(RC_ACK, LOCAL_QP, payload=0, extra=struct.pack("!I", 0x60 << 24))
        self.send(NET, nak)
        self.expect(nak, HOST)
        self.assertEqual(self.wait_counter("fast_path_packets", 0, 1), 1)


class RxParserErrorDropped(NicTest):
    def runTest(self) -> None:
        bad = bytearray(bytes(from_peer(RC_WRITE_ONLY, LOCAL_QP)))
        bad[14] = 0x46                        # IPv4 IHL 6: not parsed
        self.send(NET, bytes(bad))
        self.expect_nothing()
        self.assertEqual(self.wait_counter("nic_drops", 0, 1), 1)


class FlowCountersPerClass(NicTest):
    """Counters per direction and class (and flows learned on the way)."""

    def runTest(self) -> None:
        for _ in range(3):
            self.send(HOST, roce(RC_WRITE_ONLY, PEER_QP))
        self.assertEqual(len(self.sent_to(NET, 3)), 3)
        self.assertEqual(self.wait_counter("class_packets", CLASS_ROCE, 3), 3)
        time.sleep(0.05)
