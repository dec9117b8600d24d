"""QueuedSwitch: the traffic manager between ingress and egress, observed from P4."""


import pytest
from programs import QUEUEING_NAMES, v1model_program

from softswitch.tm import TrafficManager
from softswitch.v1model.fast_switch import load_switch_file
from softswitch.v1model.queueing import QueuedSwitch

# Ingress: out port 1, queue = low 3 bits of the source MAC. Egress writes the queueing
# metadata into the destination MAC so the test can read it off the wire.
PROGRAM = v1model_program(
    types="header eth_t { bit<48> dst; bit<48> src; bit<16> type; }", headers="eth_t eth;",
    extract=["h.eth"],
    ingress="""
    apply {
        sm.egress_spec = 1;
        sm.priority = h.eth.src[2:0];
        if (h.eth.type == 0x0001) { clone(CloneType.I2E, 7); }
    }
""",
    egress="""
    apply {
        h.eth.dst = (bit<16>) sm.deq_timedelta ++ (bit<13>) sm.enq_qdepth
                    ++ (bit<16>) sm.deq_qdepth ++ sm.priority;
    }
""",
    emit=["h.eth"], names=QUEUEING_NAMES)


def frame(prio: int, ether_type: int = 0x0800, size: int = 100) -> bytes:
    return bytes(6) + bytes([0, 0, 0, 0, 0, prio]) + ether_type.to_bytes(2, "big") \
        + bytes(size - 14)


def decode(dst: bytes) -> dict[str, int]:
    v = int.from_bytes(dst, "big")
    return {"deq_timedelta": v >> 32, "enq_qdepth": v >> 19 & 0x1FFF,
            "deq_qdepth": v >> 3 & 0xFFFF, "priority": v & 7}


@pytest.fixture()
def switch(tmp_path):
    src = tmp_path / "q.p4"
    src.write_text(PROGRAM)
    return load_switch_file(src)


def run_until_empty(qs: QueuedSwitch, now: float = 0.0):
    out = []
    for _ in range(10_000):
        out += qs.transmit_ready(now)
        nxt = qs.next_event_us(now)
        if nxt is None:
            return out
        now = nxt
    raise AssertionError("did not drain")


def test_urgent_packet_overtakes_queued_bulk_on_rate_limited_port(switch):
    tm = TrafficManager(num_queues=8, clock=lambda: -1000.0)
    tm.set_queue_rate(10_000, port=1)  # 100 us per packet per queue, set long ago
    qs = QueuedSwitch(switch, tm)
    for _ in range(5):
        qs.receive(0, frame(0, size=1500), now_us=0)
    out = qs.transmit_ready(0)                            # the bulk head leaves at once
    qs.receive(0, frame(7, size=64), now_us=10)
    out += run_until_empty(qs, now=10)
    meta = [decode(p.data[:6]) for p, _ in out]
    assert [m["priority"] for m in meta][:2] == [0, 7]   # bulk head already left at t=0
    assert meta[1]["deq_timedelta"] == 0                   # the urgent one did not wait
    assert meta[-1]["deq_timedelta"] == 400                # the last bulk waited 4 slots
    assert meta[1]["enq_qdepth"] == 0                      # BMv2 1.15: its own queue


def test_clone_priority_follows_session_class_of_service(switch):
    tm = TrafficManager(num_queues=8)
    qs = QueuedSwitch(switch, tm)
    switch.mirroring_add(7, 2, class_of_service=6)
    qs.receive(0, frame(1, ether_type=0x0001), now_us=0)
    out = run_until_empty(qs)
    by_port = {p.port: decode(p.data[:6])["priority"] for p, _ in out}
    assert by_port == {1: 1, 2: 6}


def test_priority_beyond_configured_queues_is_dropped(switch):
    qs = QueuedSwitch(switch, TrafficManager(num_queues=4))
    qs.receive(0, frame(5), now_us=0)
    assert run_until_empty(qs) == [] and qs.dropped_at_enqueue == 1


_CYCLES = """
import gc, sys
sys.path[:0] = sys.argv[3:]
from test_queued_switch import QueuedSwitch, TrafficManager, frame, load_switch_file
from test_queued_switch import run_until_empty
sw = load_switch_file(sys.argv[1], fastpath=sys.argv[2])
tm = TrafficManager(num_queues=8, clock=lambda: -1000.0)
tm.set_queue_rate(10_000, port=1, priority=0)     # bulk queued, urgent passes
qs = QueuedSwitch(sw, tm)
gc.collect()
gc.set_debug(gc.DEBUG_SAVEALL)
for i in range(50):
    out = []
    qs.receive(0, frame(0, size=200), now_us=i * 100, out=out)
    qs.receive(0, frame(7, size=64), now_us=i * 100 + 1, out=out)
assert run_until_empty(qs, now=5000)
gc.collect()
print(sorted(type(o).__name__ for o in gc.garbage))
"""


@pytest.mark.parametrize("fastpath", ["off", "require"])
def test_a_packet_through_the_queues_leaves_no_cycle(tmp_path, fastpath):
    """A packet's stay (Dequeued) must not lead back to the packet: such a cycle per
    packet is freed only by the cyclic collector, whose passes then stopped a busy
    switch for ~100 ms every ~50,000 packets (Mininet leaf-spine mix, P99 ~50 ms).
    Queued, passed through, with and without the C fast path; in a fresh interpreter,
    so no other test's garbage (or threads) is counted."""
    import subprocess
    import sys
    from pathlib import Path

    src = tmp_path / "q.p4"
    src.write_text(PROGRAM)
    here = Path(__file__).resolve().parent
    done = subprocess.run([sys.executable, "-c", _CYCLES, str(src), fastpath, str(here),
                           str(here.parent)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
