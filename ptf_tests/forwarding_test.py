"""LPM forwarding, TTL/hop limit, L2 fallback, drops and ECMP over P4Runtime."""

from __future__ import annotations

import zlib
from collections import Counter

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from tailcc_base import TailccTest
from tailcc_packets import NH2_MAC, NH3_MAC, NH4_MAC, ROUTER_MAC, udp, udp6

DROP_TTL_EXPIRED, DROP_NO_ROUTE = 4, 5


class LpmTtlTest(TailccTest):
    """Longest prefix wins, TTL 64 -> 63 with a fresh checksum, TTL 1 is a counted drop,
    IPv6 hop limit likewise, unrouted frames bridge, misses drop (counted)."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.route("10.0.0.0/8", 3, ROUTER_MAC, NH3_MAC)
        self.route("10.0.2.0/24", 2, ROUTER_MAC, NH2_MAC)
        self.insert("routing_v6", {"vrf": 0, "ipv6_dst": "2001:db8::/32"}, "set_nexthop",
                    {"port": 2, "smac": ROUTER_MAC, "dmac": NH2_MAC})
        self.insert("l2_exact", {"eth_dst": NH4_MAC}, "l2_forward", {"port": 4})

        self.send(1, udp("10.0.2.7", 5000))
        self.expect(udp("10.0.2.7", 5000, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC), 2)
        self.send(1, udp("10.9.9.9", 5000, ttl=9))
        self.expect(udp("10.9.9.9", 5000, ttl=8, smac=ROUTER_MAC, dmac=NH3_MAC), 3)
        self.send(1, udp6("2001:db8:2::2", 2000))
        self.expect(udp6("2001:db8:2::2", 2000, hlim=63, smac=ROUTER_MAC, dmac=NH2_MAC), 2)
        bridged = udp("10.0.2.7", 5000, dmac=NH4_MAC)
        self.send(1, bridged)
        self.expect(bridged, 4)
        self.expect_nothing()

        self.send(1, udp("10.0.2.7", 5000, ttl=1))
        self.send(1, udp6("2001:db8:2::2", 2000, hlim=1))
        self.send(1, udp("10.0.2.7", 5000, dmac="00:00:00:00:09:09"))   # unknown MAC
        self.send(1, udp("20.0.0.1", 5000))                             # no route
        self.expect_nothing()
        self.assertEqual(self.wait_counter("ingress_drop_counter", DROP_TTL_EXPIRED, 2), 2)
        self.assertEqual(self.wait_counter("ingress_drop_counter", DROP_NO_ROUTE, 2), 2)


class RouteUpdateTest(TailccTest):
    """A MODIFY of a route moves traffic at once; a DELETE falls back to the shorter
    prefix (what a controller's reconcile relies on)."""

    def runTest(self) -> None:
        from controlplane.p4rt.client import update

        self.router(ROUTER_MAC)
        self.route("10.0.0.0/8", 3, ROUTER_MAC, NH3_MAC)
        entry = self.b.table_entry("routing_v4", {"vrf": 0, "ipv4_dst": "10.0.2.0/24"},
                                   "set_nexthop", {"port": 2, "smac": ROUTER_MAC,
                                                   "dmac": NH2_MAC})
        self.client.write([update("INSERT", entry)])
        self.send(1, udp("10.0.2.7", 5000))
        self.expect(udp("10.0.2.7", 5000, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC), 2)

        moved = self.b.table_entry("routing_v4", {"vrf": 0, "ipv4_dst": "10.0.2.0/24"},
                                   "set_nexthop", {"port": 4, "smac": ROUTER_MAC,
                                                   "dmac": NH4_MAC})
        self.client.write([update("MODIFY", moved)])
        self.send(1, udp("10.0.2.7", 5000))
        self.expect(udp("10.0.2.7", 5000, ttl=63, smac=ROUTER_MAC, dmac=NH4_MAC), 4)

        self.client.write([update("DELETE", moved)])
        self.send(1, udp("10.0.2.7", 5000))
        self.expect(udp("10.0.2.7", 5000, ttl=63, smac=ROUTER_MAC, dmac=NH3_MAC), 3)
        self.expect_nothing()


class EcmpTest(TailccTest):
    """An ECMP group of three next hops (ecmp_group: member count; ecmp_member: one
    next hop per member index): every flow sticks to one member, the member is the
    flow hash (CRC-32 of the outer 5-tuple) mod the count on every target, and many
    flows use every member."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        members = [(2, NH2_MAC), (3, NH3_MAC), (4, NH4_MAC)]
        self.insert("ecmp_group", {"group_id": 7}, "set_ecmp_members",
                    {"count": len(members)})
        for index, (port, mac) in enumerate(members):
            self.insert("ecmp_member", {"group_id": 7, "member": index}, "set_nexthop",
                        {"port": port, "smac": ROUTER_MAC, "dmac": mac})
        self.insert("routing_v4", {"vrf": 0, "ipv4_dst": "10.7.0.0/16"}, "set_ecmp_group",
                    {"group_id": 7})

        by_port = dict(members)
        used: Counter[int] = Counter()
        for flow in range(24):
            sport = 20000 + 37 * flow
            ports_seen = set()
            for _ in range(2):      # the same flow twice: same member
                self.send(1, udp("10.7.1.1", 4791 + 1, sport=sport))
                got = self._one_of(list(by_port))
                self.assertIsNotNone(got, f"flow {flow}: no packet on any member port")
                port, frame = got
                pkt = Ether(frame)
                self.assertEqual(pkt[IP].ttl, 63)
                self.assertEqual(pkt[UDP].sport, sport)
                self.assertEqual(pkt.dst, by_port[port])
                ports_seen.add(port)
            self.assertEqual(len(ports_seen), 1, f"flow {flow} was split over {ports_seen}")
            port = ports_seen.pop()
            five = (bytes([10, 0, 1, 1, 10, 7, 1, 1, 17]) + sport.to_bytes(2, "big")
                    + (4791 + 1).to_bytes(2, "big"))
            self.assertEqual(port, members[zlib.crc32(five) % len(members)][0],
                             f"flow {flow}: member is not the flow hash mod the count")
            used[port] += 1
        self.assertEqual(set(used), set(by_port), f"members used: {dict(used)}")
        self.expect_nothing()

    def _one_of(self, ports: list[int]) -> tuple[int, bytes] | None:
        result = self.dataplane.poll(device_number=0, port_number=None, timeout=3)
        if isinstance(result, self.dataplane.PollSuccess) and result.port in ports:
            return result.port, bytes(result.packet)
        return None
