"""Per-class RED/ECN marking in egress.

Thresholds tests need no queue: Kmax 0 puts every packet above Kmax, Kmin 1000 every
packet below Kmin. The RED band needs a real queue: the egress queue drains at 10
packets/s, set before the burst arrives, and the 60-packet burst reaches it within a
fraction of a second, so packet i finds about i packets ahead of it; the queue then
drains in about six seconds at the same rate (on BMv2 a packet's departure time is
fixed when it is enqueued, so a rate changed later would not speed it up). Each
packet of the burst is an INT probe, so it carries the very ``enq_qdepth`` the
marking used; the test checks each packet against its own depth.
"""

from __future__ import annotations

import math

from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from tailcc_base import TailccTest
from tailcc_packets import (
    CE,
    ECT0,
    ECT1,
    NH2_MAC,
    NOT_ECT,
    ROUTER_MAC,
    int_probe,
    parse_int_record,
    udp,
    udp6,
)

EGRESS = 2
DROP_NOT_ECT_QUEUE = 6


class EcnThresholdsTest(TailccTest):
    """Above Kmax every ECT(0)/ECT(1) packet (IPv4 and IPv6) becomes CE; CE stays CE;
    Not-ECT is never marked; below Kmin nothing is marked; Not-ECT at the drop
    threshold of a lossy profile is dropped; counters per (port, queue)."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", EGRESS, ROUTER_MAC, NH2_MAC)
        self.insert("routing_v6", {"vrf": 0, "ipv6_dst": "2001:db8::/32"}, "set_nexthop",
                    {"port": EGRESS, "smac": ROUTER_MAC, "dmac": NH2_MAC})
        self.traffic_class(10, "set_class", {"tc": 6, "queue": 4, "ecn_profile": 3},
                           l4_dport="7000..7999")
        self.traffic_class(10, "set_class", {"tc": 2, "queue": 3, "ecn_profile": 4},
                           l4_dport="8000..8999")
        self.ecn_profile(EGRESS, 4, 3, kmin=0, kmax=0)
        self.ecn_profile(EGRESS, 3, 4, kmin=1000, kmax=2000, use_deq=1, drop_not_ect=1,
                         drop_threshold=0)
        out = dict(ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)
        for ecn_in, ecn_out in ((ECT0, CE), (ECT1, CE), (CE, CE), (NOT_ECT, NOT_ECT)):
            with self.subTest(ecn=ecn_in):
                self.send(1, udp("10.0.2.9", 7000, dscp=32, ecn=ecn_in))
                self.expect(udp("10.0.2.9", 7000, dscp=32, ecn=ecn_out, **out), EGRESS)
        self.send(1, udp6("2001:db8:2::2", 7001, dscp=32, ecn=ECT0))
        self.expect(udp6("2001:db8:2::2", 7001, dscp=32, ecn=CE, hlim=63, smac=ROUTER_MAC,
                         dmac=NH2_MAC), EGRESS)
        for ecn in (ECT0, ECT1):                 # below Kmin: untouched
            self.send(1, udp("10.0.2.9", 8000, dscp=18, ecn=ecn))
            self.expect(udp("10.0.2.9", 8000, dscp=18, ecn=ecn, **out), EGRESS)
        self.send(1, udp("10.0.2.9", 8000, dscp=18, ecn=NOT_ECT))   # lossy: dropped
        self.expect_nothing()
        self.assertEqual(self.packets("ecn_mark_counter", EGRESS * 8 + 4), 3)
        self.assertEqual(self.packets("ecn_mark_counter", EGRESS * 8 + 3), 0)
        self.assertEqual(self.packets("ecn_drop_counter", EGRESS * 8 + 3), 1)
        self.assertEqual(self.packets("ecn_drop_counter", EGRESS * 8 + 4), 0)


def mark_probability(depth: int, kmin: int, kmax: int, pmax: int) -> float:
    """The program's rule, from docs/pipeline.md: never at or below Kmin, always at or
    above Kmax, in between r*(Kmax-Kmin) < Pmax*(depth-Kmin) for r uniform in 0..1023."""
    if depth >= kmax:
        return 1.0
    if depth <= kmin:
        return 0.0
    bound = pmax * (depth - kmin)
    width = kmax - kmin
    return min(1024, math.ceil(bound / width)) / 1024


class EcnRedBandTest(TailccTest):
    """A burst into a held queue: ECT packets at or below Kmin are never marked, at or
    above Kmax always, in between about Pmax*(depth-Kmin)/(Kmax-Kmin) of them (within
    four standard deviations of the binomial sum); Not-ECT packets are never marked."""

    kmin, kmax, pmax = 8, 40, 1024
    burst = 60
    queue_id = 4
    drain_pps = 10

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", EGRESS, ROUTER_MAC, NH2_MAC)
        self.traffic_class(10, "set_class", {"tc": 6, "queue": self.queue_id, "ecn_profile": 2},
                           ip_proto="17&&&0xff", l4_dport="6765..6765")
        self.ecn_profile(EGRESS, self.queue_id, 2, kmin=self.kmin, kmax=self.kmax,
                         pmax=self.pmax)
        # the queue's pace, set before the burst: it builds while the burst arrives
        self.set_queue_rate(self.drain_pps, EGRESS, self.queue_id)
        for i in range(self.burst):
            ecn = NOT_ECT if i % 5 == 4 else ECT0
            self.send(1, int_probe([], 0, 4, ecn=ecn, ident=i, sport=40000 + i))
        got = self.collect(EGRESS, self.burst, timeout=5 + 3 * self.burst / self.drain_pps)
        self.assertEqual(len(got), self.burst, "the burst did not come out whole")

        expected = variance = 0.0
        band = marked_in_band = 0
        depths = []
        for _, frame in got:
            ip = Ether(frame)[IP]
            hop = parse_int_record(frame)
            depth, was_ect, ce = hop.enq_qdepth, ip.id % 5 != 4, ip.tos & 3 == CE
            depths.append(depth)
            self.assertEqual(hop.queue_id, self.queue_id)
            if not was_ect:
                self.assertFalse(ce, f"Not-ECT packet {ip.id} was marked")
                continue
            p = mark_probability(depth, self.kmin, self.kmax, self.pmax)
            if p == 0.0:
                self.assertFalse(ce, f"packet {ip.id} at depth {depth} <= Kmin was marked")
            elif p == 1.0 and depth >= self.kmax:
                self.assertTrue(ce, f"packet {ip.id} at depth {depth} >= Kmax not marked")
            else:
                band += 1
                marked_in_band += ce
                expected += p
                variance += p * (1 - p)
        self.assertGreaterEqual(max(depths), self.kmax,
                                f"the queue never reached Kmax (depths {depths})")
        self.assertGreaterEqual(band, 10, f"too few packets in the RED band (depths {depths})")
        tolerance = 4 * math.sqrt(variance) + 1
        self.assertLessEqual(abs(marked_in_band - expected), tolerance,
                             f"{marked_in_band} of {band} marked in the band, expected "
                             f"{expected:.1f} ± {tolerance:.1f}")
