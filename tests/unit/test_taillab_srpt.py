"""The lab's ``tailcc-srpt`` scheme (issue 45 point 3): tailcc-nic's NIC program and
switches under a transport that feeds the message with the fewest bytes left, also among
the messages on one connection.

Two hot KV blocks to the same decode node share one QP: under tailcc-nic the shorter,
posted second, waits for the longer (RC order); under tailcc-srpt it passes it. Each
packet still reaches the receiver and every message completes once. Where MoE runs, the
scheme's switches weight the large blocks' queue, their receivers pace them, and MoE
travels in smaller segments under thresholds scaled to match."""

import pytest

from taillab.programs import compile_tailcc
from taillab.runner import build_network
from taillab.scenario import parse_scenario
from taillab.srpt_nic import SrptHostNic
from taillab.traffic import FabricMessage

# One sender (1.0) and one decode node (3.0) on another leaf; nothing else on the wire.
SAME_PEER = """
name: same_peer
duration_us: 1000
drain_us: 1000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["1.0"], receivers: ["3.0"], sizes: [16384],
     mean_gap_us: 1000, max_messages: 1}
"""
SENDER, DECODE = 4, 12
LONG, SHORT = 200000, 8000


@pytest.fixture(scope="module")
def checked():
    return compile_tailcc()


def _run(scheme: str, checked) -> tuple[dict[int, float], object]:
    """A 200 KB block at 0 us and an 8 KB one at 10 us, one sender, one receiver, one
    QP; returns each message's completion time (by size) and the network."""
    scenario = parse_scenario(SAME_PEER, "same_peer.yaml")
    messages = [FabricMessage("hot_kv", 0, "hot_kv", SENDER, DECODE, size, start, i)
                for i, (size, start) in enumerate(((LONG, 0.0), (SHORT, 10.0)))]
    net = build_network(scenario, scheme, messages, checked)
    obs = net.run(messages)
    done = {m.size: t - m.start_us for m, t in obs.completions}
    assert sorted(done) == [SHORT, LONG]                 # each completes, once
    return done, net


def test_short_block_passes_a_long_one_to_the_same_peer(checked):
    fifo, _ = _run("tailcc-nic", checked)
    srpt, net = _run("tailcc-srpt", checked)
    assert isinstance(net.nics[SENDER], SrptHostNic)
    # in RC order the 8 KB block waits for most of the 200 KB one (~160 us at 10G)
    assert fifo[SHORT] > 100.0, fifo
    # shortest first it waits at most for the packets already in the NIC
    assert srpt[SHORT] < 15.0, srpt
    # the long block loses about the short one's transfer time, no more
    assert srpt[LONG] - fifo[LONG] < 10.0, (fifo, srpt)


def test_srpt_nic_keeps_psn_order_on_the_qp(checked):
    """Packets of both messages interleave on the QP, their PSNs in sending order."""
    _, net = _run("tailcc-srpt", checked)
    (q,) = net.nics[SENDER].qps.values()
    packets = -(-LONG // 1024) + -(-SHORT // 1024)
    assert q.psn == packets
    assert not q.messages and not net.nics[SENDER].sent


def test_switches_weight_large_blocks_against_moe_only_under_tailcc_srpt():
    """Queue 4 (large hot KV blocks alone) joins the DWRR with MoE in tailcc-srpt's
    switches where MoE runs; every other scheme, and a fabric without MoE, keeps the
    classes' weights (queue 4 strict)."""
    from taillab.classes import DWRR_WEIGHTS
    from taillab.runner import SRPT_MOE_WEIGHTS, switch_weights

    moe = ["sched_signal", "hot_kv", "hot_kv_small", "moe_a2a", "bulk"]
    cascade = ["sched_signal", "hot_kv", "hot_kv_small", "kv_migration", "bulk"]
    assert 4 not in DWRR_WEIGHTS
    assert switch_weights("tailcc-srpt", moe) == SRPT_MOE_WEIGHTS
    assert set(SRPT_MOE_WEIGHTS) == {*DWRR_WEIGHTS, 4}
    assert switch_weights("tailcc-srpt", cascade) == DWRR_WEIGHTS
    for scheme in ("tailcc", "tailcc-nic", "priority-only"):
        assert switch_weights(scheme, moe) == DWRR_WEIGHTS


# A large hot KV block from 1.0 to 3.0 beside (idle) MoE: tailcc-srpt's switches weight
# queue 4 against MoE here, and its receiver paces the block.
BLOCK_BESIDE_MOE = """
name: block_beside_moe
duration_us: 1000
drain_us: 1000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["1.0"], receivers: ["3.0"], sizes: [200000],
     mean_gap_us: 1000, max_messages: 1,
     qp_by_size: [{max_bytes: 65536, class: hot_kv_small}]}
  - {name: moe_a2a, senders: ["2.0"], receivers: ["2.1"], sizes: [4096],
     mean_gap_us: 1000, max_messages: 1}
"""


def test_receiver_paces_a_large_block_where_queue_4_is_weighted(checked):
    """At most WINDOW_BYTES of the block are in flight at any time, and the window
    still fills the link: alone, the block completes within 10% of its unloaded time.
    Without MoE (the same-peer fabric) nothing is paced."""
    from taillab.metrics import unloaded_us
    from taillab.p4nic import LARGE_BLOCK_QUEUE, NET_PORT
    from taillab.srpt_nic import MOE_NIC_LARGE_WEIGHT, WINDOW_BYTES

    scenario = parse_scenario(BLOCK_BESIDE_MOE, "block_beside_moe.yaml")
    msg = FabricMessage("hot_kv", 0, "hot_kv", SENDER, DECODE, LONG, 0.0, 0)
    net = build_network(scenario, "tailcc-srpt", [msg], checked)
    nic = net.nics[SENDER]
    assert nic.credit.enabled
    weight = nic.tm.port(NET_PORT).queue_config(LARGE_BLOCK_QUEUE).weight
    assert weight == MOE_NIC_LARGE_WEIGHT
    in_flight = []
    grant = nic.on_grant

    def on_grant(m, upto):
        in_flight.append(nic.sent.get(m.msg_id, 0) - nic.credit.received.get(m.msg_id, 0))
        grant(m, upto)
    nic.on_grant = on_grant
    obs = net.run([msg])
    ((done_msg, done),) = obs.completions
    t = scenario.topology
    alone = unloaded_us(LONG, t.mtu_payload, tuple(net.fabric.path_rates(SENDER, DECODE)),
                        t.prop_us, None)
    assert in_flight and max(in_flight) <= WINDOW_BYTES, max(in_flight)
    assert done / alone < 1.10, done / alone
    _, plain = _run("tailcc-srpt", checked)
    assert not plain.nics[SENDER].credit.enabled


def test_moe_in_smaller_segments_with_thresholds_to_match(checked):
    """Where MoE runs, tailcc-srpt's NICs cut a 4 KB shard into 768-byte segments (6
    packets, not 4) and its switches raise MoE's PFC and ECN thresholds in packets to
    match, and training bulk's PFC thresholds; tailcc-nic's lines and segments stay as
    they were."""
    from taillab.leafspine import Fabric
    from taillab.runner import moe_scale, switch_commands
    from taillab.scenario import load_scenario

    scenario = parse_scenario(BLOCK_BESIDE_MOE, "block_beside_moe.yaml")
    shard = FabricMessage("moe_a2a", 1, "moe_a2a", 8, 9, 4096, 0.0, 0)
    for scheme, packets in (("tailcc-srpt", 6), ("tailcc-nic", 4)):
        net = build_network(scenario, scheme, [shard], checked)
        obs = net.run([shard])
        assert len(obs.completions) == 1
        (q,) = net.nics[8].qps.values()
        assert q.psn == packets, scheme
    moe = load_scenario("moe")
    b = moe.buffers
    ours = switch_commands(moe, "tailcc-srpt", Fabric(moe.topology), [])("l0")
    theirs = switch_commands(moe, "tailcc-nic", Fabric(moe.topology), [])("l0")
    assert moe_scale("tailcc-srpt", moe.qp_ranges()) == (3, 2)
    assert moe_scale("tailcc-nic", moe.qp_ranges()) is None
    assert f"set_pfc 0 3 {3 * b.pfc_xoff_pkts} {3 * b.pfc_xon_pkts}" in ours
    assert f"set_pfc 0 3 {b.pfc_xoff_pkts} {b.pfc_xon_pkts}" in theirs
    assert f"set_pfc 0 1 {2 * b.pfc_xoff_pkts} {2 * b.pfc_xon_pkts}" in ours     # bulk
    assert f"set_pfc 0 1 {b.pfc_xoff_pkts} {b.pfc_xon_pkts}" in theirs
    assert any("queue:3&&&0x7" in line and "kmin_pkts:128, kmax_pkts:256" in line
               for line in ours)
    assert any("queue:3&&&0x7" in line and "kmin_pkts:64, kmax_pkts:128" in line
               for line in theirs)


# Hot KV split by size and no MoE (pd_cascade's classes): queue 4 holds the large blocks
# alone, strict in the switches; tailcc-srpt's receivers grant them shortest first.
SPLIT_NO_MOE = """
name: split_no_moe
duration_us: 1000
drain_us: 2000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["0.0", "1.0", "2.0"], receivers: ["3.0"], sizes: [200000],
     mean_gap_us: 1000, max_messages: 1,
     qp_by_size: [{max_bytes: 65536, class: hot_kv_small}]}
"""
CONVERGING = ((0, 200000, 0.0), (4, 180000, 10.0), (8, 100000, 20.0))


def _converge(scheme: str, checked) -> tuple[dict[int, float], object]:
    """Three large blocks from three senders to one decode node, the shortest last;
    returns each one's completion time (by size) and the network."""
    scenario = parse_scenario(SPLIT_NO_MOE, "split_no_moe.yaml")
    messages = [FabricMessage("hot_kv", 0, "hot_kv", sender, DECODE, size, start, i)
                for i, (sender, size, start) in enumerate(CONVERGING)]
    net = build_network(scenario, scheme, messages, checked)
    obs = net.run(messages)
    done = {m.size: t - m.start_us for m, t in obs.completions}
    assert sorted(done) == sorted(size for _, size, _ in CONVERGING)
    return done, net


def test_receiver_grants_converging_large_blocks_shortest_first(checked):
    """Where queue 4 is strict (no MoE), the decode node grants its SRPT_GRANTS blocks
    with the fewest bytes left: the 100 KB block, posted last, shares the link with one
    block, not two, and completes well before it would sharing three ways (tailcc-nic);
    the longest block waits and completes last, within 5% of its time sharing."""
    from taillab.srpt_nic import SRPT_GRANTS, strict_large_blocks

    scenario = parse_scenario(SPLIT_NO_MOE, "split_no_moe.yaml")
    assert SRPT_GRANTS == 2 and strict_large_blocks(scenario.qp_ranges())
    shared, _ = _converge("tailcc-nic", checked)
    granted, net = _converge("tailcc-srpt", checked)
    credit = net.nics[0].credit
    assert credit.enabled and credit.overcommit == SRPT_GRANTS
    assert granted[100000] < 0.85 * shared[100000], (shared, granted)
    finished = {size: granted[size] + start for _, size, start in CONVERGING}
    assert finished[100000] < finished[180000] < finished[200000], finished
    assert granted[200000] <= shared[200000] * 1.05, (shared, granted)
    assert not credit.allowed and not credit.granted and not any(credit.inbound.values())


def test_nic_favours_large_blocks_only_where_queue_4_is_strict():
    """tailcc-srpt's NIC weights queue 4 at LARGE_NIC_WEIGHT against the elephants only
    where the large blocks are alone in queue 4 and no MoE runs."""
    from taillab.srpt_nic import strict_large_blocks

    cascade = ["sched_signal", "hot_kv", "hot_kv_small", "kv_migration", "bulk"]
    assert strict_large_blocks(cascade)
    assert not strict_large_blocks(["sched_signal", "hot_kv", "hot_kv_small", "moe_a2a"])
    assert not strict_large_blocks(["sched_signal", "hot_kv", "kv_migration"])
