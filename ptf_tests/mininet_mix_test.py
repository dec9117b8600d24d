"""Mice behind elephants on a switch inside a Mininet topology (``topologies.ptf_mix``).

PTF's ports are the hosts' ends of the Mininet links of ``topologies/single.yaml``
(``1@h1-eth0 2@h2-eth0 3@h3-eth0``, moved into PTF's namespace by the runner), and the
switch is programmed by ``tailcc apply`` with either the tailcc intent or the FIFO one
(every packet in queue 0), with the bottleneck on port 3 made by the runner. The test
first sends the urgent mice alone (port 2 to 3), then with elephants from port 1 to 3
offered at twice the bottleneck. During the loaded phase the same mice classes also go
from port 2 to port 1, whose queue is empty: that is each class's *unloaded* latency
measured at the same moment, so a stall of the machine or the switch (one that hits
every class at once) counts on both sides of the comparison. The mice-alone phase is
printed next to it. Per urgent class:

- ``config=tailcc``: no mouse lost, P99 <= unloaded P99 + 2 x one bulk frame's
  serialisation time at the bottleneck, order kept;
- ``config=fifo``: the opposite, so the test cannot pass by accident: the mice wait
  behind the backlog (P99 above that bound); order is kept there too.

Frames leave through PTF's dataplane (ports 1 and 2). Latency is the kernel's receive
stamp (``SO_TIMESTAMPNS`` on a packet socket bound to port 3's interface, from PTF's
port map) minus the send time written into the frame just before it is sent: one
clock, and no Python thread scheduling on the receive side. The GIL switch interval
is shortened so the elephants' sender thread does not hold up the mice's for Python's
default 5 ms. Not in PTF's standard group: it needs the topology ``topologies.ptf_mix``
sets up, so ``ptf_tests/run.py`` (plain veths) does not run it.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

MAGIC = 0x7A11CC02
HEADER = struct.Struct("!IHIq")          # magic, class id, sequence, send time (ns)
ROUTER_MAC = "00:aa:00:00:00:01"
HOSTS = {1: ("00:00:00:00:01:01", "10.0.1.1"), 2: ("00:00:00:00:02:02", "10.0.2.2"),
         3: ("00:00:00:00:03:03", "10.0.3.3")}
ROCE_PORT = 4791
ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


@dataclass(frozen=True)
class MixClass:
    id: int
    name: str
    dscp: int
    size: int
    dport: int
    urgent: bool


CLASSES = (
    MixClass(1, "hot_kv", 26, 512, ROCE_PORT, True),
    MixClass(2, "sched_signal", 40, 200, 5102, True),
    MixClass(3, "control", 56, 128, 5103, True),
    MixClass(4, "moe_a2a", 34, 1000, 5201, False),
    MixClass(5, "storage", 24, 1000, 5202, False),
    MixClass(6, "training_bulk", 18, 1000, 5203, False),
)
MOUSE_PPS = {"hot_kv": 60.0, "sched_signal": 60.0, "control": 30.0}


@dataclass
class Samples:
    sent: int = 0
    latencies: list[float] = field(default_factory=list)   # seconds, in arrival order
    reordered: int = 0
    last_seq: int = -1

    def p99(self) -> float:
        lat = sorted(self.latencies)
        return lat[max(0, -(-99 * len(lat) // 100) - 1)] if lat else float("inf")


def param(name: str) -> str:
    value = tu.test_param_get(name)
    if value is None:
        raise KeyError(f"test parameter {name!r} missing (run through topologies.ptf_mix)")
    return str(value)


class Frames:
    """Each class's frame built once with scapy; per packet only the sequence number
    and the send time are written in (UDP checksum 0, as IPv4 allows), so the sender
    keeps its pace in Python: building every frame with scapy costs about a millisecond
    and would itself delay the mice behind the elephants."""

    def __init__(self) -> None:
        self.templates: dict[tuple[int, int, int], tuple[bytearray, int]] = {}

    def _template(self, cls: MixClass, src_port: int, dst_port: int) -> tuple[bytearray, int]:
        smac, sip = HOSTS[src_port]
        head = struct.pack("!BBHII", 0x0A, 0, 0xFFFF, cls.id, 0) \
            if cls.dport == ROCE_PORT else b""
        body = head + HEADER.pack(MAGIC, cls.id, 0, 0)
        payload = body + bytes(max(0, cls.size - len(body)))
        pkt = (Ether(dst=ROUTER_MAC, src=smac)
               / IP(src=sip, dst=HOSTS[dst_port][1], tos=cls.dscp << 2, ttl=64)
               / UDP(sport=40000 + cls.id, dport=cls.dport, chksum=0) / payload)
        return bytearray(bytes(pkt)), 14 + 20 + 8 + len(head)

    def frame(self, cls: MixClass, seq: int, src_port: int, dst_port: int) -> bytes:
        key = (cls.id, src_port, dst_port)
        if key not in self.templates:
            self.templates[key] = self._template(cls, src_port, dst_port)
        data, offset = self.templates[key]
        if cls.dport == ROCE_PORT:                          # the BTH's PSN
            data[offset - 3:offset] = (seq & 0xFFFFFF).to_bytes(3, "big")
        HEADER.pack_into(data, offset, MAGIC, cls.id, seq, time.time_ns())
        return bytes(data)


@dataclass(frozen=True)
class Stream:
    """One class sent open loop at ``pps`` from one PTF port to another."""

    cls: MixClass
    pps: float
    src: int
    dst: int


class MixUnderLoad(BaseTest):
    """Urgent mice alone, then behind elephants at twice the bottleneck (and, at the
    same time, to an uncongested port)."""

    _nonstandard = True
    BOTTLENECK_PORT = 3
    QUIET_PORT = 1

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.config = param("config")
        self.serialisation = float(param("bulk_serialisation_s"))
        self.elephant_pps = float(param("elephant_pps"))
        self.unloaded_s = float(param("unloaded_s"))
        self.loaded_s = float(param("loaded_s"))
        self.frames = Frames()
        self.receivers = {p: self._open_receiver(p)
                          for p in (self.BOTTLENECK_PORT, self.QUIET_PORT)}
        self.switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        self.dataplane.flush()

    def tearDown(self) -> None:
        sys.setswitchinterval(self.switch_interval)
        for sock in self.receivers.values():
            sock.close()
        BaseTest.tearDown(self)

    # --- traffic ----------------------------------------------------------------------
    def _send(self, streams: list[Stream], seconds: float,
              samples: dict[tuple[int, int], Samples]) -> None:
        """Open loop: each stream on its own schedule, all from one thread."""
        start = time.monotonic()
        due = [start + (i + 1) / (len(streams) + 1) / st.pps for i, st in enumerate(streams)]
        seq = [0] * len(streams)
        while True:
            i = min(range(len(streams)), key=due.__getitem__)
            if due[i] >= start + seconds:
                return
            wait = due[i] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            st = streams[i]
            self.dataplane.send(0, st.src, self.frames.frame(st.cls, seq[i], st.src, st.dst))
            if (st.dst, st.cls.id) in samples:
                samples[(st.dst, st.cls.id)].sent += 1
            seq[i] += 1
            due[i] += 1.0 / st.pps

    def _open_receiver(self, port: int) -> socket.socket:
        """A packet socket on a PTF port's interface, with kernel receive stamps."""
        iface = ptf.config["port_map"][(0, port)]
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind((iface, 0))
        sock.setblocking(False)
        return sock

    def _collect(self, samples: dict[tuple[int, int], Samples], until: float) -> None:
        ports = {sock: port for port, sock in self.receivers.items()}
        while time.monotonic() < until:
            for sock in select.select(list(ports), [], [], 0.2)[0]:
                while True:
                    try:
                        data, anc, _, addr = sock.recvmsg(2048, 64)
                    except BlockingIOError:
                        break
                    if addr[2] == socket.PACKET_OUTGOING:
                        continue
                    stamp = next((struct.unpack("qq", d[:16]) for lvl, kind, d in anc
                                  if lvl == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS),
                                 None)
                    _record(data, stamp, samples, ports[sock])

    def _drain(self) -> None:
        for sock in self.receivers.values():
            while True:
                try:
                    sock.recv(4096)
                except BlockingIOError:
                    break

    def _phase(self, streams: list[Stream], background: list[Stream],
               seconds: float) -> dict[tuple[int, int], Samples]:
        """``background`` starts first (1.5 s: the backlog builds) and runs throughout;
        samples are taken of ``streams``."""
        self.dataplane.flush()
        self._drain()
        samples = {(st.dst, st.cls.id): Samples() for st in streams}
        threads = []
        if background:
            threads.append(threading.Thread(target=self._send, daemon=True,
                                            args=(background, 1.5 + seconds, {})))
            threads[-1].start()
            time.sleep(1.5)
        threads.append(threading.Thread(target=self._send, args=(streams, seconds, samples),
                                        daemon=True))
        threads[-1].start()
        self._collect(samples, time.monotonic() + seconds + 2.0)
        for t in threads:
            t.join(30)
        return samples

    # --- the test ---------------------------------------------------------------------
    def runTest(self) -> None:  # noqa: N802 - unittest's name
        urgent = [c for c in CLASSES if c.urgent]
        mice = [Stream(c, MOUSE_PPS[c.name], 2, self.BOTTLENECK_PORT) for c in urgent]
        probes = [Stream(c, MOUSE_PPS[c.name], 2, self.QUIET_PORT) for c in urgent]
        elephants = [Stream(c, self.elephant_pps / 3, 1, self.BOTTLENECK_PORT)
                     for c in CLASSES if not c.urgent]
        alone = self._phase(mice, [], self.unloaded_s)
        loaded = self._phase(mice + probes, elephants, self.loaded_s)
        self._save(alone, loaded)
        problems = []
        for c in urgent:
            problems += self._check(c, alone[(self.BOTTLENECK_PORT, c.id)],
                                    loaded[(self.QUIET_PORT, c.id)],
                                    loaded[(self.BOTTLENECK_PORT, c.id)])
        self.assertEqual(problems, [], "; ".join(problems))

    def _check(self, c: MixClass, alone: Samples, unloaded: Samples,
               s: Samples) -> list[str]:
        """What is wrong with class ``c`` (``s``: behind the backlog) for this config."""
        bound = unloaded.p99() + 2 * self.serialisation
        lost = s.sent - len(s.latencies)
        print(f"{self.config}: {c.name}: P99 {s.p99() * 1e3:.2f} ms behind the backlog, "
              f"unloaded {unloaded.p99() * 1e3:.2f} ms (alone before: "
              f"{alone.p99() * 1e3:.2f} ms), bound {bound * 1e3:.2f} ms; lost "
              f"{lost}/{s.sent}, reordered {s.reordered}", flush=True)
        problems = []
        if not alone.latencies or not unloaded.latencies:
            problems.append(f"{c.name}: no unloaded samples (is the switch forwarding?)")
        if s.reordered:
            problems.append(f"{c.name}: {s.reordered} out of order")
        if self.config == "tailcc":
            if lost:
                problems.append(f"{c.name}: {lost} urgent mice lost")
            if s.p99() > bound:
                problems.append(f"{c.name}: P99 {s.p99() * 1e3:.2f} ms > {bound * 1e3:.2f} ms")
        elif s.p99() <= bound:
            problems.append(f"{c.name}: FIFO P99 {s.p99() * 1e3:.2f} ms within the bound "
                            f"{bound * 1e3:.2f} ms: the mice did not wait behind the "
                            "backlog (is the bottleneck there?)")
        return problems

    def _save(self, alone: dict[tuple[int, int], Samples],
              loaded: dict[tuple[int, int], Samples]) -> None:
        """Every sample (``samples_out``), for a look at when the tail happens."""
        path = tu.test_param_get("samples_out")
        if not path:
            return
        names = {c.id: c.name for c in CLASSES}
        out = {"alone": {names[k[1]]: v.latencies for k, v in alone.items()},
               "loaded": {names[k[1]]: v.latencies for k, v in loaded.items()
                          if k[0] == self.BOTTLENECK_PORT},
               "unloaded": {names[k[1]]: v.latencies for k, v in loaded.items()
                            if k[0] == self.QUIET_PORT}}
        with open(str(path), "w", encoding="utf-8") as f:
            json.dump(out, f)


def _record(data: bytes, stamp: tuple[int, int] | None,
            samples: dict[tuple[int, int], Samples], port: int) -> None:
    """One received frame into its (port, class) samples, if it is one of ours."""
    if stamp is None or len(data) < 38 or data[12:14] != b"\x08\x00":
        return
    dport = int.from_bytes(data[36:38], "big")
    offset = 14 + 20 + 8 + (12 if dport == ROCE_PORT else 0)
    if len(data) < offset + HEADER.size:
        return
    magic, cid, seq, sent_ns = HEADER.unpack_from(data, offset)
    s = samples.get((port, cid))
    if magic != MAGIC or s is None:
        return
    s.latencies.append((stamp[0] * 1_000_000_000 + stamp[1] - sent_ns) / 1e9)
    if seq < s.last_seq:
        s.reordered += 1
    s.last_seq = max(s.last_seq, seq)
