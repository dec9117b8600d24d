"""Forwarding latency of an urgent class through tailcc.p4 over veth, idle and loaded.

tailcc promises the urgent class's tail: whatever the elephants do, an urgent packet waits
for at most one bulk frame plus the pipeline. Per target (softswitch; BMv2 where installed;
``veth_switch.py``), on two veth pairs, tailcc.p4 routing 10.0.2.0/24 out of port 2:

1. the basis: the target's max rate as configured here (``max_rate``), or ``--max-pps``;
2. the load: ``--load`` of that rate, ``--urgent-share`` of it urgent (DSCP 46, queue 7),
   in four scenarios: ``idle`` (urgent frames alone); ``elephants`` (the rest as 1400-byte
   frames in queue 0, held to 10% of the max rate so it stays full); ``elephants+writes``
   (plus a controller adding ``WRITES_PER_S`` routes over the CLI channel) and
   ``elephants+p4runtime`` (the same routes as P4Runtime Writes every 10 ms), the writers
   in ``--write-window`` windows, one on, one off; ``--rounds`` rounds, in turns;
3. the latency, port to port: a tap on the switch's ingress interface kernel-stamps every
   ``TAP_SAMPLE``-th urgent frame, the receiver's socket every one (``e2e``: from the
   sender's stamp, its own delay included), after a warm-up of ``WARMUP_S``.

softswitch runs its port loop alone on ``--dataplane-cpu`` (the measuring side and the
controller stay off it, for every target) and serves P4Runtime from its front end process;
the sender runs at SCHED_FIFO, as hosts that share no CPU with a controller would send.
Prints P50/P99/P999/max, loss, CPU shares and the host's steal per target and scenario;
for the writes scenarios the P99 while writing over the P99 between the writes and over
the elephants', with 95% intervals (``block_bootstrap``). Writes ``--json``. Needs root.

    python bench/urgent_latency.py [--seconds 10] [--rounds 4] [--targets softswitch bmv2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import resource
import select
import socket
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import block_bootstrap, veth_pps, veth_switch
from softswitch.daemon.ports import batchio, ingress_priority  # noqa: E402
from softswitch.daemon.ports.afpacket import PACKET_OUTGOING, RawPort  # noqa: E402
from softswitch.daemon.ports.ingress_priority import IngressPriority  # noqa: E402
from softswitch.daemon.ports.veth import veth_pairs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tailcc.p4"
DEFAULT_JSON = ROOT / "out" / "bench" / "urgent_latency.json"
SCENARIOS = ("idle", "elephants", "elephants+writes", "elephants+p4runtime")
MAGIC = b"URG!"
STAMP = struct.Struct("!4sIQ")                  # magic, sequence, send time (ns)
STAMP_AT = 14 + 20 + 8                          # the stamp follows Ethernet, IPv4, UDP
# One urgent frame in TAP_SAMPLE (by sequence number) is also stamped where it reaches
# the switch's ingress port: tapping every one would take CPU from the switch that shares
# the machine, and move what is measured.
TAP_SAMPLE = 16
SO_TIMESTAMPNS = 35
SOL_PACKET, PACKET_STATISTICS = 263, 6
SO_RCVBUFFORCE = 33
# the receiver's and the tap's socket buffers: room for about a second of urgent frames
MEASURING_BUFFER_BYTES = 256 << 20
URGENT_DSCP, URGENT_QUEUE, BULK_QUEUE = 46, 7, 0
WARMUP_S = 0.5
WRITES_PER_S = 1000
# The controller writes in windows of WRITE_WINDOW_S, one on, one off, in turn: the
# urgent frames that reach the switch while it writes and those between its writes
# (after GUARD_S, for a Write still in flight) come from the same seconds of the same
# round, so the ratio of their P99s is the writes' own cost, whatever the host did
# over the minutes.
WRITE_WINDOW_S = 1.0
GUARD_S = 0.05
LOAD, URGENT_SHARE = 0.5, 0.5                   # of the max rate; the urgent part of it
BLOCK_S = 1.0                   # the blocks of frames block_bootstrap resamples
# The max rate the load is a share of (max_rate): the median of these runs.
MAX_RATE_RUNS, MAX_RATE_FRAMES = 5, 30000
# The sender's SCHED_FIFO priority (--generator-priority fifo; module doc). It sleeps
# 200 µs between bursts, so it gives its CPU up long before RT throttling would.
GENERATOR_FIFO_PRIORITY = 10
ROUTE_SIZE = 131072                             # room for 60+ s of 1000 routes/s
T = "TailccIngress"


def _config(max_pps: float) -> list[str]:
    any_range = "0->65535 0->65535 0&&&0 0->255 0->16777215 0->65535"
    return veth_pps.TAILCC_ROUTES + [
        f"table_add {T}.classify.traffic_class {T}.classify.set_class 0&&&0 0&&&0 "
        f"{URGENT_DSCP}&&&0x3f 0&&&0 0&&&0 {any_range} => 7 {URGENT_QUEUE} 0 10",
        f"set_queue_rate {max(1, int(max_pps * 0.10))} 2 {BULK_QUEUE}",
    ]


def _urgent(seq: int, now_ns: int) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst=veth_pps.ROUTER_MAC, src="02:00:00:00:00:99")
                 / IP(src="10.0.1.1", dst="10.0.2.7", tos=URGENT_DSCP << 2)
                 / UDP(sport=4000, dport=5001) / (STAMP.pack(MAGIC, seq, now_ns)
                                                 + b"u" * 48))


def _elephant() -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst=veth_pps.ROUTER_MAC, src="02:00:00:00:00:98")
                 / IP(src="10.0.1.2", dst="10.0.2.8") / UDP(sport=4001, dport=5002)
                 / (b"e" * 1400))


def _send(iface: str, urgent_pps: float, elephant_pps: float, seconds: float,
          sent: multiprocessing.Value,   # type: ignore[valid-type]
          realtime: multiprocessing.Value, fifo: int) -> None:   # type: ignore[valid-type]
    """Sender process: both classes paced on the monotonic clock, bursts sent at once;
    at SCHED_FIFO priority ``fifo`` (0: as it was started), ``realtime`` says if so."""
    if fifo:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo))
            realtime.value = 1
        except OSError:
            pass                        # reported: the round says it ran at normal
    port = RawPort(iface)
    template = _urgent(0, 0)
    at = template.index(MAGIC)
    elephant = _elephant()
    start = time.monotonic()
    n_urgent = n_elephant = 0
    while (elapsed := time.monotonic() - start) < seconds:
        burst: list[bytes] = []
        now_ns = time.time_ns()
        while n_urgent < elapsed * urgent_pps:
            stamp = STAMP.pack(MAGIC, n_urgent, now_ns)
            burst.append(template[:at] + stamp + template[at + len(stamp):])
            n_urgent += 1
        while n_elephant < elapsed * elephant_pps:
            burst.append(elephant)
            n_elephant += 1
        if burst:
            port.send_batch(burst)
        time.sleep(0.0002)
    sent.value = n_urgent
    port.close()


def _stamped_frames(rx: socket.socket) -> list[tuple[bytes, int]]:
    """Pending incoming frames with their kernel receive times (ns)."""
    mod = batchio.native()
    if mod is not None:
        got: list[tuple[bytes, int]] = mod.recv_batch(rx.fileno(), batchio.MAX_BATCH, True)
        return got
    out = []
    while True:
        try:
            data, anc, _flags, addr = rx.recvmsg(2048, 256)
        except (BlockingIOError, InterruptedError):
            return out
        if addr[2] == PACKET_OUTGOING:
            continue
        stamp = next((s * 1_000_000_000 + ns for level, kind, payload in anc
                      if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS
                      for s, ns in [struct.unpack("qq", payload[:16])]), time.time_ns())
        out.append((data, stamp))


def _tap_program() -> list[tuple[int, int, int, int]]:
    """Classic BPF for the tap on the switch's ingress port: urgent frames (IPv4, DSCP
    URGENT_DSCP, our stamp) whose sequence number is a multiple of TAP_SAMPLE."""
    bpf = ingress_priority
    drop = 11
    return [
        (bpf.LDH_ABS, 0, 0, 12),                          # 0 EtherType
        (bpf.JEQ_K, 0, drop - 2, 0x0800),                 # 1 IPv4?
        (bpf.LDB_ABS, 0, 0, 15),                          # 2 TOS
        (bpf.AND_K, 0, 0, 0xFC),                          # 3 DSCP bits
        (bpf.JEQ_K, 0, drop - 5, URGENT_DSCP << 2),       # 4 urgent?
        (bpf.LD_ABS, 0, 0, STAMP_AT),                     # 5 word at 42: our magic?
        (bpf.JEQ_K, 0, drop - 7, int.from_bytes(MAGIC, "big")),
        (bpf.LDB_ABS, 0, 0, STAMP_AT + 7),                # 7 the sequence's low byte
        (bpf.AND_K, 0, 0, TAP_SAMPLE - 1),                # 8
        (bpf.JEQ_K, 0, 1, 0),                             # 9 a multiple of TAP_SAMPLE?
        (bpf.RET_K, 0, 0, bpf.ACCEPT),                    # 10 take it
        (bpf.RET_K, 0, 0, bpf.REJECT),                    # 11 drop
    ]


def _seq_and_sent(data: bytes) -> tuple[int, int] | None:
    """(sequence number, sender's stamp) of an urgent frame, or None for another frame."""
    at = data.find(MAGIC, 40, 60)
    if at < 0:
        return None
    _m, seq, sent_ns = STAMP.unpack_from(data, at)
    return seq, sent_ns


@dataclass
class Latencies:
    """Urgent frames' latencies: from the switch's ingress port (``forwarding``, the
    frames the tap samples) and from the sender's stamp (``end_to_end``, every frame,
    the generator's own delay included); ``unmatched``: sampled frames the tap missed
    (its socket overflowed), left out of ``forwarding``."""

    forwarding: list[int]
    end_to_end: list[int]
    unmatched: int
    forwarding_at: list[int]     # each forwarding sample's tap stamp (ns, wall clock)


def _receive(rx: socket.socket, tap: socket.socket, until: float,
             start_ns: int) -> Latencies:
    """Urgent frames arriving until ``until`` (monotonic) that were sent after
    ``start_ns`` + warm-up: their latency from the moment they reached the switch's
    ingress port (``tap``'s kernel stamp) and from the sender's stamp."""
    arrived: dict[int, int] = {}           # sequence -> kernel stamp at the switch's port
    left: list[tuple[int, int, int]] = []  # (sequence, sender's stamp, receive stamp)
    cutoff = start_ns + int(WARMUP_S * 1e9)
    while time.monotonic() < until:
        ready, _, _ = select.select([rx, tap], [], [], 0.05)
        for sock in ready:
            for data, stamp in _stamped_frames(sock):
                found = _seq_and_sent(data)
                if found is None or found[1] < cutoff:
                    continue
                if sock is tap:
                    arrived[found[0]] = stamp
                else:
                    left.append((found[0], found[1], stamp))
    sampled = [(seq, rx_ns) for seq, _sent, rx_ns in left if seq % TAP_SAMPLE == 0]
    matched = [(arrived[seq], rx_ns) for seq, rx_ns in sampled if seq in arrived]
    return Latencies([rx_ns - at for at, rx_ns in matched],
                     [rx_ns - sent for _seq, sent, rx_ns in left],
                     len(sampled) - len(matched), [at for at, _ in matched])


def _route(n: int, first_octet: int) -> tuple[int, str]:
    """Route ``n`` the controller adds: its VRF and a distinct /24 of ``first_octet``/8
    (each writer its own /8: the routes of one scenario stay in the table)."""
    vrf, net = 1 + (n >> 16), n & 0xFFFF
    return vrf, f"{first_octet}.{net >> 8}.{net & 255}.0"


def _write_at_rate(stop: threading.Event, result: dict,
                   send: Callable[[range], bool]) -> float:
    """Hand ``send`` the route numbers due at WRITES_PER_S every 10 ms, until ``stop``
    (or ``send`` says False); the routes and the rate offered into ``result``. When it
    started (``time.monotonic``): the writer adds the rate applied once all are in.
    Numbers start at ``result["first_route"]`` (0): a scenario's later rounds add new
    routes, not the ones an earlier round left in the table. With ``result["window_s"]``
    it writes in windows that long, one on, one off (WRITE_WINDOW_S); when the first
    began (wall clock, ns) goes into ``result["start_ns"]``."""
    window = result.get("window_s", 0.0)
    result["start_ns"] = time.time_ns()
    start = time.monotonic()
    first = result.get("first_route", 0)
    n = 0
    while not stop.is_set():
        due = int(_writing_seconds(time.monotonic() - start, window) * WRITES_PER_S)
        if due > n and not send(range(first + n, first + due)):
            break
        n = max(n, due)
        time.sleep(0.01)
    offered_s = _writing_seconds(time.monotonic() - start, window)
    result.update(writes=n, offered_per_s=n / offered_s if offered_s else 0.0)
    return start


def _note_applied(result: dict, start: float) -> None:
    """The rate the switch took the writes at, once all are in (``start``: from
    :func:`_write_at_rate`), over the writing windows' time."""
    result["applied_per_s"] = result["writes"] / _writing_seconds(
        time.monotonic() - start, result.get("window_s", 0.0))


def _writing_seconds(elapsed: float, window: float) -> float:
    """How much of ``elapsed`` fell in the writing windows (all of it without)."""
    if not window:
        return elapsed
    pairs, rest = divmod(elapsed, 2 * window)
    return pairs * window + min(rest, window)


def write_cycles(stamps: list[int], latencies: list[int], start_ns: int,
                 window_s: float) -> list[tuple[list[int], list[int]]]:
    """Per cycle of the controller's windows, the latencies of the frames that reached
    the switch while it wrote and of those between its writes (from GUARD_S after the
    window closed), split by their stamps; frames before the first window are in
    neither."""
    period, window, guard = (int(x * 1e9) for x in (2 * window_s, window_s, GUARD_S))
    cycles: list[tuple[list[int], list[int]]] = []
    for at, latency in zip(stamps, latencies, strict=True):
        if at < start_ns:
            continue
        cycle, phase = divmod(at - start_ns, period)
        while len(cycles) <= cycle:
            cycles.append(([], []))
        if phase < window:
            cycles[cycle][0].append(latency)
        elif phase >= window + guard:
            cycles[cycle][1].append(latency)
    return cycles


def second_blocks(stamps: list[int], latencies: list[int],
                  block_s: float = BLOCK_S) -> list[list[int]]:
    """The latencies in blocks of ``block_s`` by the frames' stamps, from the first
    (for ``block_bootstrap``: a host's slow spell stays in its block)."""
    if not stamps:
        return []
    first, width = min(stamps), int(block_s * 1e9)
    blocks: list[list[int]] = []
    for at, latency in zip(stamps, latencies, strict=True):
        index = (at - first) // width
        while len(blocks) <= index:
            blocks.append([])
        blocks[index].append(latency)
    return blocks


def _writer(switch: veth_switch.RunningSwitch, stop: threading.Event,
            result: dict) -> None:
    """A controller adding WRITES_PER_S distinct routes a second through the CLI."""
    cli = switch.cli_process()
    assert cli.stdin is not None
    stdin = cli.stdin

    def send(numbers: range) -> bool:
        lines = []
        for n in numbers:
            vrf, net = _route(n, 11)
            lines.append(f"table_add {T}.forwarding.routing_v4 {T}.forwarding.set_nexthop "
                         f"{vrf} {net}/24 => 2 {veth_pps._mac(veth_pps.ROUTER_MAC)} "
                         "0x0200000000bb\n")
        try:
            stdin.write("".join(lines))
            stdin.flush()
        except BrokenPipeError:
            return False
        return True

    start = _write_at_rate(stop, result, send)
    try:
        stdin.close()
    except BrokenPipeError:
        pass
    cli.wait(timeout=300)
    _note_applied(result, start)


def _p4runtime_writer(switch: veth_switch.RunningSwitch, stop: threading.Event,
                      result: dict) -> None:
    """A controller adding WRITES_PER_S distinct routes a second over P4Runtime, as
    tailcc's control plane does: one Write (CONTINUE_ON_ERROR) of the routes due."""
    from controlplane.p4rt.client import update
    from controlplane.p4rt.entities import EntityBuilder
    from controlplane.p4rt.p4info import P4InfoIndex

    client = switch.p4runtime(election_id=10)
    try:
        info = client.get_p4info()
        assert info is not None, "the switch has no pipeline"
        build = EntityBuilder(P4InfoIndex(info))
        mac = int(veth_pps._mac(veth_pps.ROUTER_MAC), 16)

        def send(numbers: range) -> bool:
            updates = []
            for n in numbers:
                vrf, net = _route(n, 12)
                entry = build.table_entry(f"{T}.forwarding.routing_v4",
                                          {"vrf": vrf, "ipv4_dst": (net, 24)},
                                          f"{T}.forwarding.set_nexthop",
                                          {"port": 2, "smac": mac, "dmac": 0x0200000000bb})
                updates.append(update("INSERT", entry))
            client.write(updates)
            return True

        start = _write_at_rate(stop, result, send)
    finally:
        client.close()
    _note_applied(result, start)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its threads, from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _host_jiffies() -> tuple[int, int, int]:
    """(busy, total, steal) CPU time of the whole machine so far, from /proc/stat: busy
    is everything but idle and iowait (steal included); steal is the time the
    hypervisor ran something else while this virtual machine wanted its CPUs: a stall
    of the port loop that comes with as much steal is the host's, and the row says so."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    return total - idle, total, values[7] if len(values) > 7 else 0


def _children_cpu() -> float:
    """User + system CPU seconds of this process's waited-for children (the sender)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _percentile(sorted_ns: list[int], q: float) -> float:
    if not sorted_ns:
        return float("nan")
    return sorted_ns[block_bootstrap.rank(len(sorted_ns), q)] / 1000.0


@dataclass(frozen=True)
class Load:
    """What the switch is offered: ``total`` of its max rate, ``urgent`` the urgent
    frames' part of it (the rest are elephants, in the scenarios that have them)."""

    total: float = LOAD
    urgent: float = URGENT_SHARE

    def rates(self, max_pps: float, elephants: bool) -> tuple[float, float]:
        urgent = self.total * self.urgent * max_pps
        return urgent, (self.total * max_pps - urgent if elephants else 0.0)


@dataclass
class Round:
    """One run of a scenario: the urgent frames' latencies (ns, sorted) and what the
    machine did meanwhile. With a controller writing in windows (WRITE_WINDOW_S),
    ``forwarding`` holds the frames that came while it wrote and ``between`` those
    that came between its writes; otherwise ``between`` is empty."""

    forwarding: list[int]
    end_to_end: list[int]
    expected: int                # urgent frames sent after the warm-up
    unmatched: int
    switch_cpu_s: float
    seconds: float
    host: tuple[int, int, int]   # busy, total and steal jiffies of the machine
    sender_cpu_s: float
    loadavg: float
    writes: dict
    # frames the measuring sockets' buffers had no room for (the measuring side's
    # loss, not the switch's): receiver's, tap's; and the frames the kernel dropped at
    # the switch's ports because it fell behind (softswitch's show_ports; BMv2 does not
    # say): its urgent socket's (ingress priority) and the others'
    dropped: dict[str, int | None]
    between: list[int] = field(default_factory=list)
    generator_fifo: bool = False  # the sender ran at SCHED_FIFO
    # ``forwarding`` in blocks (block_bootstrap): per writing window with a controller
    # writing in windows, and ``between`` per the following pause (the same cycles);
    # else per BLOCK_S of the frames' stamps
    blocks: list[list[int]] = field(default_factory=list)
    between_blocks: list[list[int]] = field(default_factory=list)


def _scenario(switch: veth_switch.RunningSwitch, ports: tuple[str, str, str], name: str,
              rates: tuple[float, float], seconds: float, first_route: int = 0,
              window_s: float = WRITE_WINDOW_S,
              generator_fifo: int = GENERATOR_FIFO_PRIORITY) -> Round:
    """One round of scenario ``name`` at ``rates`` (urgent, elephant frames/s).
    ``ports``: the sender's interface, the switch's ingress interface (its peer) and
    the receiver's interface. A controller adds routes from number ``first_route``,
    in windows of ``window_s`` (0: all along). The sender runs at SCHED_FIFO priority
    ``generator_fifo`` (0: normal)."""
    h1, sw1, h2 = ports
    urgent_pps, elephant_pps = rates
    # only the urgent frames reach the receiver's socket and the tap on the switch's
    # ingress port (filtered in the kernel): the elephants are neither copied nor read
    # here, so the measuring host takes less of the CPU it shares with the switch
    urgent_only = IngressPriority(frozenset({URGENT_DSCP})).program(urgent=True)
    rx_port, tap_port = RawPort(h2, urgent_only), RawPort(sw1, _tap_program())
    for sock in (rx_port.sock, tap_port.sock):
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        # the frames wait for this process here, kernel-stamped, whenever the measuring
        # host's CPU is taken (the controller's writes): never dropped for want of room
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, MEASURING_BUFFER_BYTES)
    while tap_port.receive_batch():      # stale frames of an earlier scenario
        pass
    rx = rx_port.sock
    while rx_port.receive_batch():
        pass
    stop = threading.Event()
    writes: dict = {"first_route": first_route, "window_s": window_s}
    writer = None
    sent, realtime = multiprocessing.Value("q", 0), multiprocessing.Value("b", 0)
    kernel0 = switch.kernel_drops()
    cpu0 = _cpu_seconds(switch.proc.pid)
    host0, gen0 = _host_jiffies(), _children_cpu()
    start_ns = time.time_ns()
    # The sender forks before the writer's gRPC thread exists: a child forked beside
    # live threads may inherit a lock one of them holds.
    proc = multiprocessing.get_context("fork").Process(
        target=_send, args=(h1, urgent_pps, elephant_pps, seconds, sent, realtime,
                            generator_fifo))
    proc.start()
    write = {"elephants+writes": _writer, "elephants+p4runtime": _p4runtime_writer}.get(name)
    if write is not None:
        writer = threading.Thread(target=_writing, args=(write, switch, stop, writes),
                                  daemon=True)
        writer.start()
    _socket_drops(rx)                    # (counting from here)
    _socket_drops(tap_port.sock)
    got = _receive(rx, tap_port.sock, time.monotonic() + seconds + 1.0, start_ns)
    dropped: dict[str, int | None] = {"receiver": _socket_drops(rx),
                                      "tap": _socket_drops(tap_port.sock)}
    proc.join()
    cpu = _cpu_seconds(switch.proc.pid) - cpu0
    host1, gen_cpu = _host_jiffies(), _children_cpu() - gen0
    stop.set()
    if writer is not None:
        writer.join()
    rx_port.close()
    tap_port.close()
    kernel1 = switch.kernel_drops()
    if kernel0 is not None and kernel1 is not None:
        dropped["switch_urgent"] = kernel1[0] - kernel0[0]
        dropped["switch_other"] = kernel1[1] - kernel0[1]
    if "error" in writes:
        raise SystemExit(f"{switch.target} {name}: the controller failed: {writes['error']}")
    if writer is not None and window_s:
        cycles = write_cycles(got.forwarding_at, got.forwarding, writes["start_ns"],
                              window_s)
        blocks, between_blocks = [on for on, _ in cycles], [off for _, off in cycles]
        forwarding = [v for block in blocks for v in block]
        between = [v for block in between_blocks for v in block]
    else:
        forwarding, between = got.forwarding, []
        blocks, between_blocks = second_blocks(got.forwarding_at, got.forwarding), []
    if writer is None:
        writes.clear()                   # no controller: nothing to report
    else:
        del writes["first_route"], writes["start_ns"]
    return Round(sorted(forwarding), sorted(got.end_to_end),
                 max(1, int(sent.value * (seconds - WARMUP_S) / seconds)), got.unmatched,
                 cpu, seconds, tuple(b - a for a, b in zip(host0, host1, strict=True)),
                 gen_cpu, os.getloadavg()[0], writes, dropped, sorted(between),
                 bool(realtime.value), blocks, between_blocks)


def _socket_drops(sock: socket.socket) -> int:
    """Frames the kernel dropped for want of room in ``sock``'s buffer since the last
    call (PACKET_STATISTICS, which resets on reading)."""
    packets_and_drops = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    return struct.unpack("II", packets_and_drops)[1]


def _summary(name: str, rates: tuple[float, float], rounds: list[Round]) -> dict:
    """A scenario's row: percentiles over the frames of all its rounds, and each
    round's own P99/P999/max (how much the machine moved them between rounds)."""
    lat = sorted(v for r in rounds for v in r.forwarding)
    e2e = sorted(v for r in rounds for v in r.end_to_end)
    seconds = sum(r.seconds for r in rounds)
    busy, total, steal = (sum(r.host[i] for r in rounds) for i in range(3))
    received = sum(len(r.end_to_end) for r in rounds)
    row = {"scenario": name, "urgent_pps": rates[0], "elephant_pps": rates[1],
           "received": received,
           "loss": max(0.0, 1 - received / sum(r.expected for r in rounds)),
           "unmatched": sum(r.unmatched for r in rounds),
           "receiver_drops": sum(r.dropped["receiver"] or 0 for r in rounds),
           "tap_drops": sum(r.dropped["tap"] or 0 for r in rounds),
           "switch_urgent_drops": _total(r.dropped.get("switch_urgent") for r in rounds),
           "switch_other_drops": _total(r.dropped.get("switch_other") for r in rounds),
           "p50_us": _percentile(lat, 0.50), "p99_us": _percentile(lat, 0.99),
           "p999_us": _percentile(lat, 0.999), "max_us": lat[-1] / 1000.0 if lat else None,
           # from the sender's stamp: the generator's own scheduling delay included
           "e2e_p99_us": _percentile(e2e, 0.99),
           "e2e_max_us": e2e[-1] / 1000.0 if e2e else None,
           "switch_cpu_share": sum(r.switch_cpu_s for r in rounds)
           / (seconds + len(rounds)),
           "loadavg": max(r.loadavg for r in rounds),
           # the machine's CPUs busy during the scenario, and the sender's part (its
           # kernel work delivering each frame to the switch's socket included)
           "host_busy": busy / max(1, total),
           "sender_cpu_share": sum(r.sender_cpu_s for r in rounds) / seconds,
           "generator_fifo": all(r.generator_fifo for r in rounds),
           "host_steal_ms": steal * 1000 / os.sysconf("SC_CLK_TCK")}
    if len(rounds) > 1:
        row["rounds"] = [{"loss": max(0.0, 1 - len(r.end_to_end) / r.expected),
                          "receiver_drops": r.dropped["receiver"],
                          "switch_urgent_drops": r.dropped.get("switch_urgent"),
                          "p99_us": _percentile(r.forwarding, 0.99),
                          "p999_us": _percentile(r.forwarding, 0.999),
                          "max_us": r.forwarding[-1] / 1000.0 if r.forwarding else None,
                          "host_steal_ms": r.host[2] * 1000 / os.sysconf("SC_CLK_TCK")}
                         for r in rounds]
    between = sorted(v for r in rounds for v in r.between)
    if between:
        # the same rounds' frames between the controller's writes (WRITE_WINDOW_S)
        row["between_p99_us"] = _percentile(between, 0.99)
        row["between_p999_us"] = _percentile(between, 0.999)
        row["writing_vs_between_p99"] = row["p99_us"] / row["between_p99_us"]
        # how far another run's ratio could be: the writing windows and the pauses
        # after them resampled together (block_bootstrap)
        row["writing_vs_between_p99_interval"] = block_bootstrap.ratio_interval(
            [b for r in rounds for b in r.blocks],
            [b for r in rounds for b in r.between_blocks], paired=True)
        if "rounds" in row:
            for out, r in zip(row["rounds"], rounds, strict=True):
                out["between_p99_us"] = _percentile(r.between, 0.99)
    writes = [r.writes for r in rounds if r.writes]
    if writes:
        row["writes"] = {
            "writes": sum(w["writes"] for w in writes),
            "offered_per_s": sum(w["offered_per_s"] for w in writes) / len(writes),
            "applied_per_s": sum(w["applied_per_s"] for w in writes) / len(writes),
            "controller_cpu_s": [round(w["controller_cpu_s"], 3) for w in writes],
            "window_s": writes[0].get("window_s", 0.0)}
    return row


def _total(counts: Iterator[int | None]) -> int | None:
    """The sum, or None when a target does not count them."""
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _writing(write: Callable[[veth_switch.RunningSwitch, threading.Event, dict], None],
             switch: veth_switch.RunningSwitch, stop: threading.Event, result: dict) -> None:
    """Run a writer; what stopped it, if it failed, goes into ``result["error"]`` (the
    scenario then fails: a figure measured without the writes would pass for one with)."""
    cpu = time.thread_time()
    try:
        write(switch, stop, result)
    except Exception as exc:  # noqa: BLE001 - reported by the scenario
        result["error"] = f"{type(exc).__name__}: {exc}"[:500]
    # the controller's own CPU, taken from the measuring host's
    result["controller_cpu_s"] = time.thread_time() - cpu


def dataplane_cpu(choice: str) -> int | None:
    """The CPU ``--dataplane-cpu`` names: ``auto`` the last one this process may use
    when it may use two or more, ``off`` none, else that number (ValueError when it is
    none of these or not a CPU this process may use)."""
    allowed = os.sched_getaffinity(0)
    if choice == "off":
        return None
    if choice == "auto":
        return max(allowed) if len(allowed) >= 2 else None
    try:
        cpu = int(choice)
    except ValueError:
        raise ValueError("expected auto, off or a CPU number") from None
    if cpu not in allowed or len(allowed) < 2:
        raise ValueError(f"CPU {cpu} is not one of two or more this process may use "
                         f"({','.join(str(c) for c in sorted(allowed))})")
    return cpu


@contextlib.contextmanager
def _generator_off(cpu: int | None) -> Iterator[None]:
    """Keep this process's thread, and the sender, receiver and controller it starts from
    now on, off the switch's dataplane CPU (all of them are the switch's network and
    controller, which a real switch does not share its CPU with); restored after."""
    if cpu is None:
        yield
        return
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, allowed - {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def max_rate(tx_name: str, rx_name: str) -> tuple[float, list[float]]:
    """The rate the load is a share of: what the switch, as configured for this
    benchmark (CPUs, extensions), forwards from ``tx_name`` to ``rx_name`` with
    ``veth_pps``'s sender — the median of MAX_RATE_RUNS runs of MAX_RATE_FRAMES
    frames, after one not counted, and the runs (frames/s). The median, not the best:
    a lucky burst would make "50%" of it more than half of what the switch forwards.
    The first run after the switch starts is a warm-up, not counted."""
    frames = [veth_pps._frame(i, veth_pps.ROUTER_MAC) for i in range(MAX_RATE_FRAMES)]
    tx, rx = RawPort(tx_name), RawPort(rx_name)
    runs = []
    try:
        veth_pps._pump(tx, rx, frames)        # the warm-up
        for _ in range(MAX_RATE_RUNS):
            got, secs = veth_pps._pump(tx, rx, frames)
            runs.append(got / secs if secs else 0.0)
    finally:
        tx.close()
        rx.close()
    return (statistics.median(runs) or 1000.0), runs


def round_order(scenarios: tuple[str, ...], r: int) -> tuple[str, ...]:
    """The scenarios in the order round ``r`` (from 0) runs them: as given, and
    reversed every other round (A B C, C B A, ...), so that over an even number of
    rounds each scenario runs as early as late and a host that drifts over the minutes
    weighs on all of them alike, not on the last ones of every round."""
    return scenarios if r % 2 == 0 else scenarios[::-1]


def run_target(target: str, seconds: float, max_pps: float | None,
               ingress_priority: bool = True,
               scenarios: tuple[str, ...] = SCENARIOS, load: Load = Load(),
               cpu: int | None = None, rounds: int = 1,
               p4runtime_process: bool = True, window_s: float = WRITE_WINDOW_S,
               generator_fifo: int = GENERATOR_FIFO_PRIORITY) -> dict:
    """``ingress_priority``: softswitch reads the urgent DSCP ahead of a backlog
    (``--ingress-priority-dscp``, its extension; BMv2 has nothing like it). ``cpu``:
    softswitch runs its port loop on that CPU alone (``--dataplane-cpu``, its extension;
    BMv2 runs as it is), and the generator, receiver and controller stay off it, for
    either target. ``rounds``: each scenario runs that many times for ``seconds``,
    the scenarios taking turns (``round_order``). ``p4runtime_process``: softswitch
    serves P4Runtime from a front end process, each Write answered on the port loop
    (``--p4runtime-process``, its extension). ``window_s``: the controller writes in
    windows that long, one on, one off (0: all along). ``generator_fifo``: the sender's
    SCHED_FIFO priority (0: normal; module doc)."""
    extra: tuple[str, ...] = ()
    if p4runtime_process:
        extra += ("--p4runtime-process",)
    if ingress_priority:
        extra += ("--ingress-priority-dscp", str(URGENT_DSCP))
    if cpu is not None:
        extra += ("--dataplane-cpu", str(cpu))
    with veth_pairs(2, "u") as pairs:
        (sw1, h1), (sw2, h2) = pairs
        with veth_switch.running(target, PROGRAM, {1: sw1, 2: sw2},
                                 {"TAILCC_ROUTE_SIZE": str(ROUTE_SIZE)},
                                 softswitch_args=extra) as switch, _generator_off(cpu):
            if "elephants+p4runtime" in scenarios:
                switch.arm_p4runtime()          # (BMv2: empties its tables, so first)
            switch.configure(veth_pps.TAILCC_ROUTES)
            runs: list[float] = []
            if max_pps is None:
                max_pps, runs = max_rate(h1, h2)
            switch.configure(_config(max_pps)[len(veth_pps.TAILCC_ROUTES):])
            done: dict[str, list[Round]] = {name: [] for name in scenarios}
            for r in range(rounds):
                for name in round_order(scenarios, r):
                    turn = f" (round {r + 1}/{rounds})" if rounds > 1 else ""
                    print(f"urgent latency: {target} {name}{turn} ...", file=sys.stderr,
                          flush=True)
                    first_route = sum(d.writes.get("writes", 0) for d in done[name])
                    done[name].append(_scenario(
                        switch, (h1, sw1, h2), name,
                        load.rates(max_pps, name != "idle"), seconds, first_route,
                        window_s, generator_fifo))
    rows = [_summary(name, load.rates(max_pps, name != "idle"), done[name])
            for name in scenarios]
    _against_elephants(rows, done)
    return {"max_pps": max_pps, "max_pps_runs": runs, "scenarios": rows}


def _against_elephants(rows: list[dict], done: dict[str, list[Round]]) -> None:
    """Each writes scenario's P99 (while its controller writes) over the elephants
    scenario's, and where another run's ratio could fall (block_bootstrap: the writing
    windows and the elephants' seconds resampled apart; the target is a ratio within
    1.2)."""
    elephants = next((r for r in rows if r["scenario"] == "elephants"), None)
    if elephants is None or not elephants["p99_us"]:
        return
    plain = [b for r in done["elephants"] for b in r.blocks]
    for row in rows:
        if row["scenario"].startswith("elephants+"):
            row["vs_elephants_p99"] = row["p99_us"] / elephants["p99_us"]
            row["vs_elephants_p99_interval"] = block_bootstrap.ratio_interval(
                [b for r in done[row["scenario"]] for b in r.blocks], plain)


def table(report: dict) -> str:
    targets = list(report["targets"])
    head = f"{'scenario':<21}{'target':<12}{'urgent/s':>9}{'P50 µs':>9}{'P99 µs':>9}" \
           f"{'P999 µs':>10}{'max µs':>10}{'loss':>7}{'CPU':>6}{'sender':>7}{'host':>6}" \
           f"{'e2e P99':>9}{'e2e max':>9}{'steal ms':>9}"
    lines = [head]
    for i, name in enumerate(report.get("scenarios", SCENARIOS)):
        for target in targets:
            r = report["targets"][target]["scenarios"][i]
            lines.append(f"{name:<21}{target:<12}{r['urgent_pps']:>9.0f}{r['p50_us']:>9.0f}"
                         f"{r['p99_us']:>9.0f}{r['p999_us']:>10.0f}{r['max_us'] or 0:>10.0f}"
                         f"{r['loss']:>7.1%}{r['switch_cpu_share']:>6.2f}"
                         f"{r.get('sender_cpu_share', 0.0):>7.2f}"
                         f"{r.get('host_busy', 0.0):>6.0%}"
                         f"{r.get('e2e_p99_us', 0.0):>9.0f}{r.get('e2e_max_us') or 0:>9.0f}"
                         f"{r.get('host_steal_ms', 0.0):>9.0f}")
        if len(targets) == 2:
            a, b = (report["targets"][t]["scenarios"][i] for t in targets)
            ratios = [b[k] / a[k] if a[k] else 0.0 for k in ("p50_us", "p99_us", "p999_us")]
            lines.append(f"{'':<21}{'bmv2/soft':<12}{'':>9}" + "".join(
                f"{r:>9.1f}x" if j else f"{r:>8.1f}x" for j, r in enumerate(ratios)))
    for target in targets:
        t = report["targets"][target]
        runs = t.get("max_pps_runs")
        if t.get("max_pps"):
            basis = (" (given)" if not runs else ", the median of its runs here "
                     + " / ".join(f"{x / 1000:.0f}k" for x in runs))
            lines.append(f"  {target}: loaded at {report.get('load', LOAD):.0%} of "
                         f"{t['max_pps']:,.0f} frames/s{basis}")
    for target in targets:
        for r in report["targets"][target]["scenarios"]:
            if "rounds" in r:
                lines.append(f"  {target} {r['scenario']}: P99 per round " + " / ".join(
                    f"{x['p99_us']:.0f}" for x in r["rounds"]) + " µs, max " + " / ".join(
                    f"{x['max_us'] or 0:.0f}" for x in r["rounds"]) + " µs, loss " + " / ".join(
                    f"{x['loss']:.1%}" for x in r["rounds"]) + ", of which the receiver dropped "
                    + " / ".join(str(x["receiver_drops"]) for x in r["rounds"])
                    + ("" if r["rounds"][0].get("switch_urgent_drops") is None else
                       ", the switch's port (kernel, ring full) "
                       + " / ".join(str(x["switch_urgent_drops"]) for x in r["rounds"])))
    for target in targets:
        for r in report["targets"][target]["scenarios"]:
            if r.get("switch_urgent_drops") or r.get("switch_other_drops"):
                lines.append(f"  {target} {r['scenario']}: the kernel dropped "
                             f"{r['switch_urgent_drops']} urgent and "
                             f"{r['switch_other_drops']} other frames at the switch's "
                             "ports (it fell behind: a receive ring was full)")
    for target in targets:
        for r in report["targets"][target]["scenarios"]:
            if "writes" in r:
                w = r["writes"]
                lines.append(f"  {target} {r['scenario']}: controller offered "
                             f"{w['offered_per_s']:.0f} writes/s, applied "
                             f"{w['applied_per_s']:.0f}/s"
                             + (f", in windows of {w['window_s']:g} s on, "
                                f"{w['window_s']:g} s off" if w.get("window_s") else ""))
            if "between_p99_us" in r:
                lines.append(
                    f"  {target} {r['scenario']}: P99 while the controller writes "
                    f"{r['p99_us']:.0f} µs, between its writes (same rounds) "
                    f"{r['between_p99_us']:.0f} µs: {r['writing_vs_between_p99']:.2f}x"
                    + _interval(r.get("writing_vs_between_p99_interval"))
                    + ("" if "rounds" not in r else " (per round " + " / ".join(
                        f"{x['p99_us']:.0f} vs {x['between_p99_us']:.0f}"
                        for x in r["rounds"]) + ")"))
            if "vs_elephants_p99" in r:
                lines.append(
                    f"  {target} {r['scenario']}: P99 while the controller writes over "
                    f"the elephants scenario's: {r['vs_elephants_p99']:.2f}x"
                    + _interval(r.get("vs_elephants_p99_interval")))
    return "\n".join(lines)


def _interval(bounds: list[float] | tuple[float, float] | None) -> str:
    """A ratio's 95% interval (block_bootstrap), as the table shows it."""
    if not bounds:
        return ""
    return f" (95% interval {bounds[0]:.2f}-{bounds[1]:.2f}x)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per scenario (10)")
    ap.add_argument("--targets", nargs="+", choices=veth_switch.TARGETS,
                    default=list(veth_switch.TARGETS))
    ap.add_argument("--max-pps", action="append", default=[], metavar="TARGET=N",
                    help="a target's max rate instead of measuring it")
    ap.add_argument("--ingress-priority", choices=("on", "off"), default="on",
                    help="softswitch reads the urgent DSCP first (--ingress-priority-dscp "
                         f"{URGENT_DSCP}; on)")
    ap.add_argument("--dataplane-cpu", default="auto", metavar="auto|off|N",
                    help="softswitch's port loop on this CPU alone (--dataplane-cpu, its "
                         "extension), and the generator, receiver and controller off it "
                         "for every target; auto: the last CPU, where there are two or "
                         "more (auto)")
    ap.add_argument("--p4runtime-process", choices=("on", "off"), default="on",
                    help="softswitch serves P4Runtime from a front end process of its own "
                         "(--p4runtime-process, its extension; on)")
    ap.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--rounds", type=int, default=1,
                    help="run each scenario this many times for --seconds, the scenarios "
                         "taking turns, in reverse order every other round; percentiles "
                         "over all rounds' frames (1)")
    ap.add_argument("--load", type=float, default=LOAD,
                    help=f"offered load, a fraction of the target's max rate ({LOAD})")
    ap.add_argument("--urgent-share", type=float, default=URGENT_SHARE,
                    help=f"the urgent frames' part of the load ({URGENT_SHARE}); "
                         "elephants carry the rest")
    ap.add_argument("--write-window", type=float, default=WRITE_WINDOW_S, metavar="S",
                    help="the controller writes for S seconds, then pauses S seconds, in "
                         "turn, and the P99 while it writes is set beside the P99 between "
                         f"its writes in the same rounds; 0: it writes all along "
                         f"({WRITE_WINDOW_S:g})")
    ap.add_argument("--generator-priority", choices=("fifo", "normal"), default="fifo",
                    help="the sender's scheduling: SCHED_FIFO, so that the processes "
                         "sharing its CPU (the controller, the switch's front end) do not "
                         "turn its pacing into bursts, or as any process (fifo)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    if veth_switch.lacks_root("urgent_latency"):
        return 1
    if args.seconds < 2:
        ap.error("--seconds must be at least 2")
    if not 1 <= args.rounds <= 100:
        ap.error(f"--rounds {args.rounds}: expected 1 to 100")
    if not 0 < args.load <= 1.5:
        ap.error(f"--load {args.load}: expected a fraction of the max rate in (0, 1.5]")
    if args.write_window and not 4 * GUARD_S <= args.write_window <= args.seconds / 2:
        ap.error(f"--write-window {args.write_window}: expected 0 or {4 * GUARD_S:g} to "
                 "half of --seconds")
    if not 0 < args.urgent_share <= 1:
        ap.error(f"--urgent-share {args.urgent_share}: expected a fraction in (0, 1]")
    load = Load(args.load, args.urgent_share)
    try:
        cpu = dataplane_cpu(args.dataplane_cpu)
    except ValueError as exc:
        ap.error(f"--dataplane-cpu {args.dataplane_cpu}: {exc}")
    given: dict[str, float] = {}
    for item in args.max_pps:
        name, _, value = item.partition("=")
        try:
            given[name] = float(value)
        except ValueError:
            ap.error(f"--max-pps {item!r}: expected TARGET=N")
    report: dict = {"seconds": args.seconds, "rounds": args.rounds, "targets": {},
                    "notes": [],
                    "load": load.total, "urgent_share": load.urgent,
                    "scenarios": list(args.scenarios),
                    "ingress_priority": args.ingress_priority, "dataplane_cpu": cpu,
                    "p4runtime_process": args.p4runtime_process,
                    "write_window_s": args.write_window,
                    "generator_priority": args.generator_priority}
    fifo = GENERATOR_FIFO_PRIORITY if args.generator_priority == "fifo" else 0
    report["notes"].append(
        f"sender at SCHED_FIFO priority {fifo} (--generator-priority fifo)" if fifo else
        "sender at normal priority (--generator-priority normal)")
    if "softswitch" in args.targets:
        report["notes"].append(
            f"softswitch ingress priority {args.ingress_priority}"
            + (f" (--ingress-priority-dscp {URGENT_DSCP})" if args.ingress_priority == "on"
               else ""))
        report["notes"].append(
            "softswitch port loop on CPU shared with everything else" if cpu is None else
            f"softswitch port loop on CPU {cpu} alone (--dataplane-cpu {cpu}); generator, "
            f"receiver and controller on the other CPU(s) for every target; BMv2 unpinned")
        report["notes"].append(f"softswitch P4Runtime front end process {args.p4runtime_process}"
                               + (" (--p4runtime-process)" if args.p4runtime_process == "on"
                                  else ""))
    for target in args.targets:
        why = veth_switch.available(target)
        if why is not None:
            report["notes"].append(f"{target} left out: {why}")
            continue
        report["targets"][target] = run_target(target, args.seconds, given.get(target),
                                               args.ingress_priority == "on",
                                               tuple(args.scenarios), load, cpu,
                                               args.rounds, args.p4runtime_process == "on",
                                               args.write_window, fifo)
        if fifo and not all(r["generator_fifo"]
                            for r in report["targets"][target]["scenarios"]):
            report["notes"].append(f"{target}: the sender could not take SCHED_FIFO in "
                                   "some rounds (not permitted here): normal priority there")
    print(table(report))
    for note in report["notes"]:
        print(f"  {note}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
