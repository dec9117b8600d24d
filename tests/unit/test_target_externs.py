"""Counters, registers and trTCM meters with a controlled clock."""

from softswitch.core.externs import (
    GREEN,
    RED,
    YELLOW,
    Clock,
    CounterArray,
    MeterArray,
    RegisterArray,
)


def test_register_wraps_and_ignores_out_of_range():
    r = RegisterArray("r", 4, 8, signed=True)
    r.write(1, 0xFF)
    assert r.read(1) == -1
    r.write(9, 5)
    assert r.read(9) == 0


def test_counter_counts_packets_and_bytes():
    c = CounterArray("c", 2)
    c.count(1, 100)
    c.count(1, 50)
    c.count(5, 10)
    assert c.read(1) == (2, 150)


def test_meter_colours_follow_token_buckets():
    clock = Clock()
    clock.freeze(0)
    m = MeterArray("m", 1, by_packets=True, clock=clock)
    assert m.execute(0, 100) == GREEN           # unconfigured meters are green
    m.set_rates(0, [(0.001, 2), (0.002, 3)])     # 1 pkt/ms committed, 2 pkt/ms peak
    colours = [m.execute(0, 100) for _ in range(4)]
    assert colours == [GREEN, GREEN, YELLOW, RED]
    clock.advance(10_000)                        # refill both buckets
    assert m.execute(0, 100) == GREEN


def test_meter_peak_bucket_drains_on_yellow():
    clock = Clock()
    clock.freeze(0)
    m = MeterArray("m", 1, by_packets=True, clock=clock)
    m.set_rates(0, [(0.001, 1), (0.001, 5)])
    # the committed bucket empties first (YELLOW); the peak bucket still drains
    assert [m.execute(0, 1) for _ in range(7)] == [GREEN] + [YELLOW] * 4 + [RED] * 2
