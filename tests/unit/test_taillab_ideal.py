"""ideal-srpt (taillab.ideal): pFabric's flow-level SRPT reference. A message alone takes
exactly its unloaded time; shared links go to the shortest remaining message first; on
real scenario traffic it never beats the floor taillab.bounds proves for any schedule,
and it recomputes rates only at arrivals and completions."""

import math

import pytest

from taillab.bounds import class_floors
from taillab.ideal import schedule
from taillab.metrics import unloaded_us
from taillab.report import percentile
from taillab.roce import wire_bytes
from taillab.runner import run_cell
from taillab.scenario import load_scenario, parse_scenario
from taillab.traffic import FabricMessage

# 4 leaves x 4 hosts, host 0 a slow (2 Gb/s) receiver
FABRIC = """
name: ideal
duration_us: 1000
drain_us: 5000
seeds: [1]
slow_receivers: [{host: "0.0", rx_gbps: 2}]
traffic:
  - {name: hot_kv, senders: all, receivers: all, sizes: [1024, 262144],
     log_range: true, mean_gap_us: 1000}
"""


@pytest.fixture(scope="module")
def scenario():
    return parse_scenario(FABRIC, "ideal.yaml")


def _msgs(scenario, plan):
    """(sender, receiver, size, start) in start order -> FabricMessages."""
    return [FabricMessage("hot_kv", *scenario.qp_range_of(0, size), s, r, size, start, i)
            for i, (s, r, size, start) in enumerate(plan)]


def _unloaded(scenario, m):
    t = scenario.topology
    rates = [t.host_gbps * 1e9] * 2 if m.sender // 4 == m.receiver // 4 else \
        [t.host_gbps * 1e9, t.fabric_gbps * 1e9, t.fabric_gbps * 1e9, t.host_gbps * 1e9]
    slow = 2e9 if m.receiver == 0 else None
    return unloaded_us(m.size, t.mtu_payload, tuple(rates), t.prop_us, slow)


def _wire_us(scenario, size, gbps=10.0):
    return wire_bytes(size, scenario.topology.mtu_payload) * 8 / (gbps * 1e3)


@pytest.mark.parametrize("plan", [(5, 6, 100_000, 3.0), (5, 12, 4096, 0.0),
                                  (9, 0, 200_000, 1.0), (1, 2, 100, 0.0)],
                         ids=["same-leaf", "cross-leaf", "slow-receiver", "one-packet"])
def test_a_message_alone_takes_its_unloaded_time(scenario, plan):
    (m,) = _msgs(scenario, [plan])
    ((done_msg, done),) = schedule(scenario, [m]).completions
    assert done_msg is m
    assert done - m.start_us == pytest.approx(_unloaded(scenario, m), rel=1e-12)


def test_the_shortest_remaining_message_takes_a_shared_link_first(scenario):
    """A large block towards host 12, then a small one from another leaf to the same
    host: the small one preempts and finishes unslowed; the large one ends after both
    blocks' wire time on the shared downlink. Two equal blocks at once: one after the
    other, not side by side."""
    big, small = _msgs(scenario, [(4, 12, 200_000, 0.0), (8, 12, 8192, 50.0)])
    done = {m.msg_id: t for m, t in schedule(scenario, [big, small]).completions}
    assert done[small.msg_id] - small.start_us == pytest.approx(_unloaded(scenario, small))
    overhead = _unloaded(scenario, big) - _wire_us(scenario, big.size)
    assert done[big.msg_id] == pytest.approx(_wire_us(scenario, big.size)
                                             + _wire_us(scenario, small.size) + overhead)

    for pair in ([(4, 12, 100_000, 0.0), (8, 12, 100_000, 0.0)],     # across leaves
                 [(5, 6, 100_000, 0.0), (7, 6, 100_000, 0.0)]):      # within a leaf
        a, b = _msgs(scenario, pair)
        ends = sorted(t for _, t in schedule(scenario, [a, b]).completions)
        one = _wire_us(scenario, a.size)
        assert ends[0] == pytest.approx(_unloaded(scenario, a))
        assert ends[1] == pytest.approx(_unloaded(scenario, a) + one)


def test_a_path_gets_what_its_busiest_link_has_left(scenario):
    """Host 4 sends a small block to 12 and a large one to 13 at once; 8 sends to 13
    too. The small block takes 4's uplink whole; the large one from 8 takes 13's
    downlink; 4's large block waits for both, and never exceeds a link's rate."""
    plan = [(4, 12, 10_000, 0.0), (8, 13, 50_000, 0.0), (4, 13, 200_000, 0.0)]
    msgs = _msgs(scenario, plan)
    done = {m.msg_id: t for m, t in schedule(scenario, msgs).completions}
    assert done[0] == pytest.approx(_unloaded(scenario, msgs[0]))
    assert done[1] == pytest.approx(_unloaded(scenario, msgs[1]))
    # 13's downlink carries 8's block first, then 4's: 50 KB + 200 KB of wire time
    overhead = _unloaded(scenario, msgs[2]) - _wire_us(scenario, 200_000)
    assert done[2] == pytest.approx(_wire_us(scenario, 50_000) + _wire_us(scenario, 200_000)
                                    + overhead)


def test_never_below_the_floor_on_scenario_traffic():
    """On pd_cascade's own traffic (every class, two seeds, short), ideal-srpt's P99 and
    P999 of every class and hot KV size band lie at or above the floor: the fluid
    schedule obeys the link rates the bound assumes. It recomputes rates at most once
    per arrival, completion and the goodput checkpoint."""
    from taillab.lab_report import aggregate

    sc = load_scenario("pd_cascade").scaled(600.0, (1, 2))
    floors = class_floors(sc)
    assert {"hot_kv<=64KB", "hot_kv>64KB", "kv_migration"} <= set(floors)
    cells = [run_cell(sc, "ideal-srpt", seed) for seed in sc.seeds]
    for cell in cells:
        assert cell["completed"] == cell["messages"]
        assert cell["sim_events"] <= 2 * cell["messages"] + 1
        assert min(v for vs in cell["slowdown"].values() for v in vs) >= 1 - 1e-9
    summary = aggregate(sc, cells, floors)["ideal-srpt"]["classes"]
    for group, floor in floors.items():
        for k in ("p99", "p999"):
            assert summary[group][k]["value"] >= floor[k] - 1e-9, (group, k)
    assert any(summary[g]["p99"]["value"] > 1.01 for g in floors)   # not all trivially 1
    assert all(summary[g]["offered"] == summary[g]["messages"] for g in floors)
    assert math.isclose(summary["hot_kv"]["messages"],
                        summary["hot_kv<=64KB"]["messages"]
                        + summary["hot_kv>64KB"]["messages"])


def test_ideal_srpt_runs_in_the_moe_scenario():
    sc = load_scenario("moe").scaled(300.0, (1,))
    assert "ideal-srpt" in sc.schemes
    cell = run_cell(sc, "ideal-srpt", 1)
    assert cell["completed"] == cell["messages"] > 0
    p99 = percentile(sorted(cell["slowdown"]["moe_a2a"]), 99)
    assert p99 > 2.0         # 15 shards converge on each receiver at every dispatch
