"""Semantic classification: every class lands in its queue, with its DSCP rewrite.

Which queue a packet went through is observed on the switch itself: an ECN profile on
the egress port marks every ECT packet of every queue (Kmax 0), and the mark counter
is indexed by port*8 + queue, so each packet increments exactly the slot of the queue
it was scheduled in. The class shows in the class counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from tailcc_base import TailccTest
from tailcc_packets import (
    CE,
    ECT0,
    HOST1_MAC,
    NH2_MAC,
    ROUTER_MAC,
    roce,
    udp,
    vxlan,
)

EGRESS = 2

# The default profile (controlplane/profiles/default.yaml), entry by entry:
# (priority, match, action, params). Queues: 7 control, 6 CNP, 5 hot KV + scheduling,
# 4 TP/PP + MoE, 3 storage, 2 training bulk, 1 cold KV, 0 front end / best effort.
DEFAULT_PROFILE: list[tuple[int, dict[str, Any], str, dict[str, int]]] = [
    (1000, {"dscp": "56&&&0x3f"}, "set_class", {"tc": 10, "queue": 7, "ecn_profile": 5}),
    (990, {"dscp": "48&&&0x3f"}, "set_class", {"tc": 9, "queue": 6, "ecn_profile": 0}),
    (985, {"ip_proto": "17&&&0xff", "l4_dport": "4791..4791", "bth_opcode": "0x81..0x81"},
     "set_class", {"tc": 9, "queue": 6, "ecn_profile": 0}),
    (980, {"dscp": "26&&&0x3f", "ip_proto": "17&&&0xff", "l4_dport": "4791..4791",
           "bth_opcode": "0x06..0x0b"},
     "set_class", {"tc": 8, "queue": 5, "ecn_profile": 1}),
    (970, {"dscp": "40&&&0x3f", "packet_length": "0..512"},
     "set_class", {"tc": 7, "queue": 5, "ecn_profile": 1}),
    (960, {"dscp": "32&&&0x3f"}, "set_class", {"tc": 6, "queue": 4, "ecn_profile": 2}),
    (950, {"dscp": "34&&&0x3f"}, "set_class", {"tc": 5, "queue": 4, "ecn_profile": 2}),
    (940, {"dscp": "24&&&0x3f"}, "set_class", {"tc": 4, "queue": 3, "ecn_profile": 3}),
    (930, {"dscp": "18&&&0x3f"}, "set_class", {"tc": 2, "queue": 2, "ecn_profile": 4}),
    (920, {"dscp": "10&&&0x3f"}, "set_class", {"tc": 3, "queue": 1, "ecn_profile": 4}),
    (910, {"dscp": "0&&&0x3f", "ip_proto": "6&&&0xff"},
     "set_class", {"tc": 1, "queue": 0, "ecn_profile": 5}),
]


@dataclass
class Case:
    name: str
    tc: int
    queue: int
    sent: Packet
    expected: Packet


def _roce_write(dscp: int, ecn: int, ttl: int, smac: str, dmac: str, size: int = 256,
                opcode: int = 0x0a) -> Packet:
    """RDMA WRITE only: BTH + RETH (16 bytes) + data."""
    return (Ether(src=smac, dst=dmac)
            / IP(src="10.0.1.1", dst="10.0.2.5", tos=(dscp << 2) | ecn, ttl=ttl, id=1,
                 flags="DF")
            / UDP(sport=49152, dport=4791, chksum=0)
            / BTH(opcode=opcode, dqpn=0x123, psn=5)
            / Raw(bytes(16) + b"\x5a" * size))


def _udp_class(dscp: int, size: int = 64, ecn: int = ECT0, ttl: int = 64,
               smac: str = HOST1_MAC, dmac: str = ROUTER_MAC) -> Packet:
    return udp("10.0.2.9", 7000, dscp=dscp, ecn=ecn, ttl=ttl, smac=smac, dmac=dmac, size=size)


def _tcp_api(ecn: int, ttl: int, smac: str, dmac: str) -> Packet:
    return (Ether(src=smac, dst=dmac)
            / IP(src="10.0.1.1", dst="10.0.2.9", tos=ecn, ttl=ttl, id=9)
            / TCP(sport=40000, dport=443, flags="PA", seq=1000)
            / Raw(b"\x22" * 100))


def default_profile_cases() -> list[Case]:
    out = dict(ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)
    cases = [
        Case("control", 10, 7, _udp_class(56), _udp_class(56, ecn=CE, **out)),
        Case("cnp (dscp 48)", 9, 6, _udp_class(48), _udp_class(48, ecn=CE, **out)),
        Case("hot KV (RDMA WRITE, DSCP 26)", 8, 5,
             _roce_write(26, ECT0, 64, HOST1_MAC, ROUTER_MAC),
             _roce_write(26, CE, 63, ROUTER_MAC, NH2_MAC)),
        Case("scheduling signal (DSCP 40, small)", 7, 5, _udp_class(40, size=200),
             _udp_class(40, size=200, ecn=CE, **out)),
        Case("TP/PP (DSCP 32)", 6, 4, _udp_class(32), _udp_class(32, ecn=CE, **out)),
        Case("MoE (DSCP 34)", 5, 4, _udp_class(34), _udp_class(34, ecn=CE, **out)),
        Case("storage (DSCP 24)", 4, 3, _udp_class(24), _udp_class(24, ecn=CE, **out)),
        Case("training bulk (DSCP 18)", 2, 2, _udp_class(18), _udp_class(18, ecn=CE, **out)),
        Case("cold KV (DSCP 10)", 3, 1, _udp_class(10), _udp_class(10, ecn=CE, **out)),
        Case("front-end API (TCP)", 1, 0, _tcp_api(ECT0, 64, HOST1_MAC, ROUTER_MAC),
             _tcp_api(CE, 63, ROUTER_MAC, NH2_MAC)),
        # big DSCP 40 packet: not a scheduling signal (size bound) -> best effort
        Case("DSCP 40, 900 bytes: best effort", 0, 0, _udp_class(40, size=900),
             _udp_class(40, size=900, ecn=CE, **out)),
        Case("RoCE SEND on DSCP 26: not a WRITE -> best effort", 0, 0,
             _roce_write(26, ECT0, 64, HOST1_MAC, ROUTER_MAC, opcode=0x04),
             _roce_write(26, CE, 63, ROUTER_MAC, NH2_MAC, opcode=0x04)),
    ]
    return cases


class ClassQueueBase(TailccTest):
    def setUp(self) -> None:
        super().setUp()
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", EGRESS, ROUTER_MAC, NH2_MAC)
        # one profile for every queue and class of the egress port: mark every ECT packet,
        # so ecn_mark_counter[port*8 + queue] counts what each queue carried
        self.insert("ecn_profile", {"egress_port": f"{EGRESS}&&&0x1ff"}, "set_ecn_profile",
                    {"kmin_pkts": 0, "kmax_pkts": 0, "pmax_1024": 1024, "use_deq_qdepth": 0,
                     "drop_not_ect_enable": 0, "drop_threshold_pkts": 0}, priority=1)

    def queue_counts(self) -> dict[int, int]:
        return {q: self.packets("ecn_mark_counter", EGRESS * 8 + q) for q in range(8)}


class DefaultProfileQueuesTest(ClassQueueBase):
    """Each class of the default profile: forwarded as expected, counted in its class,
    scheduled in its queue (and no other)."""

    def runTest(self) -> None:
        for priority, match, action, params in DEFAULT_PROFILE:
            self.traffic_class(priority, action, params, **match)
        cases = default_profile_cases()
        expected_queues = [0] * 8
        expected_classes: dict[int, int] = {}
        for case in cases:
            with self.subTest(case=case.name):
                before = self.queue_counts()
                self.send(1, case.sent)
                self.expect(case.expected, EGRESS)
                after = self.queue_counts()
                moved = {q: after[q] - before[q] for q in range(8) if after[q] != before[q]}
                self.assertEqual(moved, {case.queue: 1},
                                 f"{case.name}: expected queue {case.queue}, queues "
                                 f"that carried it: {moved}")
            expected_queues[case.queue] += 1
            expected_classes[case.tc] = expected_classes.get(case.tc, 0) + 1
        self.expect_nothing()
        for tc, count in expected_classes.items():
            self.assertEqual(self.packets("class_counter", tc), count, f"class {tc}")
        self.assertEqual([self.queue_counts()[q] for q in range(8)], expected_queues)


class SmallPacketPromotionTest(ClassQueueBase):
    """The same QP range: small RoCE packets are hot KV (queue 5, DSCP kept), big ones
    storage (queue 3, DSCP rewritten to 24); scheduling signals by UDP port get DSCP 46;
    a transit VXLAN packet is classified on its VNI and inner DSCP (outer DSCP 34)."""

    def runTest(self) -> None:
        self.traffic_class(100, "set_class", {"tc": 8, "queue": 5, "ecn_profile": 1},
                           is_roce="1&&&1", bth_dst_qp="0x100..0x1ff",
                           packet_length="0..1100")
        self.traffic_class(90, "set_class_and_dscp",
                           {"tc": 7, "queue": 5, "ecn_profile": 1, "dscp": 46},
                           ip_proto="17&&&0xff", l4_dport="9000..9099")
        self.traffic_class(95, "set_class_and_dscp",
                           {"tc": 5, "queue": 4, "ecn_profile": 2, "dscp": 34},
                           vni="300&&&0xffffff", dscp="34&&&0x3f")
        self.traffic_class(50, "set_class_and_dscp",
                           {"tc": 4, "queue": 3, "ecn_profile": 2, "dscp": 24},
                           is_roce="1&&&1")
        out = dict(ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)
        self.send(1, roce("10.0.2.5", 0x123, 64))
        self.expect(roce("10.0.2.5", 0x123, 64, ecn=CE, **out), EGRESS)
        self.send(1, roce("10.0.2.5", 0x123, 1200))
        self.expect(roce("10.0.2.5", 0x123, 1200, dscp=24, ecn=CE, **out), EGRESS)
        self.send(1, roce("10.0.2.5", 0x456, 64))            # outside the QP range
        self.expect(roce("10.0.2.5", 0x456, 64, dscp=24, ecn=CE, **out), EGRESS)
        self.send(1, udp("10.0.2.9", 9000, ecn=ECT0))
        self.expect(udp("10.0.2.9", 9000, dscp=46, ecn=CE, **out), EGRESS)

        def transit(outer_dscp: int, ttl: int, smac: str, dmac: str) -> Packet:
            return (Ether(src=smac, dst=dmac)
                    / IP(src="192.168.5.5", dst="10.0.2.77", tos=outer_dscp << 2, ttl=ttl,
                         id=11)
                    / UDP(sport=51000, dport=4789, chksum=0)
                    / vxlan(300)
                    / Ether(src="00:00:00:00:0a:0a", dst="00:00:00:00:0b:0b")
                    / IP(src="172.16.1.1", dst="172.16.2.2", tos=(34 << 2) | 2, id=12)
                    / UDP(sport=1111, dport=2222) / Raw(b"\x66" * 32))
        self.send(1, transit(0, 64, HOST1_MAC, ROUTER_MAC))
        self.expect(transit(34, 63, ROUTER_MAC, NH2_MAC), EGRESS)
        self.expect_nothing()
        self.assertEqual(self.packets("class_counter", 8), 1)
        self.assertEqual(self.packets("class_counter", 4), 2)
        self.assertEqual(self.packets("class_counter", 7), 1)
        self.assertEqual(self.packets("class_counter", 5), 1)
        counts = self.queue_counts()
        # the transit packet's outer header is Not-ECT: never marked, so not in a slot
        self.assertEqual((counts[5], counts[3], counts[4]), (2, 2, 0))
