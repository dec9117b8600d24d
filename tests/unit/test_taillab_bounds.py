"""Slowdown floors (taillab.bounds): what the offered traffic alone forces on any
scheduler. Exact on cases worked by hand, never above what the lab measures."""

import math

import pytest

from taillab.bounds import allowed_above, jobs_of, late_lower_bound, percentile_floor
from taillab.metrics import unloaded_us
from taillab.roce import ETH_IP_UDP_BTH_ICRC
from taillab.scenario import parse_scenario
from taillab.traffic import FabricMessage

# 4 leaves x 4 hosts; hosts 4, 5 on leaf 1, 8 on leaf 2, 12 and 13 on leaf 3
FABRIC = """
name: bounds
duration_us: 1000
drain_us: 2000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["1.0", "1.1", "2.0"], receivers: ["3.0", "3.1"],
     sizes: [4096, 200000], mean_gap_us: 1000, max_messages: 1}
"""
SIZE = 200000


@pytest.fixture(scope="module")
def scenario():
    return parse_scenario(FABRIC, "bounds.yaml")


def _messages(scenario, plan):
    """(sender, receiver, size, start) -> the scenario's FabricMessages."""
    return [FabricMessage("hot_kv", *scenario.qp_range_of(0, size), sender, receiver, size,
                          start, i)
            for i, (sender, receiver, size, start) in enumerate(plan)]


def _two_at_once_floor(scenario) -> float:
    """Two equal blocks that start together and share one 10G host link: the later one
    ends no earlier than both blocks' wire time, i.e. at 2 x wire / unloaded."""
    t = scenario.topology
    wire_us = (SIZE + math.ceil(SIZE / t.mtu_payload) * ETH_IP_UDP_BTH_ICRC) * 8 / (
        t.host_gbps * 1e3)
    base = unloaded_us(SIZE, t.mtu_payload, (t.host_gbps * 1e9, t.fabric_gbps * 1e9,
                                             t.fabric_gbps * 1e9, t.host_gbps * 1e9),
                       t.prop_us, None)
    return 2 * wire_us / base


@pytest.mark.parametrize("plan", [
    ((4, 12, SIZE, 0.0), (8, 12, SIZE, 0.0)),      # two senders, one receiver's downlink
    ((4, 12, SIZE, 0.0), (4, 13, SIZE, 0.0)),      # one sender's uplink, two receivers
], ids=["downlink", "uplink"])
def test_two_blocks_sharing_a_host_link(scenario, plan):
    jobs = jobs_of(scenario, _messages(scenario, plan))
    expected = _two_at_once_floor(scenario)
    assert 1.5 < expected < 2.0
    assert late_lower_bound(jobs, expected * 0.999) == 1
    assert late_lower_bound(jobs, expected * 1.001) == 0
    assert percentile_floor([jobs], 100.0) == pytest.approx(expected, rel=1e-3)
    assert percentile_floor([jobs], 50.0) == 1.0      # the first may finish unloaded


def test_blocks_that_share_no_host_link_force_nothing(scenario):
    jobs = jobs_of(scenario, _messages(scenario, ((4, 12, SIZE, 0.0), (8, 13, SIZE, 0.0))))
    assert late_lower_bound(jobs, 1.0) == 0
    assert percentile_floor([jobs], 100.0) == 1.0


def test_disjoint_windows_add_up_over_seeds_and_time(scenario):
    pair = ((4, 12, SIZE, 0.0), (8, 12, SIZE, 0.0))
    later = tuple((s, r, z, t + 5000.0) for s, r, z, t in pair)
    jobs = jobs_of(scenario, _messages(scenario, pair + later))
    assert late_lower_bound(jobs, 1.5) == 2             # two separate collisions
    one = jobs_of(scenario, _messages(scenario, pair))
    # pooled over two seeds, 2 of 4 must be late: P50 (rank 2, 2 allowed above) is not
    # forced, P75 (1 allowed above) is
    assert allowed_above(4, 50.0) == 2 and allowed_above(4, 75.0) == 1
    assert percentile_floor([one, one], 50.0) == 1.0
    assert percentile_floor([one, one], 75.0) == pytest.approx(_two_at_once_floor(scenario),
                                                              rel=1e-3)


def test_floor_never_above_what_the_lab_measures(scenario):
    """The bound holds for any schedule, so for the lab's: on three blocks converging on
    one decode node, every scheme's worst slowdown is at or above the floor of the
    maximum, and that floor is well above 1."""
    from taillab.programs import compile_tailcc
    from taillab.runner import build_network

    plan = ((4, 12, SIZE, 0.0), (5, 12, SIZE + 1, 0.0), (8, 12, 4096, 20.0))
    messages = _messages(scenario, plan)
    floor = percentile_floor([jobs_of(scenario, messages)], 100.0)
    assert floor > 1.5
    t = scenario.topology
    checked = compile_tailcc()
    for scheme in ("baseline", "tailcc"):
        net = build_network(scenario, scheme, messages, checked)
        obs = net.run(messages)
        worst = max((done - m.start_us) / unloaded_us(
            m.size, t.mtu_payload, tuple(net.fabric.path_rates(m.sender, m.receiver)),
            t.prop_us, None) for m, done in obs.completions)
        assert worst >= floor, (scheme, worst, floor)
