"""Mice behind elephants on a switch inside a Mininet topology (``topologies.ptf_mix``).

PTF's ports are the hosts' ends of the Mininet links of ``topologies/single.yaml``
(``1@h1-eth0 2@h2-eth0 3@h3-eth0``, moved into PTF's namespace by the runner), and the
switch is programmed by ``tailcc apply`` with either the tailcc intent or the FIFO one
(every packet in queue 0), with the bottleneck on port 3 made by the runner. The test
first measures the urgent mice alone (unloaded), then with elephants from port 1
offered at twice the bottleneck, and asserts per urgent class:

- ``config=tailcc``: no mouse lost, loaded P99 <= unloaded P99 + 2 x one bulk frame's
  serialisation time at the bottleneck, order kept;
- ``config=fifo``: the opposite, so the test cannot pass by accident: the mice wait
  behind the backlog (loaded P99 above that bound); order is kept there too.

Latency is PTF's receive time (the dataplane thread's clock on arrival) minus the send
time written into the packet: the same clock, the same path for both phases.

Not in PTF's standard group: it needs the topology ``topologies.ptf_mix`` sets up, so
``ptf_tests/run.py`` (plain veths) does not run it.
"""

from __future__ import annotations

import json
import struct
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
MOUSE_PPS = {"hot_kv": 30.0, "sched_signal": 30.0, "control": 20.0}


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
        self.templates: dict[tuple[int, int], tuple[bytearray, int]] = {}

    def _template(self, cls: MixClass, src_port: int) -> tuple[bytearray, int]:
        smac, sip = HOSTS[src_port]
        head = struct.pack("!BBHII", 0x0A, 0, 0xFFFF, cls.id, 0) \
            if cls.dport == ROCE_PORT else b""
        body = head + HEADER.pack(MAGIC, cls.id, 0, 0)
        payload = body + bytes(max(0, cls.size - len(body)))
        pkt = (Ether(dst=ROUTER_MAC, src=smac)
               / IP(src=sip, dst=HOSTS[3][1], tos=cls.dscp << 2, ttl=64)
               / UDP(sport=40000 + cls.id, dport=cls.dport, chksum=0) / payload)
        return bytearray(bytes(pkt)), 14 + 20 + 8 + len(head)

    def frame(self, cls: MixClass, seq: int, src_port: int) -> bytes:
        key = (cls.id, src_port)
        if key not in self.templates:
            self.templates[key] = self._template(cls, src_port)
        data, offset = self.templates[key]
        if cls.dport == ROCE_PORT:                          # the BTH's PSN
            data[offset - 3:offset] = (seq & 0xFFFFFF).to_bytes(3, "big")
        HEADER.pack_into(data, offset, MAGIC, cls.id, seq, time.time_ns())
        return bytes(data)


class MixUnderLoad(BaseTest):
    """Urgent mice alone, then behind elephants at twice the bottleneck."""

    _nonstandard = True

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.config = param("config")
        self.serialisation = float(param("bulk_serialisation_s"))
        self.elephant_pps = float(param("elephant_pps"))
        self.unloaded_s = float(param("unloaded_s"))
        self.loaded_s = float(param("loaded_s"))
        self.frames = Frames()
        self.dataplane.flush()

    # --- traffic ----------------------------------------------------------------------
    def _send(self, classes: list[tuple[MixClass, float, int]], seconds: float,
              counts: dict[str, Samples]) -> None:
        """Open loop: each (class, pps, port) on its own schedule, one thread."""
        start = time.monotonic()
        due = [start + (i + 1) / (len(classes) + 1) / pps
               for i, (_, pps, _) in enumerate(classes)]
        seq = [0] * len(classes)
        while True:
            i = min(range(len(classes)), key=due.__getitem__)
            if due[i] >= start + seconds:
                return
            wait = due[i] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            cls, pps, port = classes[i]
            self.dataplane.send(0, port, self.frames.frame(cls, seq[i], port))
            if cls.urgent:
                counts[cls.name].sent += 1
            seq[i] += 1
            due[i] += 1.0 / pps

    def _collect(self, counts: dict[str, Samples], until: float) -> None:
        by_id = {c.id: c for c in CLASSES}
        while time.monotonic() < until:
            got = self.dataplane.poll(0, 3, timeout=0.2)
            if not isinstance(got, self.dataplane.PollSuccess):
                continue
            data = bytes(got.packet)
            udp_payload = 14 + 20 + 8
            dport = int.from_bytes(data[36:38], "big") if len(data) >= 38 else 0
            offset = udp_payload + (12 if dport == ROCE_PORT else 0)
            if len(data) < offset + HEADER.size:
                continue
            magic, cid, seq, sent_ns = HEADER.unpack_from(data, offset)
            cls = by_id.get(cid)
            if magic != MAGIC or cls is None or not cls.urgent:
                continue
            s = counts[cls.name]
            s.latencies.append(got.time - sent_ns / 1e9)
            if seq < s.last_seq:
                s.reordered += 1
            s.last_seq = max(s.last_seq, seq)

    def _phase(self, loaded: bool, seconds: float) -> dict[str, Samples]:
        counts = {c.name: Samples() for c in CLASSES if c.urgent}
        mice = [(c, MOUSE_PPS[c.name], 2) for c in CLASSES if c.urgent]
        elephants = [(c, self.elephant_pps / 3, 1) for c in CLASSES if not c.urgent]
        warmup = 1.5 if loaded else 0.0
        threads = []
        if loaded:                       # the backlog first, then the mice behind it
            threads.append(threading.Thread(target=self._send, daemon=True,
                                            args=(elephants, warmup + seconds, {})))
            threads[-1].start()
            time.sleep(warmup)
        threads.append(threading.Thread(target=self._send, args=(mice, seconds, counts),
                                        daemon=True))
        threads[-1].start()
        self._collect(counts, time.monotonic() + seconds + 2.0)
        for t in threads:
            t.join(30)
        return counts

    # --- the test ---------------------------------------------------------------------
    def runTest(self) -> None:  # noqa: N802 - unittest's name
        unloaded = self._phase(False, self.unloaded_s)
        time.sleep(0.5)
        self.dataplane.flush()
        loaded = self._phase(True, self.loaded_s)
        samples_out = tu.test_param_get("samples_out")
        if samples_out:                  # every sample, for a look at when the tail happens
            with open(str(samples_out), "w", encoding="utf-8") as f:
                json.dump({phase: {n: s.latencies for n, s in data.items()}
                           for phase, data in (("unloaded", unloaded), ("loaded", loaded))}, f)
        bound_extra = 2 * self.serialisation
        problems = []
        for name, s in loaded.items():
            base = unloaded[name].p99()
            bound = base + bound_extra
            lost = s.sent - len(s.latencies)
            print(f"{self.config}: {name}: unloaded P99 {base * 1e3:.2f} ms, loaded P99 "
                  f"{s.p99() * 1e3:.2f} ms (bound {bound * 1e3:.2f} ms), lost {lost}/{s.sent}, "
                  f"reordered {s.reordered}", flush=True)
            if unloaded[name].sent == 0 or len(unloaded[name].latencies) == 0:
                problems.append(f"{name}: no unloaded samples")
            if s.reordered:
                problems.append(f"{name}: {s.reordered} out of order")
            if self.config == "tailcc":
                if lost:
                    problems.append(f"{name}: {lost} urgent mice lost")
                if s.p99() > bound:
                    problems.append(f"{name}: loaded P99 {s.p99() * 1e3:.2f} ms > "
                                    f"{bound * 1e3:.2f} ms")
            elif s.p99() <= bound:
                problems.append(f"{name}: FIFO P99 {s.p99() * 1e3:.2f} ms within the bound "
                                f"{bound * 1e3:.2f} ms: the mice did not wait behind the "
                                "backlog (is the bottleneck there?)")
        self.assertEqual(problems, [], "; ".join(problems))
