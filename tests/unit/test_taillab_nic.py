"""The lab's NIC+switch scheme (``tailcc-nic``, issue 14): every host NIC runs
p4src/nic/tailcc_nic.p4 on softswitch's PNA target with per-class transmit queues.

A hot KV block and a scheduling signal posted behind their own host's bulk leave the
NIC ahead of it (the class-blind NIC of the other schemes interleaves them with the
bulk, packet by packet); the program stamps each class's DSCP and ECT(0) and sees
every packet; a cascade cell runs on the same offered traffic as the other schemes."""

from dataclasses import replace

import pytest

from taillab.p4nic import CLASS_DSCP, CLASS_ID, P4HostNic
from taillab.programs import compile_tailcc
from taillab.roce import ECN_ECT0, parse_roce
from taillab.runner import build_network, run_cell
from taillab.scenario import load_scenario, parse_scenario
from taillab.traffic import FabricMessage

# One sender (1.0) with a 1 MB bulk transfer to 2.0; 100 us later it posts a 16 KB hot
# KV block and a 300 B signal to other hosts. Different leaves downstream, a 20G
# uplink: the only place they can meet the bulk is the sender's own 10G NIC.
HOST_BULK = """
name: host_bulk
duration_us: 2000
drain_us: 1000
seeds: [1]
traffic:
  - {name: bulk, senders: ["1.0"], receivers: ["2.0"], sizes: [1048576],
     mean_gap_us: 1000, max_messages: 1, elephant: true}
  - {name: hot_kv, senders: ["1.0"], receivers: ["3.0"], sizes: [16384],
     mean_gap_us: 1000, max_messages: 1}
  - {name: sched_signal, senders: ["1.0"], receivers: ["3.1"], sizes: [300],
     mean_gap_us: 1000, max_messages: 1}
"""


@pytest.fixture(scope="module")
def checked():
    return compile_tailcc()


def _host_bulk_run(scheme: str, checked):
    """The messages above at fixed times through the scheme's network; returns the
    network, the slowdown per class and what reached the receivers."""

    scenario = parse_scenario(HOST_BULK, "host_bulk.yaml")
    sender = 4                                             # "1.0" (4 hosts per leaf)
    dst = {"bulk": 8, "hot_kv": 12, "sched_signal": 13}
    size = {"bulk": 1 << 20, "hot_kv": 16384, "sched_signal": 300}
    start = {"bulk": 0.0, "hot_kv": 100.0, "sched_signal": 100.0}
    messages = [FabricMessage(t.name, i, t.role, sender, dst[t.name], size[t.name],
                              start[t.name], i, t.elephant)
                for i, t in enumerate(scenario.traffic)]
    net = build_network(scenario, scheme, messages, checked)
    received: dict[int, list[bytes]] = {12: [], 13: []}
    for host, got in received.items():
        nic = net.nics[host]
        deliver = nic.on_packet
        nic.on_packet = lambda data, deliver=deliver, got=got: (got.append(data),
                                                                deliver(data))
    obs = net.run(messages)
    slowdown = _slowdowns(scenario, net, obs, lambda m: m.cls)
    return net, slowdown, received


def test_urgent_messages_overtake_their_hosts_bulk_at_the_nic(checked):
    blind_net, blind, _ = _host_bulk_run("tailcc", checked)
    net, ours, received = _host_bulk_run("tailcc-nic", checked)
    assert set(blind) == set(ours) == {"bulk", "hot_kv", "sched_signal"}
    # class-blind: the block takes turns with the bulk packet by packet (about 2x)
    assert blind["hot_kv"] > 1.6, blind
    # per-class transmit queues: at most one bulk packet already on the wire ahead
    assert ours["hot_kv"] < 1.1 and ours["sched_signal"] < 1.6, ours
    assert ours["bulk"] == pytest.approx(blind["bulk"], rel=0.02)
    nic = net.nics[4]
    assert isinstance(nic, P4HostNic)
    assert nic.pipeline_packets == 1024 + 16 + 1        # every packet through the program
    # what the program stamped: the class's DSCP and ECT(0) (the host posts DSCP 0,
    # Not-ECT); its per-class counters (direction 0: to the network) saw each class
    for host, cls in ((12, "hot_kv"), (13, "sched_signal")):
        marks = {(v.dscp, v.ecn) for d in received[host] if (v := parse_roce(d))}
        assert marks == {(CLASS_DSCP[cls], ECN_ECT0)}, cls
    for cls, n in (("bulk", 1024), ("hot_kv", 16), ("sched_signal", 1)):
        assert nic.nic.counter_read("class_packets", CLASS_ID[cls])[0] == n, cls


def test_nic_scheme_on_identical_offered_traffic(checked):
    scenario = replace(load_scenario("pd_cascade").scaled(600.0, (1,)), drain_us=1500.0)
    switch_only = run_cell(scenario, "tailcc", 1, checked=checked)
    ours = run_cell(scenario, "tailcc-nic", 1, checked=checked)
    assert ours["offered"] == switch_only["offered"]
    assert ours["messages"] == switch_only["messages"]
    assert ours["completed"] > 0.9 * ours["messages"]
    assert ours["nic_program_packets"] > 0 == switch_only["nic_program_packets"]
    assert ours["cnps"].get("switch", 0) > 0             # Fast CNPs, through the program


def _slowdowns(scenario, net, obs, key):
    """Each completed message's completion time over its unloaded time, by ``key``."""
    from taillab.metrics import unloaded_us

    t = scenario.topology
    return {key(m): (done - m.start_us) / unloaded_us(
        m.size, t.mtu_payload, tuple(net.fabric.path_rates(m.sender, m.receiver)),
        t.prop_us, None) for m, done in obs.completions}



def test_nic_feeds_shortest_remaining_block_first(checked):
    """One host posts a 200 KB hot KV block, and 10 us later a 100 KB one to another
    decode node (different leaves, nothing else on the wire): taking turns packet by
    packet, the second would take about twice its time; fed shortest remaining first,
    it passes the first, which loses only the second's transfer time."""

    scenario = parse_scenario(HOST_BULK, "host_bulk.yaml")
    hot = next(i for i, t in enumerate(scenario.traffic) if t.name == "hot_kv")
    messages = [FabricMessage("hot_kv", hot, "hot_kv", 4, dst, size, start, i)
                for i, (dst, size, start) in enumerate(((8, 200000, 0.0),
                                                        (12, 100000, 10.0)))]
    net = build_network(scenario, "tailcc-nic", messages, checked)
    obs = net.run(messages)
    slowdown = _slowdowns(scenario, net, obs, lambda m: m.size)
    assert slowdown[100000] < 1.1, slowdown
    assert 1.3 < slowdown[200000] < 1.6, slowdown


# One sender (1.0): a 256 KB hot KV block (above the 64 KB split: queue 4) to 2.0, and
# 20 us later a 4 KB MoE shard to 3.0 (another leaf, nothing else on the wire).
HOT_KV_MOE = """
name: hot_kv_moe
duration_us: 1000
drain_us: 1000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["1.0"], receivers: ["2.0"], sizes: [262144],
     mean_gap_us: 1000, max_messages: 1,
     qp_by_size: [{max_bytes: 65536, class: hot_kv_small}]}
  - {name: moe_a2a, senders: ["1.0"], receivers: ["3.0"], sizes: [4096],
     mean_gap_us: 1000, max_messages: 1}
"""


def test_nic_large_hot_kv_block_does_not_hold_a_moe_dispatch(checked):
    """A large hot KV block in a strict NIC queue held its host's link for its whole
    transfer (~210 us at 10G) and the MoE shard posted behind it waited all that time
    at the sender (moe.yaml: dispatches piled up and paused the spines). At the NIC the
    large-block queue shares by DWRR, MoE taking 3/4 of the link: the shard leaves at
    once, and the block loses only about the shard's transfer time."""

    scenario = parse_scenario(HOT_KV_MOE, "hot_kv_moe.yaml")
    roles = {t.name: t for t in scenario.traffic}
    messages = [FabricMessage("hot_kv", 0, "hot_kv", 4, 8, 262144, 0.0, 0),
                FabricMessage("moe_a2a", 1, roles["moe_a2a"].role, 4, 12, 4096, 20.0, 1)]
    net = build_network(scenario, "tailcc-nic", messages, checked)
    obs = net.run(messages)
    slowdown = _slowdowns(scenario, net, obs, lambda m: m.cls)
    assert set(slowdown) == {"hot_kv", "moe_a2a"}
    assert obs.first_tx_us[1] - 20.0 < 10.0, obs.first_tx_us     # strict: ~190 us
    assert slowdown["moe_a2a"] < 1.6, slowdown                    # strict: ~20x
    assert slowdown["hot_kv"] < 1.05, slowdown
