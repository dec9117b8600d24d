"""ECN over VXLAN: RFC 6040 decapsulation (all 16 combinations) and encapsulation."""

from __future__ import annotations

import ptf.mask
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from tailcc_base import TailccTest
from tailcc_packets import (
    CE,
    ECN_NAME,
    ECT0,
    ECT1,
    HOST1_MAC,
    NH2_MAC,
    NH3_MAC,
    NOT_ECT,
    RFC6040,
    ROUTER_MAC,
    tenant_inner,
    udp,
    vxlan_outer,
    vxlan_tunnel,
)

DROP_RFC6040 = 2
ALL_ECN = (NOT_ECT, ECT0, ECT1, CE)


class Rfc6040DecapTest(TailccTest):
    """Every inner x outer ECN pair through a terminated tunnel: the inner packet leaves
    with RFC 6040's combined ECN; outer CE over Not-ECT is dropped and counted."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.insert("vxlan_termination", {"outer_ipv4_dst": "192.168.0.1", "vni": 100},
                    "terminate_vxlan", {"vrf": 7})
        self.route("172.16.0.0/16", 2, ROUTER_MAC, NH2_MAC, vrf=7)
        drops = 0
        for inner in ALL_ECN:
            for outer in ALL_ECN:
                result = RFC6040[inner][outer]
                with self.subTest(inner=ECN_NAME[inner], outer=ECN_NAME[outer]):
                    self.send(1, vxlan_outer(tenant_inner(inner, 64, HOST1_MAC, ROUTER_MAC),
                                             outer_ecn=outer))
                    if result is None:
                        drops += 1
                    else:
                        self.expect(tenant_inner(result, 63, ROUTER_MAC, NH2_MAC), 2)
                    self.expect_nothing(timeout=0.2)
        self.assertEqual(drops, 1)
        self.assertEqual(self.wait_counter("vxlan_decap_counter", 0, 15), 15)
        self.assertEqual(self.packets("vxlan_decap_counter", 1), 1)
        self.assertEqual(self.packets("ingress_drop_counter", DROP_RFC6040), 1)


class VxlanEncapCopyTest(TailccTest):
    """A VXLAN next hop copies the inner ECN and DSCP to the outer header (RFC 6040
    normal mode) for every ECN value; RoCE (BTH + RETH) rides inside unchanged."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.insert("routing_v4", {"vrf": 0, "ipv4_dst": "172.16.9.0/24"},
                    "set_nexthop_vxlan",
                    {"port": 3, "smac": ROUTER_MAC, "dmac": NH3_MAC,
                     "vtep_src": "192.168.0.1", "vtep_dst": "192.168.0.2", "vni": 200})
        for ecn in ALL_ECN:
            with self.subTest(ecn=ECN_NAME[ecn]):
                self.send(1, udp("172.16.9.9", 6000, dscp=10, ecn=ecn))
                inner = udp("172.16.9.9", 6000, dscp=10, ecn=ecn, ttl=63, smac=ROUTER_MAC,
                            dmac=NH3_MAC)
                self.expect(self._entropy_masked(vxlan_tunnel(inner, dscp=10, ecn=ecn)), 3)
        roce_in = (Ether(src=HOST1_MAC, dst=ROUTER_MAC)
                   / IP(src="10.0.1.1", dst="172.16.9.5", tos=(26 << 2) | ECT0, ttl=64, id=1,
                        flags="DF")
                   / UDP(sport=49152, dport=4791, chksum=0)
                   / BTH(opcode=0x0a, dqpn=0x321, psn=9)
                   / Raw(bytes(range(16)) + b"\x5a" * 64))
        roce_inner = (Ether(src=ROUTER_MAC, dst=NH3_MAC)
                      / IP(src="10.0.1.1", dst="172.16.9.5", tos=(26 << 2) | ECT0, ttl=63,
                           id=1, flags="DF")
                      / UDP(sport=49152, dport=4791, chksum=0)
                      / BTH(opcode=0x0a, dqpn=0x321, psn=9)
                      / Raw(bytes(range(16)) + b"\x5a" * 64))
        self.send(1, roce_in)
        self.expect(self._entropy_masked(vxlan_tunnel(roce_inner, dscp=26, ecn=ECT0)), 3)
        self.expect_nothing()
        self.assertEqual(self.packets("vxlan_encap_counter", 0), 5)

    @staticmethod
    def _entropy_masked(pkt):
        """The outer UDP source port carries flow-hash entropy (0xC000 | hash[13:0]):
        only its two top bits are fixed."""
        mask = ptf.mask.Mask(pkt)
        mask.set_do_not_care(8 * (14 + 20) + 2, 14)
        return mask
