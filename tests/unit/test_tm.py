"""Traffic manager: BMv2 queue semantics and the softswitch extensions."""

import pytest

from softswitch.tm import PfcThresholds, TrafficManager
from softswitch.tm.pfc import build_pfc_frame, parse_pfc_frame


def drain(tm: TrafficManager, start: float = 0.0, limit: int = 10_000) -> list:
    """Run the TM's own event times until it is empty; returns Dequeued in order."""
    now, out = start, []
    for _ in range(limit):
        out += tm.dequeue_ready(now)
        nxt = tm.next_event_us(now)
        if nxt is None:
            return out
        now = max(nxt, now)
    raise AssertionError("traffic manager did not drain")


def test_strict_priority_serves_highest_first():
    tm = TrafficManager(num_queues=8)
    tm.set_queue_rate(1000, port=1)  # one packet per ms per queue: packets pile up
    for i in range(3):
        tm.enqueue(("bulk", i), 1500, 1, 0, 0, now_us=0)
    tm.enqueue(("urgent", 0), 64, 1, 7, 0, now_us=0)
    order = [d.packet.item[0] for d in drain(tm)]
    assert order[0] == "urgent"
    assert order.count("bulk") == 3


def test_priority_beyond_queue_count_is_dropped_like_bmv2():
    tm = TrafficManager(num_queues=2)
    assert tm.enqueue("x", 100, 1, 2, 0, now_us=0) is None
    assert tm.enqueue("y", 100, 1, 1, 0, now_us=0) is not None


def test_tail_drop_at_default_capacity_64():
    tm = TrafficManager()
    accepted = [tm.enqueue(i, 100, 3, 0, 0, now_us=0) for i in range(70)]
    assert sum(a is not None for a in accepted) == 64
    assert tm.port(3).stats(0).dropped == 6


def test_rate_limit_spaces_departures_and_reports_queueing_delay():
    tm = TrafficManager()
    tm.set_queue_rate(10_000, port=1)  # 100 us apart; the queue is made now (t=0)
    for i in range(5):
        tm.enqueue(i, 100, 1, 0, 0, now_us=0)
    out = drain(tm)
    # as BMv2: the first departure is one interval after the queue was made
    assert [round(d.deq_timedelta_us) for d in out] == [100, 200, 300, 400, 500]
    assert [d.deq_qdepth for d in out] == [4, 3, 2, 1, 0]


def test_departures_are_fixed_when_packets_are_queued():
    """BMv2 (queueing.h push_front): a packet's departure is fixed at enqueue, so a new
    rate only applies to packets queued after it, and FIFO order holds across it."""
    tm = TrafficManager(clock=lambda: -1e6)
    tm.set_queue_rate(1, port=1)                     # one packet per second
    for i in range(3):
        tm.enqueue(i, 100, 1, 0, 0, now_us=0)       # leave at 0, 1 s, 2 s
    tm.set_queue_rate(1_000_000, port=1)             # "unlimited" from now on
    tm.enqueue(3, 100, 1, 0, 0, now_us=0)           # still behind the third: 2 s
    out = drain(tm)
    assert [d.packet.item for d in out] == [0, 1, 2, 3]
    assert [round(d.deq_timedelta_us) for d in out] == [0, 1_000_000, 2_000_000, 2_000_001]


def test_port_wide_settings_reach_ports_used_later():
    """set_queue_rate/set_queue_depth without a port set every port, also one whose
    queues do not exist yet (BMv2's set_rate_for_all / set_capacity_for_all)."""
    tm = TrafficManager(num_queues=2)
    tm.set_queue_rate(2_000_000)
    tm.set_queue_depth(3)
    accepted = [tm.enqueue(i, 100, 9, 1, 0, now_us=0) for i in range(5)]
    assert sum(a is not None for a in accepted) == 3
    out = drain(tm)
    assert [round(d.deq_timedelta_us, 1) for d in out] == [0.5, 1.0, 1.5]


def test_enq_qdepth_is_per_queue_by_default_and_port_total_on_request():
    for per_queue, expected in ((False, 3), (True, 0)):
        tm = TrafficManager(num_queues=8, per_queue_depth=per_queue)
        tm.set_queue_rate(1, port=1)
        for i in range(3):
            tm.enqueue(i, 100, 1, 0, 0, now_us=0)
        q = tm.enqueue("hi", 100, 1, 7, 0, now_us=0)
        assert q.enq_qdepth == expected


def test_dwrr_shares_bandwidth_by_weight():
    tm = TrafficManager(num_queues=8, link_rate_bps=1e9)
    for prio, weight in ((4, 5), (3, 3), (0, 2)):
        tm.set_queue_weight(weight, port=1, priority=prio)
        tm.set_queue_depth(10_000, port=1, priority=prio)
        for i in range(1000):
            tm.enqueue((prio, i), 1000, 1, prio, 0, now_us=0)
    first = drain(tm)[:1000]
    share = {p: sum(d.packet.priority == p for d in first) / len(first) for p in (4, 3, 0)}
    assert share[4] == pytest.approx(0.5, abs=0.02)
    assert share[3] == pytest.approx(0.3, abs=0.02)
    assert share[0] == pytest.approx(0.2, abs=0.02)


def test_strict_queue_preempts_dwrr_group():
    tm = TrafficManager(num_queues=8, link_rate_bps=1e9)
    tm.set_queue_weight(1, port=1, priority=0)
    for i in range(10):
        tm.enqueue(("bulk", i), 1500, 1, 0, 0, now_us=0)
    tm.enqueue(("cnp", 0), 64, 1, 6, 0, now_us=0)
    assert drain(tm)[0].packet.item[0] == "cnp"


def test_link_rate_serialises_packets():
    tm = TrafficManager(link_rate_bps=8e6)  # 1 byte per us
    tm.enqueue("a", 1000, 1, 0, 0, now_us=0)
    tm.enqueue("b", 1000, 1, 0, 0, now_us=0)
    out = drain(tm)
    assert out[1].deq_timedelta_us == pytest.approx(1000)
    assert out[1].tx_done_us == pytest.approx(2000)


def test_a_late_wall_clock_caller_catches_the_link_up():
    """``catch_up_us``: a dequeue that comes late (a loaded host) lets the frames whose
    turn on the link has passed leave at once, the link going on from where the last
    frame ended; without it (virtual time) a late call sends one frame and the link
    starts over from the call."""
    late = []
    for catch_up in (0.0, 2000.0):
        tm = TrafficManager(link_rate_bps=8e6, catch_up_us=catch_up)   # 1 byte per us
        for name in "abcdef":
            tm.enqueue(name, 100, 1, 0, 0, now_us=0)
        first = tm.dequeue_ready(0)
        assert [d.packet.item for d in first] == ["a"] and first[0].tx_done_us == 100
        late.append(tm.dequeue_ready(350))      # 250 µs after b's turn
    assert [d.packet.item for d in late[0]] == ["b"]
    assert late[0][0].tx_done_us == pytest.approx(450)
    assert [d.packet.item for d in late[1]] == ["b", "c", "d"]
    assert [d.tx_done_us for d in late[1]] == pytest.approx([200, 300, 400])


def test_catch_up_banks_no_credit_on_an_idle_link():
    """A link idle for a while gives no burst: the first frame after the pause starts
    when it arrives, and the next waits for it."""
    tm = TrafficManager(link_rate_bps=8e6, catch_up_us=2000.0)
    tm.enqueue("a", 100, 1, 0, 0, now_us=0)
    assert [d.packet.item for d in tm.dequeue_ready(0)] == ["a"]
    tm.enqueue("b", 100, 1, 0, 0, now_us=1000)
    tm.enqueue("c", 100, 1, 0, 0, now_us=1000)
    out = tm.dequeue_ready(1000)
    assert [d.packet.item for d in out] == ["b"] and out[0].tx_done_us == 1100
    assert tm.next_event_us(1000) == 1100


def test_catch_up_is_bounded():
    """A caller later than ``catch_up_us`` does not get the whole backlog at once."""
    tm = TrafficManager(link_rate_bps=8e6, catch_up_us=300.0)
    for i in range(20):
        tm.enqueue(i, 100, 1, 0, 0, now_us=0)
    tm.dequeue_ready(0)
    out = tm.dequeue_ready(10_000)              # 9.9 ms late
    # frames start at 9,700, 9,800, 9,900 and 10,000 (now): four, not 19
    assert [d.tx_done_us for d in out] == pytest.approx([9_800, 9_900, 10_000, 10_100])


def test_pfc_xoff_then_xon_per_ingress_port_and_priority():
    tm = TrafficManager(num_queues=8)
    tm.set_queue_rate(1000, port=2)
    tm.set_pfc(ingress_port=5, priority=3, thresholds=PfcThresholds(xoff=4, xon=1))
    for i in range(4):
        tm.enqueue(i, 100, 2, 3, 5, now_us=0)
    events = tm.pfc.take_events()
    assert [(e.port, e.priority, e.pause) for e in events] == [(5, 3, True)]
    drain(tm)
    events = tm.pfc.take_events()
    assert [(e.port, e.priority, e.pause) for e in events] == [(5, 3, False)]
    assert tm.pfc.pauses_sent[(5, 3)] == 1


def test_received_pause_holds_the_queue():
    tm = TrafficManager(num_queues=8, link_rate_bps=1e9)
    tm.port(1).pause(3, quanta=1000, now_us=0)  # 512 us at 1 Gb/s
    tm.enqueue("p3", 100, 1, 3, 0, now_us=0)
    tm.enqueue("p0", 100, 1, 0, 0, now_us=0)
    out = drain(tm)
    assert [d.packet.item for d in out] == ["p0", "p3"]
    assert out[1].deq_timedelta_us == pytest.approx(512)


def test_pfc_frame_round_trip():
    frame = build_pfc_frame(bytes(6), {3: 0xFFFF, 4: 0})
    assert len(frame) == 60
    assert parse_pfc_frame(frame) == {3: 0xFFFF, 4: 0}
    assert parse_pfc_frame(bytes(60)) is None


def test_bad_configuration_is_rejected_with_a_message():
    with pytest.raises(ValueError, match="1..8"):
        TrafficManager(num_queues=9)
    with pytest.raises(ValueError, match="xon < xoff"):
        PfcThresholds(xoff=2, xon=2)
    with pytest.raises(ValueError, match=">= 0"):
        TrafficManager().set_queue_rate(-1, port=0)


def _metadata(d) -> tuple:
    return (d.packet.item, d.port, d.packet.enq_qdepth, d.deq_qdepth,
            round(d.deq_timedelta_us, 6), round(d.tx_done_us, 6))


def _stats(tm: TrafficManager) -> list:
    return [(p, q, vars(ep.stats(q))) for p, ep in sorted(tm.ports.items())
            for q in range(tm.num_queues)]


@pytest.mark.parametrize("seed", range(6))
def test_pass_through_is_what_enqueue_then_dequeue_would_do(seed):
    """softswitch run's shortcut (TrafficManager.pass_through, else enqueue) gives every
    packet the same departure, metadata and counters as a trip through the queues, with
    rates, pauses, link rates, weights, small depths and PFC thresholds in the mix."""
    import random

    rng = random.Random(seed)

    def configured() -> TrafficManager:
        tm = TrafficManager(num_queues=8)
        tm.set_queue_rate(2000, port=2, priority=0)
        tm.set_queue_depth(3, port=1, priority=1)
        tm.set_link_rate(1e9, port=3)
        tm.set_queue_weight(2, port=4, priority=2)
        tm.set_pfc(1, 5, PfcThresholds(xoff=1, xon=0))
        tm.port(1).pause(6, 500, now_us=0.0)
        return tm

    plain, short = configured(), configured()
    now = 0.0
    out_plain: list = []
    out_short: list = []
    for i in range(400):
        now += rng.choice((0.0, 1.0, 50.0, 400.0))
        port, prio, ingress = rng.randint(1, 4), rng.randint(0, 8), rng.randint(0, 2)
        size = rng.choice((64, 1500))
        plain.enqueue(i, size, port, prio, ingress, now)
        out_plain += plain.dequeue_ready(now)
        d = short.pass_through(i, size, port, prio, ingress, now)
        if d is None:
            short.enqueue(i, size, port, prio, ingress, now)
        else:
            out_short.append(d)
        out_short += short.dequeue_ready(now)
    out_plain += drain(plain, now)
    out_short += drain(short, now)
    # per port, the order on the wire; between ports the shortcut leaves first what the
    # plain trip hands out in one dequeue_ready call with packets of other ports
    def per_port(out: list) -> dict:
        return {p: [_metadata(d) for d in out if d.port == p] for p in range(1, 5)}

    assert per_port(out_short) == per_port(out_plain)
    assert len(out_short) == len(out_plain)
    assert _stats(short) == _stats(plain)
    assert short.pfc.take_events() == plain.pfc.take_events()
    assert short.queued == plain.queued == 0


@pytest.mark.parametrize("seed", range(6))
def test_pass_through_gate_never_opens_what_pass_through_refuses(seed):
    """softswitch run's native loop passes a packet when the gate
    (TrafficManager.pass_through_gate) has its priority's bit set for its egress port:
    then pass_through must pass it too, now and at any later time while only
    pass-throughs happen; and it drops one whose queue the gate says is full before the
    next departure: then enqueue must drop it. Random ports with queued packets (rates,
    weights, pauses, link rates, depths, PFC thresholds, a port-wide depth, ports created
    after the gate's time) and pass-throughs at random later times."""
    import random

    rng = random.Random(seed)
    opened = full = 0
    for _ in range(150):
        # a port's rate origin is its creation time, which may be after the gate's now
        tm = TrafficManager(num_queues=8, per_queue_depth=rng.random() < 0.8,
                            clock=lambda: rng.uniform(0, 250))
        ingress = rng.randrange(3)
        for port in range(1, 4):
            ep = tm.port(port)
            if rng.random() < 0.15:
                tm.set_link_rate(1e9, port)
            for prio in range(8):
                roll = rng.random()
                if roll < 0.15:
                    tm.set_queue_rate(rng.choice([100, 1e6]), port, prio)
                elif roll < 0.25:
                    tm.set_queue_weight(rng.randrange(1, 4), port, prio)
                elif roll < 0.3:
                    ep.queue_config(prio).capacity_bytes = 3000
                if rng.random() < 0.1:
                    tm.set_pfc(ingress, prio, PfcThresholds(5, 1))
                if rng.random() < 0.2:
                    tm.set_queue_depth(2, port, prio)
                for _ in range(rng.choice([0, 0, 0, 1, 3])):
                    tm.enqueue(object(), 100, port, prio, 0, rng.uniform(0, 50))
                if rng.random() < 0.1:
                    ep.pause(prio, rng.randrange(0, 300), rng.uniform(0, 100))
            if rng.random() < 0.3:
                tm.dequeue_ready(rng.uniform(0, 100))
        now = rng.uniform(50, 200)
        gate = tm.pass_through_gate(ingress, now)
        quiet = tm.next_event_us(now)
        for _ in range(20):
            port, prio = rng.randrange(1, 4), rng.randrange(8)
            if gate[512 + port] >> prio & 1:
                # full: enqueue drops while nothing may leave (the loop checks quiet)
                later = now + rng.uniform(0, 20)
                if quiet is None or later < quiet:
                    full += 1
                    assert tm.enqueue(object(), 100, port, prio, ingress, later) is None
            if not gate[port] >> prio & 1:
                continue
            opened += 1
            now += rng.uniform(0, 1e6 if rng.random() < 0.2 else 20)
            assert tm.pass_through(object(), 100, port, prio, ingress, now) is not None, \
                (port, prio, now)
    assert opened > 100 and full > 10
