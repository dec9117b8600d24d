"""The lab's own models: packet bytes equal scapy's, DCQCN reacts as BRIEF §4 says."""

import pytest
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from taillab.dcqcn import NotificationPoint, ReactionPoint
from taillab.report import percentile, summarise
from taillab.roce import RoceFlowAddr, build_roce, parse_roce
from taillab.workload import generate

ADDR = RoceFlowAddr("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.1.1",
                    50000, 0x10101)


def test_roce_bytes_equal_scapy():
    ours = build_roce(ADDR, 0x0A, psn=77, payload_len=100, dscp=26, ecn=2, becn=True)
    ref = (Ether(dst=ADDR.dst_mac, src=ADDR.src_mac)
           / IP(src=ADDR.src_ip, dst=ADDR.dst_ip, tos=26 << 2 | 2, flags="DF", id=0, ttl=64)
           / UDP(sport=50000, dport=4791, chksum=0)
           / BTH(opcode=0x0A, pkey=0xFFFF, becn=1, dqpn=0x10101, psn=77, icrc=0)
           / (b"\0" * 100))
    built = bytes(ref)
    # scapy places the ICRC after the payload only when it computes it; compare headers
    # and the payload, then the total length.
    assert ours[:14 + 20 + 8 + 12] == built[:14 + 20 + 8 + 12]
    assert len(ours) == 14 + 20 + 8 + 12 + 100 + 4


def test_parse_roce_round_trip():
    view = parse_roce(build_roce(ADDR, 0x81, 0, 16, 48, 0, becn=True))
    assert (view.opcode, view.dest_qp, view.dscp, view.ecn, view.becn) == (0x81, 0x10101, 48,
                                                                           0, True)
    assert parse_roce(b"\0" * 20) is None


def test_dcqcn_cut_and_recovery():
    rp = ReactionPoint(line_rate=10e9)
    rp.on_cnp(0.0)
    assert rp.current == pytest.approx(5e9)           # alpha starts at 1: halve
    assert rp.target == pytest.approx(10e9)
    rp.on_sent(1000, 55.0 * 5)                        # five timer periods: fast recovery
    assert 5e9 < rp.current < 10e9


def test_notification_point_rate_limits_per_qp():
    np_ = NotificationPoint()
    assert np_.on_ce(1, 0.0) and not np_.on_ce(1, 10.0) and np_.on_ce(2, 10.0)
    assert np_.on_ce(1, 50.0)


def test_percentile_nearest_rank_and_summary():
    v = list(range(1, 1001))
    assert percentile(v, 50) == 500 and percentile(v, 99.9) == 999
    (row,) = summarise({"x": [float(i) for i in v]})
    assert row.tail_ratio == pytest.approx(990 / 500)


def test_workload_is_seeded_and_ordered():
    a, b = generate(2000.0, seed=3), generate(2000.0, seed=3)
    assert [m.start_us for m in a] == [m.start_us for m in b]
    assert all(x.start_us <= y.start_us for x, y in zip(a, a[1:], strict=False))
    assert {m.cls for m in a} == {"sched_signal", "hot_kv", "moe_a2a", "bulk"}


def test_verdict_without_elephant_bytes_skips_goodput():
    """A short run (a low point of a load sweep) may deliver no elephant byte: the
    goodput target is left out instead of dividing by zero."""
    from taillab.lab_report import verdict

    cls = {"role": "sched_signal", "mouse": True, "p99": {"value": 1.2},
           "p999": {"value": 1.4}}
    side = {"classes": {"sched_signal": cls}, "elephant_goodput_gbps": 0.0,
            "pfc_paused_us": 0.0}
    rows = verdict({"baseline": side, "tailcc": side})
    assert rows and not any("goodput" in what for what, _, _ in rows)


def test_a_missed_mouse_target_says_whether_any_scheduler_could_meet_it():
    from taillab.lab_report import verdict

    def side(p99, p999):
        cls = {"role": "hot_kv", "mouse": True, "p99": {"value": p99},
               "p999": {"value": p999}}
        return {"classes": {"hot_kv": cls}, "elephant_goodput_gbps": 0.0,
                "pfc_paused_us": 0.0}

    def mouse_row(floors):
        rows = verdict({"baseline": side(9.0, 20.0), "tailcc": side(2.2, 3.1)}, floors)
        return next(r for r in rows if r[0].startswith("tailcc hot_kv P99 <="))

    _, ok, text = mouse_row({"hot_kv": {"p99": 1.6, "p999": 2.3}})
    assert not ok and "out of reach for any scheduler" in text
    assert "P99 1.600" in text and "P999 2.300" in text
    _, ok, text = mouse_row({"hot_kv": {"p99": 1.2, "p999": 1.7}})
    assert not ok and "within reach" in text
    _, ok, text = mouse_row(None)
    assert not ok and "reach" not in text


def test_a_banded_class_is_judged_by_its_small_band_and_against_its_floor():
    """Hot KV by size band: the <= 64 KB band gets the mouse target; the class as a whole
    is judged against its floor, or against ideal-srpt where that lies above 1.10x the
    floor; the baseline's 3x is asked of the whole class."""
    from taillab.lab_report import verdict

    def cls(p99, p999, band_of=None):
        c = {"role": "hot_kv", "mouse": True, "p99": {"value": p99}, "p999": {"value": p999}}
        return c | ({"band_of": band_of} if band_of else {})

    def side(whole, small, large):
        return {"classes": {"hot_kv": cls(*whole), "hot_kv<=64KB": cls(*small, "hot_kv"),
                            "hot_kv>64KB": cls(*large, "hot_kv")},
                "elephant_goodput_gbps": 0.0, "pfc_paused_us": 0.0}

    floors = {"hot_kv": {"p99": 1.5, "p999": 2.0}}
    summary = {"baseline": side((9.0, 20.0), (9.0, 20.0), (9.0, 20.0)),
               "tailcc": side((1.7, 2.4), (1.4, 1.9), (1.7, 2.4))}
    rows = {what: (ok, fig) for what, ok, fig in verdict(summary, floors)}
    assert rows["tailcc hot_kv<=64KB P99 <= 1.5, P999 <= 2.0"][0]
    assert "tailcc hot_kv P99 <= 1.5, P999 <= 2.0" not in rows
    assert not any(w.startswith("tailcc hot_kv>64KB P99 <=") for w in rows)
    assert rows["tailcc hot_kv P99 <= 1.15x the floor"] == (True, "1.70 = 1.133x floor 1.50")
    assert rows["tailcc hot_kv P999 <= 1.15x the floor"][0] is False
    assert rows["baseline hot_kv P99 >= 3x tailcc's"][0]
    # ideal-srpt well above the floor: the class is held to ideal-srpt instead
    summary["ideal-srpt"] = side((1.7, 2.3), (1.1, 1.2), (1.7, 2.3))
    rows = {what: (ok, fig) for what, ok, fig in verdict(summary, floors)}
    key = "tailcc hot_kv P999 <= 1.05x ideal-srpt's (ideal-srpt above 1.1x the floor)"
    assert rows[key][0] and "1.043x ideal-srpt 2.30 (floor 2.00)" in rows[key][1]
