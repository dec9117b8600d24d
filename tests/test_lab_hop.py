"""The lab's switch hop in C (``rt_queues.c``, :class:`NativeHop`) against the Python
traffic manager behind the same C pipeline (:class:`QueuedSwitch`).

Random runs on one switch: packets of random sizes and priorities into three ports,
some cloned to a third port or recirculated once by egress, with link rates, packet
and byte capacities, a pps rate, DWRR weights, PFC thresholds per (ingress port,
priority) and pauses from downstream; the hop and the Python side get the same calls
at the same times (arrivals, pauses, the wake-ups each asks for). Every step must give
the same frames (their bytes carry the queue metadata egress saw), the same time each
leaves the wire, the same PFC frames and the same next wake-up, float for float.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
from native_support import tagged_frame, tagged_program
from programs import switch_of_source

from softswitch.tm import PfcThresholds, TrafficManager
from softswitch.v1model.native_queues import NativeHop
from softswitch.v1model.queueing import QueuedSwitch

PROGRAM = tagged_program(
    "bit<8> op; bit<8> prio; bit<8> dest; bit<8> seq; bit<32> enq_ts;\n"
    "               bit<32> deq_td; bit<32> eg_ts; bit<32> enq_qd; bit<32> deq_qd;\n"
    "               bit<8> inst; bit<8> again;",
    ingress="""
    action to(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table route { key = { h.tag.dest : exact; } actions = { to; drop; }
                  default_action = drop(); }
    apply {
        if (!h.tag.isValid()) { mark_to_drop(sm); exit; }
        sm.priority = h.tag.prio[2:0];
        route.apply();
        h.tag.again = m.again;
        if (h.tag.op == 1) { clone(CloneType.I2E, 5); }
    }
""",
    egress_locals="\n",
    egress_body="""        h.tag.enq_ts = sm.enq_timestamp;
        h.tag.deq_td = sm.deq_timedelta;
        h.tag.eg_ts = (bit<32>)sm.egress_global_timestamp;
        h.tag.enq_qd = (bit<32>)sm.enq_qdepth;
        h.tag.deq_qd = (bit<32>)sm.deq_qdepth;
        h.tag.inst = (bit<8>)sm.instance_type;
""")
PORTS = (1, 2, 3)
frame = functools.partial(tagged_frame)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hop")


def _switch(directory: Path):  # type: ignore[no-untyped-def]
    sw = switch_of_source(directory, PROGRAM)
    if getattr(sw, "fastpath", None) != "c":
        pytest.skip("no C packet path here (no compiler)")
    from softswitch.core.control import KeyMatch
    for out in PORTS:
        sw.table_add("route", [KeyMatch("h.tag.dest", "exact", out)], "to", [out])
    sw.mirroring_add(5, 3)
    return sw


def _configure(tm: TrafficManager, rng: random.Random) -> None:
    """Link rates, depths, one byte capacity and one pps rate, DWRR on some queues,
    PFC thresholds on some (ingress port, priority); as the lab's commands would."""
    weighted = rng.sample(range(8), rng.choice((0, 2, 3)))
    for port in PORTS:
        tm.set_link_rate(rng.choice((10e9, 25e9, 40e9, 100e9)), port)
        tm.set_queue_depth(rng.randint(3, 12), port)
        for q in weighted:
            tm.set_queue_weight(rng.randint(1, 4), port, q)
    tm.port(2).queue_config(rng.randrange(8)).capacity_bytes = 4000
    tm.set_queue_rate(2e5, 3, rng.randrange(8))
    for port in PORTS:
        for prio in rng.sample(range(8), 3):
            tm.set_pfc(port, prio, PfcThresholds(rng.randint(2, 5), rng.randint(0, 1)))


def _python_step(queued: QueuedSwitch, now: float):  # type: ignore[no-untyped-def]
    tm = queued.tm
    outs = [(o.port, o.data, done) for o, done in queued.transmit_ready(now)]
    events = [(e.port, e.priority, e.pause) for e in tm.pfc.take_events()] or None
    return outs, events, tm.next_event_us(now)


@pytest.mark.parametrize("seed", range(6))
def test_hop_makes_the_python_traffic_managers_decisions(program_dir: Path,
                                                          seed: int) -> None:
    rng = random.Random(seed)
    state = rng.getstate()
    tm_py, tm_c = TrafficManager(num_queues=8), TrafficManager(num_queues=8)
    _configure(tm_py, rng)
    rng.setstate(state)
    _configure(tm_c, rng)
    queued = QueuedSwitch(_switch(program_dir), tm_py)
    hop = NativeHop(_switch(program_dir), tm_c)
    now, wake, steps, sent = 0.0, None, 0, 0
    for seq in range(400):
        arrival = now + rng.choice((0.0, 0.0, rng.uniform(0.0, 0.6), rng.uniform(0.0, 3.0)))
        if wake is not None and wake <= arrival:
            now = wake
            want, got = _python_step(queued, now), hop.service(now)
        else:
            now = arrival
            kind = rng.random()
            if kind < 0.1:
                port, prio = rng.choice(PORTS), rng.randrange(8)
                quanta = rng.choice((0, 0xFFFF, rng.randint(1, 300)))
                tm_py.port(port).pause(prio, quanta, now)
                hop.pause(port, prio, quanta, now)
                want, got = _python_step(queued, now), hop.service(now)
            else:
                op = 1 if kind < 0.2 else 6 if kind < 0.3 else 0
                data = frame(seq % 256, rng.choice(PORTS), rng.randrange(8), op,
                             rest=rng.randint(22, 1400))
                port = rng.choice(PORTS)
                queued.receive(port, data, now)
                want, got = _python_step(queued, now), hop.receive(port, data, now)
        assert got == want, f"seed {seed}, step {steps} at {now} us"
        wake = want[2]
        steps += 1
        sent += len(want[0])
        assert hop.depth() == sum(ep.depth() for ep in tm_py.ports.values())
        for port in PORTS:
            assert hop.depth(port) == tm_py.depth(port)
    while wake is not None:
        now = wake
        want, got = _python_step(queued, now), hop.service(now)
        assert got == want, f"seed {seed}, drain at {now} us"
        wake = want[2]
        sent += len(want[0])
    assert sent > 150 and tm_py.pfc.pauses_sent
    for (port, prio) in tm_py.pfc.thresholds:
        assert hop.paused(port, prio) == ((port, prio) in tm_py.pfc.paused)


def test_lab_fabric_runs_its_switches_in_c() -> None:
    """On the C packet path every switch of a lab network is a C hop and the fabric runs
    their events (what the pinned cell's C run then holds to the interpreter's)."""
    from dataclasses import replace

    from taillab.programs import compile_tailcc
    from taillab.runner import build_network
    from taillab.scenario import load_scenario
    from taillab.traffic import generate

    scenario = replace(load_scenario("moe").scaled(50, (1,)), drain_us=50)
    messages = generate(scenario, 1)
    net = build_network(scenario, "tailcc", messages, compile_tailcc())
    if any(sw.hop is None for sw in net.switches.values()):
        pytest.skip("no C packet path here (no compiler)")
    net.run(messages)
    assert net._fabric is not None          # the run was wired as a native fabric
    assert sum(sw.received for sw in net.switches.values()) > 0
