"""Fast CNP: the congested switch sends the RoCEv2 CNP to the sender itself.

The congestion trigger is the queue depth egress publishes in ``queue_depth``; the
byte-exact tests write that register over P4Runtime (as the STF suite does), the
burst tests use a ``qdepth_threshold`` of 0 so that every packet of the class asks for
a CNP and only the per-flow rate limit decides. Expected CNPs are scapy's ``cnp()``
(BTH opcode 0x81, BECN, P_Key 0xffff, 16 reserved bytes) with scapy's ICRC.

The CNP leaves by the sender's port in the CNP queue on both targets: the clone goes to
the recirculation port, is built into a CNP there and recirculated (BMv2 gives clones
priority 0, so a clone sent straight to the sender's port would queue behind its bulk).
``CnpOvertakesBulkTest`` checks exactly that against a real backlog.
"""

from __future__ import annotations

import time

from p4.v1 import p4runtime_pb2
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from tailcc_base import TailccTest
from tailcc_packets import (
    CE,
    CNP_RECIRCULATION_PORT,
    CNP_SESSION,
    ECT0,
    HOST1_MAC,
    HOST3_MAC,
    NH2_MAC,
    NOT_ECT,
    ROUTER_MAC,
    cnp_packet,
    roce,
    udp,
)

from controlplane.p4rt.values import decode

SENT, UNRESOLVED, RATE_LIMITED = 0, 1, 2
EGRESS, HOT_KV_QUEUE = 2, 5
SLOT = EGRESS * 8 + HOT_KV_QUEUE
CNP_QUEUE = 6


def is_cnp(frame: bytes) -> bool:
    pkt = Ether(frame)
    return BTH in pkt and pkt[BTH].opcode == 0x81


class FastCnpBase(TailccTest):
    """Router, a route to the receivers, RoCE -> hot KV (queue 5), the CNP sessions."""

    min_interval = 1_000_000_000
    threshold = 10
    keep_ce = 0

    def setUp(self) -> None:
        super().setUp()
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", EGRESS, ROUTER_MAC, NH2_MAC)
        self.traffic_class(100, "set_class", {"tc": 8, "queue": HOT_KV_QUEUE, "ecn_profile": 1},
                           is_roce="1&&&1")
        # the class's queue marks every ECT packet (Kmax 0), so suppression is visible
        self.ecn_profile(EGRESS, HOT_KV_QUEUE, 1, kmin=0, kmax=0)
        self.insert("fast_cnp_policy", {"traffic_class": "8&&&0xf"}, "enable_fast_cnp",
                    {"qdepth_threshold": self.threshold, "min_interval": self.min_interval,
                     "cnp_dscp": 48, "cnp_priority": CNP_QUEUE, "keep_ce": self.keep_ce},
                    priority=10)
        self.insert("cnp_flow", {"ipv4_src": "10.0.1.1", "ipv4_dst": "10.0.2.5",
                                 "dst_qp": 0x123}, "set_sender_qp",
                    {"sender_qp": 0x456, "flow_index": 7})
        self.insert("cnp_flow", {"ipv4_src": "10.0.1.2", "ipv4_dst": "10.0.2.5",
                                 "dst_qp": 0x124}, "set_sender_qp",
                    {"sender_qp": 0x789, "flow_index": 8})
        # the one CNP session: to the recirculation port, then out of the data's
        # ingress port in CNP_QUEUE (no class_of_service: BMv2 refuses it)
        self.clone_session(CNP_SESSION, CNP_RECIRCULATION_PORT)

    def congest(self, depth: int = 20) -> None:
        self.register_write("queue_depth", SLOT, depth)

    def flow_a(self, ecn: int = ECT0, **kw: object):
        return roce("10.0.2.5", 0x123, 256, sport=49999, ecn=ecn, **kw)

    def flow_a_out(self, ecn: int):
        return roce("10.0.2.5", 0x123, 256, sport=49999, ttl=63, ecn=ecn, smac=ROUTER_MAC,
                    dmac=NH2_MAC)

    def flow_b(self, **kw: object):
        return roce("10.0.2.5", 0x124, 256, src="10.0.1.2", sport=50001, smac=HOST3_MAC, **kw)


class CnpBytesTest(FastCnpBase):
    """A RoCE packet joining a congested queue: the data goes on unmarked (keep_ce 0)
    and the exact 74-byte CNP (scapy's cnp() with ICRC) goes back out of the ingress
    port to the sender, with the sender's QP; below the threshold nothing is sent."""

    def runTest(self) -> None:
        self.congest()
        self.send(1, self.flow_a())
        self.expect(self.flow_a_out(ECT0), EGRESS)
        expected = cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456)
        self.assertEqual(len(bytes(expected)), 74)
        self.expect(expected, 1)
        self.expect_nothing()

        self.congest(5)                       # below the threshold: ECN only
        self.send(1, self.flow_a())
        self.expect(self.flow_a_out(CE), EGRESS)
        self.expect_nothing()
        self.assertEqual(self.packets("fast_cnp_counter", SENT), 1)
        self.assertEqual(self.packets("fast_cnp_built_counter", 0), 1)


class CnpKeepCeTest(FastCnpBase):
    """keep_ce 1 (the default profile's choice): the sender gets its CNP and the data
    packet is still marked CE, so the receiver's own DCQCN logic keeps working."""

    keep_ce = 1

    def runTest(self) -> None:
        self.congest()
        self.send(1, self.flow_a())
        self.expect(self.flow_a_out(CE), EGRESS)
        self.expect(cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456), 1)
        self.expect_nothing()
        self.assertEqual(self.packets("ecn_mark_counter", SLOT), 1)


class CnpVlanTest(FastCnpBase):
    """An 802.1Q-tagged RDMA WRITE from port 3: a 78-byte tagged CNP goes back out of
    port 3 (not port 1), to the second sender's QP."""

    def runTest(self) -> None:
        self.congest()

        def tagged(ttl: int, smac: str, dmac: str):
            return (Ether(src=smac, dst=dmac) / Dot1Q(vlan=10)
                    / IP(src="10.0.1.2", dst="10.0.2.5", tos=(26 << 2) | ECT0, ttl=ttl, id=1,
                         flags="DF")
                    / UDP(sport=50001, dport=4791, chksum=0)
                    / BTH(opcode=0x0a, dqpn=0x124, psn=5)
                    / Raw(bytes(16) + b"\x5a" * 64))
        self.send(3, tagged(64, HOST3_MAC, ROUTER_MAC))
        self.expect(tagged(63, ROUTER_MAC, NH2_MAC), EGRESS)
        expected = cnp_packet(HOST3_MAC, "10.0.2.5", "10.0.1.2", 50001, 0x789, vlan=10)
        self.assertEqual(len(bytes(expected)), 78)
        self.expect(expected, 3)
        self.expect_nothing()


class CnpUnresolvedTest(FastCnpBase):
    """An unknown flow (no sender QP): no CNP, counted as unresolved, a qp_learn digest
    with (src, dst, receiver QP) reaches the controller; the data is marked CE instead.
    Not-ECT RoCE never asks for a CNP."""

    def runTest(self) -> None:
        digest = self.index.all("digests")[0]
        entity = p4runtime_pb2.Entity()
        entity.digest_entry.digest_id = digest.preamble.id
        entity.digest_entry.config.max_timeout_ns = 0
        entity.digest_entry.config.max_list_size = 1
        entity.digest_entry.config.ack_timeout_ns = 1_000_000_000
        self.write_entities("INSERT", [entity])

        self.congest()
        self.send(1, roce("10.0.2.5", 0x999, 256, sport=49999))
        self.expect(roce("10.0.2.5", 0x999, 256, sport=49999, ttl=63, ecn=CE,
                         smac=ROUTER_MAC, dmac=NH2_MAC), EGRESS)
        self.congest()
        self.send(1, self.flow_a(ecn=NOT_ECT))
        self.expect(self.flow_a_out(NOT_ECT), EGRESS)
        self.expect_nothing()
        self.assertEqual(self.packets("fast_cnp_counter", UNRESOLVED), 1)
        self.assertEqual(self.packets("fast_cnp_counter", SENT), 0)
        message = self.client.digests.get(timeout=10)
        self.assertEqual(message.digest_id, digest.preamble.id)
        members = [decode(m.bitstring) for m in message.data[0].struct.members]
        self.assertEqual(members, [0x0A000101, 0x0A000205, 0x999])


class CnpBurstRateLimitTest(FastCnpBase):
    """Under a burst from two flows, each flow gets one CNP per interval (3 s here):
    exactly one CNP per flow, out of that flow's own ingress port; a third, unresolved
    flow in the same burst gets none; after the interval the next packet gets a new
    one."""

    threshold = 0
    min_interval = 3_000_000      # µs

    def runTest(self) -> None:
        unresolved = roce("10.0.2.5", 0x999, 256, sport=49999)
        for _ in range(15):
            self.send(1, self.flow_a())
            self.send(3, self.flow_b())
            self.send(1, unresolved)
        data = self.collect(EGRESS, 45, timeout=10)
        cnps_a = self.collect(1, 2, timeout=1, accept=is_cnp)
        cnps_b = self.collect(3, 2, timeout=0.5, accept=is_cnp)
        self.assertEqual(len(data), 45, "every data packet is forwarded")
        span = data[-1][0] - data[0][0]
        self.assertLess(span, 3.0, "the switch took longer than one interval for the burst")
        self.assertEqual(len(cnps_a), 1, "port 1: one CNP for flow A, none for the "
                                         "unresolved flow")
        self.assertEqual(len(cnps_b), 1, "flow B: one CNP for the burst")
        self.assertEqual(cnps_a[0][1],
                         bytes(cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456)))
        self.assertEqual(cnps_b[0][1],
                         bytes(cnp_packet(HOST3_MAC, "10.0.2.5", "10.0.1.2", 50001, 0x789)))
        self.assertEqual(self.packets("fast_cnp_counter", SENT), 2)
        self.assertEqual(self.packets("fast_cnp_counter", RATE_LIMITED), 28)
        self.assertEqual(self.packets("fast_cnp_counter", UNRESOLVED), 15)

        time.sleep(max(0.0, cnps_a[0][0] + 3.3 - time.time()))
        self.send(1, self.flow_a())
        self.assertEqual(len(self.collect(1, 1, timeout=3, accept=is_cnp)), 1,
                         "a new interval: a new CNP")


class CnpPacedRateLimitTest(FastCnpBase):
    """Paced traffic of one flow with a 50 ms CNP interval: CNPs come about once per
    interval, never two within one. The bounds use the switch's own pace as seen on the
    data packets it forwarded (a loaded machine stretches the sender's gaps)."""

    threshold = 0
    min_interval = 50_000     # µs

    def runTest(self) -> None:
        count, gap = 80, 0.005
        for _ in range(count):
            self.send(1, self.flow_a())
            time.sleep(gap)
        data = self.collect(EGRESS, count, timeout=10)
        cnps = self.collect(1, count, timeout=1, accept=is_cnp)
        self.assertEqual(len(data), count)
        sent = self.packets("fast_cnp_counter", SENT)
        limited = self.packets("fast_cnp_counter", RATE_LIMITED)
        self.assertEqual(sent + limited, count)
        self.assertEqual(len(cnps), sent)
        times = [t for t, _ in data]
        span_us = (times[-1] - times[0]) * 1e6
        max_gap_us = max(b - a for a, b in zip(times, times[1:], strict=False)) * 1e6
        jitter_us = 5_000
        # never two CNPs within one interval
        self.assertLessEqual((sent - 1) * self.min_interval, span_us + jitter_us,
                             f"{sent} CNPs in {span_us / 1e3:.0f} ms")
        # and the limiter re-arms: one CNP at most (interval + largest gap) after the last
        floor = int(span_us / (self.min_interval + max_gap_us + jitter_us))
        self.assertGreaterEqual(sent, floor, f"{sent} CNPs in {span_us / 1e3:.0f} ms "
                                f"(largest gap {max_gap_us / 1e3:.1f} ms)")
        self.assertGreater(sent, 1)


class Cnp50usBurstTest(FastCnpBase):
    """The default interval (50 µs, a DCQCN receiver's): a back-to-back burst gets at
    most one CNP per 50 µs of the burst's duration, and at least one."""

    threshold = 0
    min_interval = 50

    def runTest(self) -> None:
        count = 30
        start = time.monotonic()
        for _ in range(count):
            self.send(1, self.flow_a())
        cnps = self.collect(1, count, timeout=3, accept=is_cnp)
        self.assertGreaterEqual(len(cnps), 1)
        span_us = (cnps[-1][0] - start) * 1e6
        sent = self.packets("fast_cnp_counter", SENT)
        limited = self.packets("fast_cnp_counter", RATE_LIMITED)
        self.assertEqual(sent + limited, count)
        self.assertEqual(len(cnps), sent)
        self.assertLessEqual((sent - 1) * self.min_interval, span_us)
        last = self.register_read("cnp_last_sent", 7)
        self.assertGreater(last, 0, "the flow's slot holds the last CNP time")


class CnpRealCongestionTest(FastCnpBase):
    """A real congested queue, no register writes: the hot-KV queue of the egress port
    drains at 5 packets/s, a RoCE burst piles up in it, the depth egress publishes
    crosses the threshold, and the sender gets its CNP while most of its burst is still
    queued (the point of Fast CNP: feedback before the queue drains)."""

    threshold = 4
    min_interval = 10_000_000      # µs: one CNP for the whole test

    def runTest(self) -> None:
        self.set_queue_rate(3, EGRESS, HOT_KV_QUEUE)
        for _ in range(12):
            self.send(1, self.flow_a())
        time.sleep(0.6)                  # a few dequeues publish the standing queue
        self.send(1, self.flow_a())
        cnps = self.collect(1, 2, timeout=3, accept=is_cnp)
        self.assertEqual(len(cnps), 1, "one CNP for the congested flow")
        self.assertEqual(cnps[0][1],
                         bytes(cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456)))
        self.set_queue_rate(1000, EGRESS, HOT_KV_QUEUE)
        data = self.collect(EGRESS, 13, timeout=10)
        self.assertEqual(len(data), 13)
        still_queued = sum(t > cnps[0][0] for t, _ in data)
        self.assertGreaterEqual(still_queued, 5,
                                "the CNP came only after the queue had drained")
        self.assertEqual(self.packets("fast_cnp_counter", SENT), 1)
        self.assertGreaterEqual(self.register_read("queue_depth_watermark", SLOT), 5)


class CnpOvertakesBulkTest(FastCnpBase):
    """The sender's own port is congested the other way: its best-effort queue drains
    at 3 packets/s behind 20 bulk packets. The CNP for the sender still leaves at once,
    in the CNP queue, ahead of that backlog (on BMv2 too, where clones get priority 0:
    the recirculated second pass sets the CNP queue)."""

    def runTest(self) -> None:
        self.route("10.0.1.0/24", 1, ROUTER_MAC, HOST1_MAC)
        self.set_queue_rate(3, 1, 0)          # before the backlog: BMv2 rates apply at enqueue
        backlog = 20
        for i in range(backlog):
            self.send(3, udp("10.0.1.1", 5000, src="10.0.2.9", size=1000, ident=i,
                             smac=HOST3_MAC))
        time.sleep(0.3)                       # the backlog is queued (one or two have left)
        self.congest()
        sent_at = time.time()                 # PTF stamps arrivals with time.time()
        self.send(1, self.flow_a())
        self.expect(self.flow_a_out(ECT0), EGRESS)
        frames = self.collect(1, backlog + 1, timeout=2)
        cnps = [(t, f) for t, f in frames if is_cnp(f)]
        self.assertEqual(len(cnps), 1, f"one CNP on port 1 among {len(frames)} frames")
        when, cnp = cnps[0]
        self.assertEqual(cnp, bytes(cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999,
                                               0x456)))
        self.assertLess(when - sent_at, 1.0, f"the CNP took {when - sent_at:.3f} s")
        bulk_before = sum(1 for t, f in frames if not is_cnp(f) and t <= when)
        self.assertLessEqual(bulk_before, 5, f"{bulk_before} bulk packets left before the "
                                             "CNP: it waited in the best-effort queue")
        self.set_queue_rate(10_000, 1, 0)
        bulk_seen = sum(1 for _, f in frames if not is_cnp(f))
        rest = self.collect(1, backlog - bulk_seen, timeout=10)
        self.assertEqual(bulk_seen + len(rest), backlog, "every bulk packet is delivered")
        self.assertEqual(self.packets("fast_cnp_built_counter", 0), 1)
