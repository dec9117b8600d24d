"""Strict-priority queues under congestion: urgent mice overtake queued elephants.

A port is congested on purpose through the runtime channel (``set_queue_rate``, BMv2's
command, on softswitch's runtime channel or BMv2's Thrift CLI), and on softswitch
also by a slow link (``set_link_rate``, its extension), so packets really wait in the
queues and their departure order is the scheduler's.
"""

from __future__ import annotations

import statistics
import time

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from tailcc_base import TailccTest
from tailcc_packets import (
    ECT0,
    NH2_MAC,
    ROUTER_MAC,
    IntShim,
    int_probe,
    parse_int_record,
    roce,
    udp,
)

EGRESS = 2
# DSCP -> (class, queue): one class per queue 0..7 (the default profile's queues)
QUEUE_OF_DSCP = {0: (0, 0), 10: (3, 1), 18: (2, 2), 24: (4, 3), 32: (6, 4), 40: (7, 5),
                 48: (9, 6), 56: (10, 7)}


def dscp_of(frame: bytes) -> int:
    return Ether(frame)[IP].tos >> 2


class SchedulingBase(TailccTest):
    def setUp(self) -> None:
        super().setUp()
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", EGRESS, ROUTER_MAC, NH2_MAC)
        for dscp, (tc, queue_id) in QUEUE_OF_DSCP.items():
            self.traffic_class(100, "set_class", {"tc": tc, "queue": queue_id,
                                                  "ecn_profile": 0}, dscp=f"{dscp}&&&0x3f")


class UrgentOvertakesBulkTest(SchedulingBase):
    """The bulk queue of a port drains at 4 packets/s; 20 elephants wait in it. A small
    hot-KV packet sent after them leaves long before the bulk queue is empty, and the
    elephants keep their FIFO order."""

    def runTest(self) -> None:
        self.set_queue_rate(4, EGRESS, 0)
        for i in range(20):
            self.send(1, udp("10.0.2.9", 5000, dscp=0, size=1400, ident=i))
        time.sleep(0.2)
        sent_at = time.time()     # PTF stamps arrivals with time.time()
        self.send(1, roce("10.0.2.5", 0x123, 64, dscp=40))
        got = self.collect(EGRESS, 21, timeout=20)
        self.assertEqual(len(got), 21)
        order = [dscp_of(frame) for _, frame in got]
        urgent = order.index(40)
        self.assertLessEqual(urgent, 10, f"the urgent packet left {urgent + 1}th: {order}")
        latency = got[urgent][0] - sent_at
        self.assertLess(latency, 1.0, f"the urgent packet waited {latency:.3f} s")
        bulk_ids = [Ether(f)[IP].id for _, f in got if dscp_of(f) == 0]
        self.assertEqual(bulk_ids, list(range(20)), "bulk packets were reordered")


class StrictPriorityOrderTest(SchedulingBase):
    """A slow link (softswitch) is busy with one big packet while one small packet per
    queue arrives, lowest priority first: they leave in strict priority order, 7 to 0."""

    def runTest(self) -> None:
        self.set_link_rate(20_000, EGRESS)          # 2.5 kB/s: the blocker takes ~0.58 s
        self.send(1, udp("10.0.2.9", 5000, dscp=0, size=1400, ident=999))
        time.sleep(0.05)                            # it is on the wire before the rest
        for dscp in sorted(QUEUE_OF_DSCP, key=lambda d: QUEUE_OF_DSCP[d][1]):
            self.send(1, udp("10.0.2.9", 5000, dscp=dscp, size=40, ident=dscp))
        got = self.collect(EGRESS, 9, timeout=20)
        self.assertEqual(len(got), 9)
        queues = [QUEUE_OF_DSCP[dscp_of(f)][1] for _, f in got[1:]]
        ids = [Ether(f)[IP].id for _, f in got]
        self.assertEqual(ids[0], 999, f"the blocker leaves first (ids in order: {ids})")
        self.assertEqual(queues, [7, 6, 5, 4, 3, 2, 1, 0], f"departure order {queues}")
        for queue_id in range(8):
            self.assertGreaterEqual(self.packets("class_counter",
                                                 {q: tc for tc, q in
                                                  QUEUE_OF_DSCP.values()}[queue_id]), 1)


class MiceElephantsTest(SchedulingBase):
    """Mixed traffic into a congested port: elephants (1400-byte storage/training
    frames, queues 3 and 2, each queue drained at 10 packets/s) and mice (64-byte
    hot-KV RoCE, queue 5, every sixth packet). Every mouse gets through faster than
    the median elephant, and the mice keep their order."""

    def runTest(self) -> None:
        self.set_queue_rate(10, EGRESS, 3)
        self.set_queue_rate(10, EGRESS, 2)
        sent: dict[tuple[str, int], float] = {}
        for i in range(60):
            if i % 6 == 5:
                psn = i
                self.send(1, roce("10.0.2.5", 0x123, 64, dscp=40, psn=psn, ecn=ECT0))
                sent[("mouse", psn)] = time.time()
            else:
                dscp = 24 if i % 2 else 18
                self.send(1, udp("10.0.2.9", 6000 + i, dscp=dscp, size=1400, ident=i))
                sent[("elephant", i)] = time.time()
        got = self.collect(EGRESS, 60, timeout=30)
        self.assertEqual(len(got), 60)
        mice, elephants, mouse_order = [], [], []
        for t, frame in got:
            pkt = Ether(frame)
            if BTH in pkt:
                psn = pkt[BTH].psn
                mice.append(t - sent[("mouse", psn)])
                mouse_order.append(psn)
            else:
                elephants.append(t - sent[("elephant", pkt[IP].id)])
        self.assertEqual(len(mice), 10)
        self.assertEqual(mouse_order, sorted(mouse_order))
        median_elephant = statistics.median(elephants)
        self.assertLess(max(mice), median_elephant,
                        f"slowest mouse {max(mice):.3f} s, median elephant "
                        f"{median_elephant:.3f} s")


class QueueDepthPerQueueTest(SchedulingBase):
    """``enq_qdepth`` (as an INT probe reports it) is the depth of the packet's own
    priority queue, as BMv2 reports it since 1.15.1 (p4lang/behavioral-model#1270):
    with bulk packets waiting in queue 0 of a port, a probe into queue 5 of the same
    port finds its queue empty, a probe into queue 0 finds the bulk ahead of it.
    tailcc keys queue_depth, its watermark and the ECN/Fast CNP decisions on (port,
    queue), so another queue's backlog must not count."""

    def runTest(self) -> None:
        self.set_queue_rate(5, EGRESS, 0)           # before the bulk arrives
        for i in range(10):
            self.send(1, udp("10.0.2.9", 5000, dscp=0, size=200, ident=i))
        time.sleep(0.1)
        self.send(1, int_probe([], max_hops=4, dscp=40, ident=100))     # queue 5
        self.send(1, int_probe([], max_hops=4, dscp=0, ident=101))      # queue 0
        got = self.collect(EGRESS, 12, timeout=15)
        self.assertEqual(len(got), 12)
        hops = {Ether(f)[IP].id: parse_int_record(f) for _, f in got if IntShim in Ether(f)}
        urgent, bulk = hops[100], hops[101]
        self.assertEqual((urgent.queue_id, bulk.queue_id), (5, 0))
        self.assertGreaterEqual(bulk.enq_qdepth, 5,
                                "the probe in queue 0 did not see the bulk ahead of it")
        self.assertEqual(urgent.enq_qdepth, 0,
                         f"queue 5 was empty, but its probe saw depth {urgent.enq_qdepth} "
                         f"(queue 0 held {bulk.enq_qdepth})")
