"""The programs the mix runs inside the hosts: an open-loop UDP sender and a receiver.

Run by path with the project's interpreter (``python topologies/mix_traffic.py send|recv
JSON``), standard library only, so a host needs nothing installed. Plain sockets fit the
rates a software switch carries (a few thousand packets per second).

- **send**: one socket per flow (its DSCP set with ``IP_TOS``), each flow paced open
  loop at its own rate from one schedule, so a slow switch cannot slow the senders
  down (a closed loop would hide the queueing it causes): mice as Poisson arrivals,
  elephants at a constant mean rate, each gap jittered (no phase lock with a queue).
  Every datagram carries ``MAGIC, flow id, sequence number, send time``
  (``CLOCK_REALTIME`` ns, read just before ``sendto``); a RoCEv2 flow (UDP port 4791)
  starts with a 12-byte BTH so the switch classifies it by opcode. At the end it prints
  one JSON object: per flow the datagrams and bytes sent.
- **recv**: one socket per destination port, ``SO_TIMESTAMPNS``: the kernel stamps each
  datagram when it arrives, so the receiver's own scheduling adds nothing to the
  latency. One-way delay is exact because every host shares the machine's clock. It
  prints ``progress N`` once a second and, at the end (deadline or SIGTERM), writes
  one record per datagram to a binary file (``<IIqq``: flow id, sequence number, send
  ns, receive ns; payload size per flow in the summary line).
"""

from __future__ import annotations

import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

MAGIC = 0x7A11CC01
HEADER = struct.Struct("!IHIq")          # magic, flow id, sequence, send time (ns)
RECORD = struct.Struct("<IIqq")          # flow id, sequence, send ns, receive ns
ROCE_PORT = 4791
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
ELEPHANT_JITTER = 0.25                   # of an elephant's mean gap, each way


def bth(opcode: int, dst_qp: int, psn: int) -> bytes:
    """A RoCEv2 Base Transport Header: opcode, flags 0, P_Key 0xffff, DestQP, PSN."""
    return struct.pack("!BBHII", opcode, 0, 0xFFFF, dst_qp & 0xFFFFFF, psn & 0xFFFFFF)


def next_gap(flow: dict, rng: random.Random) -> float:
    """Seconds to a flow's next datagram: exponential for a Poisson flow (mice), else
    its mean gap jittered uniformly by up to +-ELEPHANT_JITTER (elephants)."""
    if flow.get("poisson"):
        return rng.expovariate(flow["pps"])
    return rng.uniform(1.0 - ELEPHANT_JITTER, 1.0 + ELEPHANT_JITTER) / flow["pps"]


def send(cfg: dict) -> dict:
    """Send every flow of ``cfg`` open loop for ``cfg['seconds']``; counts per flow."""
    flows = cfg["flows"]
    socks = []
    for f in flows:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f["dscp"] << 2)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        s.connect((f["dst"], f["port"]))
        socks.append(s)
    start = time.monotonic() + cfg.get("start_delay", 0.0)
    end = start + cfg["seconds"]
    # first departures spread over one interval each, so flows do not start in lockstep
    heap = [(start + (i + 1) / (len(flows) + 1) / f["pps"], i) for i, f in enumerate(flows)]
    # mice arrive as a Poisson process (seeded: the same run twice sends the same
    # gaps), elephants at a constant mean rate with each gap jittered by up to
    # +-ELEPHANT_JITTER: strictly periodic flows phase-lock with a tail-drop queue (the
    # same flow always meets the full queue, so of two classes offered at the same rate
    # one loses nearly everything)
    rngs = [random.Random(cfg.get("seed", 0) * 1000 + f["id"]) for f in flows]
    heapq.heapify(heap)
    seq = [0] * len(flows)
    sent_bytes = [0] * len(flows)
    errors = [0] * len(flows)
    while heap:
        due, i = heapq.heappop(heap)
        if due >= end:
            continue
        wait = due - time.monotonic()
        if wait > 0.0002:
            time.sleep(wait)
        f = flows[i]
        head = bth(0x0A, f["id"], seq[i]) if f["port"] == ROCE_PORT else b""
        body = head + HEADER.pack(MAGIC, f["id"], seq[i], time.time_ns())
        payload = body + bytes(max(0, f["size"] - len(body)))
        try:
            socks[i].send(payload)
            sent_bytes[i] += len(payload)
            seq[i] += 1
        except OSError:                 # a full socket buffer: counted, never retried
            errors[i] += 1
        heapq.heappush(heap, (due + next_gap(f, rngs[i]), i))
    return {"flows": {str(f["id"]): {"sent": seq[i], "bytes": sent_bytes[i],
                                     "errors": errors[i]} for i, f in enumerate(flows)}}


def _open_receivers(ports: list[int]) -> list[socket.socket]:
    socks = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.bind(("0.0.0.0", port))
        s.setblocking(False)
        socks.append(s)
    return socks


def _kernel_time(ancdata: list) -> int:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec
    return time.time_ns()                # no stamp (never seen on Linux): user space


def receive(cfg: dict) -> dict:
    """Receive until ``cfg['seconds']`` pass or SIGTERM; records go to ``cfg['out']``."""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    socks = _open_receivers(cfg["ports"])
    records = bytearray()
    sizes: dict[int, int] = {}
    foreign = 0
    print("ready", flush=True)
    deadline = time.monotonic() + cfg["seconds"]
    next_progress = time.monotonic() + 1.0
    count = 0
    while not stop["now"] and time.monotonic() < deadline:
        readable, _, _ = select.select(socks, [], [], 0.2)
        for s in readable:
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(2048, 64)
                except BlockingIOError:
                    break
                offset = 12 if s.getsockname()[1] == ROCE_PORT else 0
                if len(data) < offset + HEADER.size:
                    foreign += 1
                    continue
                magic, flow, seq, sent_ns = HEADER.unpack_from(data, offset)
                if magic != MAGIC:
                    foreign += 1
                    continue
                records += RECORD.pack(flow, seq, sent_ns, _kernel_time(anc))
                sizes[flow] = len(data)
                count += 1
        if time.monotonic() >= next_progress:
            print(f"progress {count}", flush=True)
            next_progress += 1.0
    with open(cfg["out"], "wb") as f:
        f.write(records)
    return {"received": count, "foreign": foreign, "sizes": {str(k): v for k, v in sizes.items()}}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("send", "recv"):
        print("usage: mix_traffic.py send|recv JSON", file=sys.stderr)
        return 2
    cfg = json.loads(argv[1])
    result = send(cfg) if argv[0] == "send" else receive(cfg)
    print("result " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))
