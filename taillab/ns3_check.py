"""Cross-check against ns-3 (PyPI ``ns3`` 3.44, ``from ns import ns``): the same
reference scenarios in ns-3 and in the lab's queueing substrate, on the *same* packet
arrival times, compared by P50/P99 queueing delay.

* ``red``: one bottleneck with RED-ECN (instantaneous queue, ECT(0) traffic, marks not
  drops), Poisson arrivals of one class.
* ``priority``: two classes under Poisson load, strict priority (ns-3 PrioQueueDisc,
  band 0 before band 1; the lab: the traffic manager's strict-priority queues).

ns-3 side: the sources are sockets on the bottleneck node itself, so the only queue is
the bottleneck's (queue disc + a one-packet device queue); the queueing delay of a
packet is its one-way delay minus serialisation and propagation, read from a SeqTs
header at the receiver. The C++ glue (scheduling sends at given times, receiving) is
compiled by cppyy, ns-3's own binding layer. Lab side: softswitch's EgressPort with
RED decided on the depth a packet joins, as ecn_marking.p4 does.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from softswitch.tm.scheduler import EgressPort
from taillab.report import percentile

WIRE_BYTES = 1000            # PPP frame: 2 + IPv4 20 + UDP 8 + payload 970 (SeqTs 12 inside)
PAYLOAD = WIRE_BYTES - 30
PROP_US = 1.0

_CPP = r"""
#include <vector>
namespace taillab_ns3 {
using namespace ns3;
std::vector<double> g_delay[2];
std::vector<int> g_seq_class;
double g_tx_s = 0, g_prop_s = 0;

void Recv(Ptr<Socket> sock) {
  Ptr<Packet> p;
  while ((p = sock->Recv())) {
    SeqTsHeader h; p->RemoveHeader(h);
    uint32_t seq = h.GetSeq();
    int cls = g_seq_class[seq];
    double d = (Simulator::Now() - h.GetTs()).GetSeconds() - g_tx_s - g_prop_s;
    g_delay[cls].push_back(d);
  }
}

void Send(Ptr<Socket> sock, uint32_t seq, uint32_t size, uint8_t prio) {
  Ptr<Packet> p = Create<Packet>(size - 12);
  SeqTsHeader h; h.SetSeq(seq); p->AddHeader(h);
  SocketPriorityTag tag; tag.SetPriority(prio); p->ReplacePacketTag(tag);
  sock->Send(p);
}

void Schedule(Ptr<Socket> sock, const std::vector<double>& times,
              const std::vector<unsigned>& seqs, uint32_t size, uint8_t prio) {
  for (size_t i = 0; i < times.size(); ++i)
    Simulator::Schedule(Seconds(times[i]), &Send, sock, seqs[i], size, prio);
}
}
"""


@dataclass
class CrossCheck:
    """P50/P99 queueing delay (µs) per class, ns-3 and lab, and RED marks."""

    ns3: dict[int, tuple[float, float]]
    lab: dict[int, tuple[float, float]]
    packets: int
    lab_marks: int = 0
    ns3_marks: int = 0

    def worst_ratio_error(self, floor_us: float) -> float:
        """Largest relative difference over classes and percentiles; a delay below
        ``floor_us`` (a tenth of a packet time) counts as equal to the floor, so a P50
        of ~0 in both does not divide by zero."""
        worst = 0.0
        for cls, (n50, n99) in self.ns3.items():
            l50, l99 = self.lab[cls]
            for a, b in ((n50, l50), (n99, l99)):
                a, b = max(a, floor_us), max(b, floor_us)
                worst = max(worst, abs(a - b) / a)
        return worst


def arrivals(loads: dict[int, float], packets: int, rate_bps: float,
             seed: int) -> list[tuple[float, int]]:
    """Poisson packet arrivals (µs, class) with per-class load shares of the link."""
    rng = random.Random(seed)
    pkt_us = WIRE_BYTES * 8 / rate_bps * 1e6
    total = sum(loads.values())
    horizon = packets * pkt_us / total
    out: list[tuple[float, int]] = []
    for cls, load in loads.items():
        t = rng.expovariate(load / pkt_us)
        while t < horizon:
            out.append((t, cls))
            t += rng.expovariate(load / pkt_us)
    out.sort()
    return out


def lab_delays(arr: list[tuple[float, int]], rate_bps: float, red: tuple[int, int, float]
               | None, seed: int, committed: int = 1) -> tuple[dict[int, list[float]], int]:
    """Queueing delays (arrival -> start of transmission) with the traffic manager's
    scheduler: class 0 is the higher priority (queue 1), class 1 the lower (queue 0), as
    in the ns-3 PrioQueueDisc run.

    ``committed``: packets the scheduler has already handed to the transmitter besides
    the one on the wire. ns-3's point-to-point device holds one (its device queue, which
    traffic control refills as soon as a transmission starts), so a high-priority packet
    can wait behind one low-priority packet more than at a switch, where the scheduler
    picks when the wire is free (``committed=0``, what softswitch does)."""
    rng = random.Random(seed + 7)
    port = EgressPort(0, num_queues=2)                # no link rate: the wire is modelled here
    for q in (0, 1):
        port.queue_config(q).capacity_pkts = 10**9
    tx_us = WIRE_BYTES * 8 / rate_bps * 1e6
    delays: dict[int, list[float]] = {0: [], 1: []}
    fifo: deque[Any] = deque()
    marks, i, now, wire_free = 0, 0, 0.0, 0.0

    def refill() -> None:
        while len(fifo) < committed and (d := port.dequeue(now)) is not None:
            fifo.append(d.packet)

    def start_next() -> None:
        nonlocal wire_free
        if not fifo and (d := port.dequeue(now)) is not None:
            fifo.append(d.packet)
        if fifo:
            pkt = fifo.popleft()
            delays[pkt.item].append(now - pkt.enq_time_us)
            wire_free = now + tx_us
            refill()

    while i < len(arr) or port.depth() or fifo:
        busy = wire_free > now
        if i < len(arr) and (not busy or arr[i][0] <= wire_free):
            now = max(now, arr[i][0])
            cls = arr[i][1]
            i += 1
            if red is not None:                       # RED on the depth the packet joins
                kmin, kmax, pmax = red
                depth = port.depth() + len(fifo)
                marks += depth >= kmax or (depth > kmin and
                                           rng.random() < pmax * (depth - kmin) / (kmax - kmin))
            port.enqueue(cls, WIRE_BYTES, 1 - cls, now)
            if wire_free > now:
                refill()
            else:
                start_next()
        else:
            now = max(now, wire_free)
            start_next()
    return delays, marks


def ns3_delays(arr: list[tuple[float, int]], rate_bps: float,
               red: tuple[int, int, float] | None) -> tuple[dict[int, list[float]], int]:
    """The same arrivals through an ns-3 point-to-point bottleneck."""
    import cppyy
    from ns import ns  # noqa: PLC0415 - ns-3 takes seconds to load; only here

    if not hasattr(cppyy.gbl, "taillab_ns3"):
        cppyy.cppdef(_CPP)
    glue = cppyy.gbl.taillab_ns3
    for v in glue.g_delay:
        v.clear()
    glue.g_seq_class.clear()
    nodes = ns.NodeContainer()
    nodes.Create(2)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(rate_bps)}bps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue(f"{PROP_US}us"))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
    devices = p2p.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    tch = ns.TrafficControlHelper()
    if red is not None:
        kmin, kmax, pmax = red
        tch.SetRootQueueDisc("ns3::RedQueueDisc", "UseEcn", ns.BooleanValue(True),
                             "UseHardDrop", ns.BooleanValue(False),
                             "MinTh", ns.DoubleValue(kmin), "MaxTh", ns.DoubleValue(kmax),
                             "LInterm", ns.DoubleValue(1 / pmax), "QW", ns.DoubleValue(1.0),
                             "MeanPktSize", ns.UintegerValue(WIRE_BYTES - 2),
                             "MaxSize", ns.QueueSizeValue(ns.QueueSize("100000p")))
    else:
        handle = tch.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap", ns.StringValue(
            "1 1 1 1 1 1 0 1 1 1 1 1 1 1 1 1"))
        cids = tch.AddQueueDiscClasses(handle, 2, "ns3::QueueDiscClass")
        for c in (0, 1):
            tch.AddChildQueueDisc(handle, cids[c], "ns3::FifoQueueDisc", "MaxSize",
                                  ns.QueueSizeValue(ns.QueueSize("100000p")))
    qdiscs = tch.Install(devices.Get(0))
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    ifaces = addr.Assign(devices)
    udp = ns.UdpSocketFactory.GetTypeId()
    sink = ns.Socket.CreateSocket(nodes.Get(1), udp)
    sink.Bind(ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 9).ConvertTo())
    sink.SetRecvCallback(ns.MakeCallback(glue.Recv))
    glue.g_tx_s = WIRE_BYTES * 8 / rate_bps
    glue.g_prop_s = PROP_US * 1e-6
    dest = ns.InetSocketAddress(ifaces.GetAddress(1), 9).ConvertTo()
    for cls in (0, 1):
        sock = ns.Socket.CreateSocket(nodes.Get(0), udp)
        sock.Bind()
        sock.Connect(dest)
        sock.SetIpTos(0x02)                          # ECT(0): RED marks instead of drops
        times = cppyy.gbl.std.vector["double"]()
        seqs = cppyy.gbl.std.vector["unsigned"]()
        for seq, (t, c) in enumerate(arr):
            if c == cls:
                times.push_back(t * 1e-6)
                seqs.push_back(seq)
        # the packet's priority tag picks the band: priomap 6 -> band 0 (served first)
        glue.Schedule(sock, times, seqs, PAYLOAD, 6 if cls == 0 else 0)
    for _, c in arr:
        glue.g_seq_class.push_back(c)
    ns.Simulator.Stop(ns.Seconds(arr[-1][0] * 1e-6 + 0.05))
    ns.Simulator.Run()
    root = qdiscs.Get(0)
    marks = int(root.GetStats().nTotalMarkedPackets)
    if red is None:
        bands = [root.GetQueueDiscClass(b).GetQueueDisc().GetStats().nTotalReceivedPackets
                 for b in range(root.GetNQueueDiscClasses())]
        if min(bands) == 0:
            raise RuntimeError(f"ns-3 priority bands received {bands}: no priority applied")
    ns.Simulator.Destroy()
    return {c: [d * 1e6 for d in glue.g_delay[c]] for c in (0, 1)}, marks


def cross_check(kind: str, packets: int, rate_bps: float = 10e9, seed: int = 1) -> CrossCheck:
    """``kind``: "red" (one class at load 0.9, RED 5-40 packets, Pmax 0.2) or
    "priority" (class 0 at 0.3 above class 1 at 0.5)."""
    if kind == "red":
        loads, red = {0: 0.9}, (5, 40, 0.2)
    elif kind == "priority":
        loads, red = {0: 0.3, 1: 0.5}, None
    else:
        raise ValueError(f"cross-check kind {kind!r}: red or priority")
    arr = arrivals(loads, packets, rate_bps, seed)
    lab, marks = lab_delays(arr, rate_bps, red, seed)
    theirs, ns3_marks = ns3_delays(arr, rate_bps, red)

    def p(d: dict[int, list[float]]) -> dict[int, tuple[float, float]]:
        return {c: (percentile(sorted(v), 50), percentile(sorted(v), 99))
                for c, v in d.items() if v}
    return CrossCheck(p(theirs), p(lab), len(arr), marks, ns3_marks)


def main(argv: list[str] | None = None) -> int:
    """``python -m taillab.ns3_check [--packets N]``: both cross-checks, their figures,
    exit 1 if a P50/P99 differs by more than 10%."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--packets", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    worst = 0.0
    for kind in ("red", "priority"):
        r = cross_check(kind, args.packets, seed=args.seed)
        err = r.worst_ratio_error(0.08)
        worst = max(worst, err)
        print(f"{kind}: {r.packets} packets; P50/P99 queueing delay (us) per class: ns-3 "
              f"{r.ns3}, lab {r.lab}; worst difference {err * 100:.2f}%; RED marks ns-3 "
              f"{r.ns3_marks}, lab {r.lab_marks}")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
