"""The native forwarding loop of ``softswitch run`` (``fastpath/rt_loop.c``) against the
Python way (``Forwarder(native=False)``): one mixed burst over real veth pairs must
leave the same frames, in the same order per port, with the same counters, registers and
traffic-manager statistics. The burst mixes frames the loop finishes with every kind it
hands back in the middle: PFC frames (pause, then resume, of a queue the burst uses),
packets for the paused queue, clones, a resubmit, a recirculation, next to multicast
copies, PacketIns to the CPU port, digests, counters and tail drops at the full paused
queue that the loop does itself. With ``SOFTSWITCH_FASTPATH=off`` the same burst takes
the Python way with no compiled C at all (interpreter, select loop, per-frame socket
calls). Needs root."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from native_support import TAG, pfc, tagged_device, tagged_frame, tagged_program

from softswitch.daemon.forwarding import Forwarder
from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.daemon.ports.veth import veth_pairs
from softswitch.tm import TrafficManager

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")

CPU_PORT = 255
# op: 0 forward, 1 clone to session 5 (port 3), 2 multicast group 1 (ports 2, 3),
# 3 resubmit once, 4 to the CPU port, 5 digest, 6 recirculate once (in egress)
PROGRAM = tagged_program(
    "bit<8> op; bit<8> prio; bit<8> dest; bit<8> seq; bit<32> order;\n"
    "               bit<32> qdepth; bit<8> inst; bit<8> rid; bit<8> again; bit<8> port;",
    declarations="struct seen_t { bit<8> seq; bit<8> op; }",
    ingress="""
    counter(8, CounterType.packets_and_bytes) per_op;
    direct_counter(CounterType.packets_and_bytes) routed;
    action to(bit<9> port) { sm.egress_spec = port; routed.count(); }
    action drop() { mark_to_drop(sm); routed.count(); }
    table route { key = { h.tag.dest : exact; } actions = { to; drop; }
                  default_action = drop(); counters = routed; }
    apply {
        if (!h.tag.isValid()) { mark_to_drop(sm); exit; }
        per_op.count((bit<32>)h.tag.op);
        sm.priority = h.tag.prio[2:0];
        route.apply();
        h.tag.again = m.again;
        if (h.tag.op == 1) {
            clone(CloneType.I2E, 5);
        } else if (h.tag.op == 2) {
            sm.mcast_grp = 1;
        } else if (h.tag.op == 3 && m.again == 0) {
            m.again = 1;
            resubmit_preserving_field_list(1);
        } else if (h.tag.op == 4) {
            sm.egress_spec = 255;
        } else if (h.tag.op == 5) {
            digest<seen_t>(1, {h.tag.seq, h.tag.op});
        }
    }
""",
    egress_locals="\n    register<bit<32>>(1) order;\n",
    egress_body="""        bit<32> o;
        order.read(o, 0);
        order.write(0, o + 1);
        h.tag.order = o;
        h.tag.qdepth = (bit<32>)sm.deq_qdepth;
        h.tag.inst = (bit<8>)sm.instance_type;
        h.tag.rid = (bit<8>)sm.egress_rid;
        h.tag.port = (bit<8>)sm.egress_port;
""")


tagged = functools.partial(tagged_frame, rest=12)   # the tag_t bytes after seq


def burst() -> list[bytes]:
    """One burst into port 1; the comments say what the loop does with each frame."""
    return [
        tagged(1, 2),                 # loop
        tagged(2, 1, prio=2),         # loop (back out of port 1)
        pfc(2, 0xFFFF),               # handed back whole: pauses port 1's queue 2
        tagged(3, 1, prio=2),         # handed back: waits in the paused queue
        tagged(4, 1, prio=0),         # handed back (port 1 holds a packet), passes: before 3
        tagged(5, 2),                 # loop
        tagged(6, 2, op=1),           # loop, and its clone (to port 3)
        tagged(7, 2, op=2),           # loop: copies to ports 2 and 3
        tagged(8, 2, op=3),           # loop, resubmitted
        tagged(9, 2, op=4),           # loop: PacketIn for the device
        tagged(10, 3, op=5),          # loop, with a digest
        tagged(11, 2),                # loop
        tagged(30, 1, prio=5),        # loop: port 1 holds 3, but in a lower queue
        tagged(31, 1, prio=2),        # handed back: queued behind 3 (queue 2 is now full)
        tagged(32, 1, prio=2),        # loop: dropped, the paused queue 2 is full
        pfc(2, 0),                    # handed back whole: resumes queue 2
        tagged(12, 1, prio=2),        # handed back: dropped (full), 3 and 31 leave now
        tagged(13, 1),                # loop
        tagged(14, 2, op=6),          # loop, recirculated
        tagged(15, 9),                # loop: no such route, dropped
        *[tagged(16 + i, 2 + i % 2, prio=i % 3) for i in range(8)],   # loop
    ]


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("native") / "mixed.p4"
    path.write_text(PROGRAM)
    return str(path)


@pytest.fixture()
def veths() -> Iterator[list[tuple[str, str]]]:
    with veth_pairs(3, "n") as pairs:
        yield pairs




def _wait(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def _run(program: str, veths: list[tuple[str, str]], native: bool,
         fastpath: str = "c") -> dict[str, Any]:
    """Forward one burst into port 1 and gather everything it changed."""
    device = tagged_device(program, fastpath)
    plane = DataPlane({i + 1: sw for i, (sw, _) in enumerate(veths)})
    tm = TrafficManager(num_queues=8)
    scheduler = Forwarder(device, tm, held_frames=plane.held_frames, native=native)
    device.transmit = plane.transmit
    for port in (1, 2, 3, CPU_PORT):   # queues exist before the burst, as after a while
        tm.port(port)
    tm.set_queue_depth(2, port=1, priority=2)
    hosts = [RawPort(host) for _, host in veths]
    frames = burst()
    try:
        assert hosts[0].send_batch(frames) == len(frames)
        time.sleep(0.05)                # the whole burst waits in the switch's socket
        loop = threading.Thread(target=plane.run_batches, args=(scheduler.deliver_batch,))
        loop.start()
        _wait(lambda: plane.received >= len(frames))
        plane.stop()
        loop.join(5)
        scheduler.start()               # what still waits for a later turn leaves
        _wait(lambda: not tm.holding())
        scheduler.stop()
        time.sleep(0.05)
        outs = {n + 1: [f for f in host.receive_batch() if f[12:14] == TAG.to_bytes(2, "big")]
                for n, host in enumerate(hosts)}
        sw = device.current.switch
        return {
            "outs": outs,
            "received": plane.received, "sent": plane.sent,
            "per_op": [sw.counter_read("per_op", i) for i in range(8)],
            "routed": sorted(sw.counter_read("routed", e.handle)
                             for e in sw.table_entries("route")),
            "order": sw.register_read("order", 0),
            "queues": {(p, q): vars(ep.stats(q)) for p, ep in tm.ports.items()
                       for q in range(8)},
            "pfc_received": dict(tm.pfc_received),
            "queued": tm.queued,
            "dropped_at_enqueue": scheduler._queued.dropped_at_enqueue,
            "native_frames": scheduler.native_frames,
            "handed_back": scheduler.handed_back,
            "native_queues": tm.native is not None,
        }
    finally:
        for host in hosts:
            host.close()
        plane.close()


def _seqs(frames: list[bytes]) -> list[tuple[int, int, int]]:
    """(seq, instance type in egress, passes before: 1 after a resubmit or
    recirculation) of each frame out."""
    return [(f[17], f[26], f[28]) for f in frames]


def test_native_loop_and_python_way_leave_the_same_frames(program, veths):
    python_way = _run(program, veths, native=False)
    native = _run(program, veths, native=True)
    assert python_way["native_frames"] == 0
    # the loop finished 22 frames itself and handed back the 6 marked above
    assert (native["native_frames"], native["handed_back"]) == (22, 6), native
    frames = len(burst())
    assert native["received"] == python_way["received"] == frames
    for key in ("outs", "sent", "per_op", "routed", "order", "queues", "pfc_received",
                "queued", "dropped_at_enqueue"):
        assert native[key] == python_way[key], key
    outs = native["outs"]
    # port 1: 4 and 30 pass the paused queue 2; 3 and 31 leave once it resumes, in
    # order; 32 and 12 found it full
    assert [s for s, _, _ in _seqs(outs[1])] == [2, 4, 30, 3, 31, 13]
    assert native["queues"][(1, 2)]["dropped"] == native["dropped_at_enqueue"] == 2
    # ports 2 and 3: the frames handed back in the middle (6's clone, 8 after its
    # resubmit, 14 after its recirculation) keep their place among the loop's
    assert _seqs(outs[2]) == [(1, 0, 0), (5, 0, 0), (6, 0, 0), (7, 5, 0), (8, 0, 1),
                              (11, 0, 0), (14, 0, 1), (16, 0, 0), (18, 0, 0), (20, 0, 0),
                              (22, 0, 0)]
    assert _seqs(outs[3]) == [(6, 1, 0), (7, 5, 0), (10, 0, 0), (17, 0, 0), (19, 0, 0),
                              (21, 0, 0), (23, 0, 0)]
    assert native["sent"] == sum(len(f) for f in outs.values()) == 24
    assert native["queues"][(CPU_PORT, 0)]["dequeued"] == 1      # 9's PacketIn
    assert native["pfc_received"] == {(1, 2): 2} and native["queued"] == 0


@pytest.fixture()
def fastpath_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """SOFTSWITCH_FASTPATH=off, with the C helpers looked up afresh before and after."""
    from softswitch.daemon.ports import batchio
    from softswitch.p4runtime import entrywire

    monkeypatch.setenv("SOFTSWITCH_FASTPATH", "off")
    batchio.native.cache_clear()
    entrywire.native.cache_clear()
    yield
    monkeypatch.undo()
    batchio.native.cache_clear()
    entrywire.native.cache_clear()


def test_fastpath_off_runs_no_compiled_c(program, veths, fastpath_off):
    """SOFTSWITCH_FASTPATH=off: no batched port I/O, no entry decoder, an interpreted
    pipeline, so no native loop or native queues even where the scheduler allows them;
    the burst still leaves what the loop leaves."""
    from softswitch.daemon.ports import batchio
    from softswitch.p4runtime import entrywire

    assert batchio.native() is None and entrywire.native() is None
    off = _run(program, veths, native=True, fastpath="off")
    assert (off["native_frames"], off["native_queues"]) == (0, False), off
    assert [s for s, _, _ in _seqs(off["outs"][1])] == [2, 4, 30, 3, 31, 13]
    assert off["sent"] == sum(len(f) for f in off["outs"].values()) == 24
    assert off["pfc_received"] == {(1, 2): 2} and off["dropped_at_enqueue"] == 2


def test_a_bad_fastpath_setting_stops_softswitch_run():
    env = dict(os.environ, SOFTSWITCH_FASTPATH="maybe")
    res = subprocess.run([sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
                          "--grpc-server-addr", "127.0.0.1:0"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1, res
    assert "SOFTSWITCH_FASTPATH must be one of off, auto, require, not 'maybe'" \
        in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
