"""Reconciliation against live softswitch P4Runtime servers: the first apply loads the
pipeline and writes everything, a second apply writes nothing, an edited intent writes
exactly the difference, foreign entries in managed tables are removed (others are left
alone), and one unreachable switch does not block the rest."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from intents import forwarding

from controlplane.intent import parse_intent_text
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.client import update
from controlplane.p4rt.describe import entity_text
from controlplane.p4rt.entities import to_entity
from controlplane.reconcile import load_pipeline, reconcile_all
from softswitch.v1model.fast_switch import load_switch_file

ROOT = Path(__file__).resolve().parents[1]

INTENT = """
base: default
switches:
  - name: leaf
    address: {address}
    device_id: 1
    switch_id: 7
    router_mac: "00:aa:00:00:00:01"
    ports: [{{port: 1, scheduler: default, tenant: tenant-a}}, {{port: 2}}]
""" + forwarding([("h1", 1, "00:00:00:00:01:01"), ("h2", 2, "00:00:00:00:01:02")],
               [("10.0.1.1/32", "h1"), ("10.0.1.2/32", "h2")]) + """tenants:
  - name: tenant-a
    vrf: 1
    default: deny
    rules:
      - {{src: 10.1.1.1/32, dst: 10.1.2.2/32, action: allow}}
"""


@pytest.fixture(scope="module")
def pipeline():
    return load_pipeline(None, str(ROOT / "p4src/tailcc.p4"))


@pytest.fixture()
def servers():
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    started = [serve(Device(device_id=1, cpu_port=255), "127.0.0.1:0") for _ in range(2)]
    yield [f"127.0.0.1:{port}" for _, port in started]
    for srv, _ in started:
        srv.stop(0).wait()


def _intent(address: str):
    return parse_intent_text(INTENT.format(address=address), "t.yaml")


def _counts(result) -> dict[str, int]:
    assert result.error is None, result.error
    return result.plan.counts()


def test_apply_is_idempotent_and_writes_only_the_difference(servers, pipeline) -> None:
    address = servers[0]
    intent = _intent(address)
    [dry] = reconcile_all(intent, pipeline, dry_run=True)
    assert _counts(dry)["INSERT"] > 20 and "pipeline would be" in dry.notes[0]

    [first] = reconcile_all(intent, pipeline)
    counts = _counts(first)
    assert first.pipeline_loaded and first.written == sum(counts.values())
    [second] = reconcile_all(intent, pipeline)
    assert _counts(second) == {"INSERT": 0, "MODIFY": 0, "DELETE": 0}
    assert second.written == 0 and not second.pipeline_loaded

    # edit: one route changes next hop, one disappears, one is new; a class moves queue
    edited = INTENT.replace("{{prefix: 10.0.1.2/32, next_hop: h2}}",
                            "{{prefix: 10.0.1.9/32, next_hop: h1}}")
    edited = edited.replace("{{prefix: 10.0.1.1/32, next_hop: h1}}",
                            "{{prefix: 10.0.1.1/32, next_hop: h2}}")
    intent2 = parse_intent_text(edited.format(address=address), "t2.yaml")
    [third] = reconcile_all(intent2, pipeline, dry_run=True)
    lines = [(c.kind, entity_text(third.index, c.entity)) for c in third.plan.changes]
    assert sorted(k for k, _ in lines) == ["DELETE", "INSERT", "MODIFY"]
    assert any(k == "DELETE" and "10.0.1.2/32" in t for k, t in lines)
    assert any(k == "INSERT" and "10.0.1.9/32" in t for k, t in lines)
    assert any(k == "MODIFY" and "10.0.1.1/32" in t and "port=2" in t for k, t in lines)
    [fourth] = reconcile_all(intent2, pipeline)
    assert fourth.written == 3
    assert _counts(reconcile_all(intent2, pipeline)[0]) == {"INSERT": 0, "MODIFY": 0,
                                                            "DELETE": 0}


def test_foreign_entries_in_managed_tables_are_removed(servers, pipeline) -> None:
    address = servers[0]
    intent = _intent(address)
    reconcile_all(intent, pipeline)
    index = P4InfoIndex(pipeline.p4info)
    b = EntityBuilder(index)
    stray = b.table_entry("routing_v4", match={"vrf": 0, "ipv4_dst": "10.66.0.0/16"},
                          action="drop")
    l2 = b.table_entry("l2_exact", match={"eth_dst": "00:00:00:00:00:66"},
                       action="l2_forward", params={"port": 2})
    learned = b.table_entry("cnp_flow", match={"ipv4_src": "10.0.0.1", "ipv4_dst":
                                               "10.0.0.2", "dst_qp": 17},
                            action="set_sender_qp", params={"sender_qp": 33,
                                                            "flow_index": 5})
    with Client(address, 1, election_id=99) as c:
        c.write([update("INSERT", stray), update("INSERT", l2), update("INSERT", learned)])
    [result] = reconcile_all(intent, pipeline)
    changes = [(c.kind, entity_text(result.index, c.entity)) for c in result.plan.changes]
    assert changes == [("DELETE", entity_text(index, to_entity(stray)))]
    with Client(address, 1, election_id=100) as c:
        left = [entity_text(index, e) for e in c.read([b.table_wildcard("l2_exact"),
                                                       b.table_wildcard("cnp_flow")])]
    assert len(left) == 2      # l2_exact is not the intent's; learned QP flows survive


def test_one_unreachable_switch_does_not_block_the_others(servers, pipeline) -> None:
    text = INTENT.format(address=servers[0])
    intent = parse_intent_text(text.replace(
        "switches:\n",
        "switches:\n  - {name: dead, address: '127.0.0.1:1', device_id: 1}\n", 1), "t.yaml")
    start = time.monotonic()
    dead, leaf = reconcile_all(intent, pipeline, timeout=2.0)
    assert dead.error and "no P4Runtime server answers" in dead.error
    assert leaf.error is None and leaf.written > 20
    assert time.monotonic() - start < 15


def test_two_switches_in_parallel(servers, pipeline) -> None:
    text = INTENT.format(address=servers[0])
    second = text.split("switches:\n", 1)[1].split("tenants:")[0]
    second = second.replace("name: leaf", "name: leaf2").replace(servers[0], servers[1])
    intent = parse_intent_text(text.replace("tenants:", second + "tenants:", 1), "t.yaml")
    results = reconcile_all(intent, pipeline)
    assert [r.switch for r in results] == ["leaf", "leaf2"]
    assert all(r.error is None and r.written > 20 for r in results)


def test_missing_pipeline_is_reported(servers) -> None:
    [result] = reconcile_all(_intent(servers[0]), None)
    assert result.error == "no pipeline is loaded on the device; pass --pipeline"


def test_queue_settings_reach_the_traffic_manager(servers, pipeline) -> None:
    """runtime_address: weights, rates and link rates go to softswitch's runtime channel."""
    from softswitch.daemon.cli_channel.commands import RuntimeChannel, RuntimeChannelServer
    from softswitch.tm import TrafficManager

    tm = TrafficManager(num_queues=8)
    channel = RuntimeChannelServer(RuntimeChannel(load_switch_file(
        ROOT / "p4src/samples/l3_basic.p4"), tm), port=0).start()
    try:
        runtime = f"{channel.address[0]}:{channel.address[1]}"
        text = INTENT.format(address=servers[0]).replace(
            "    switch_id: 7\n", f"    switch_id: 7\n    runtime_address: {runtime}\n").replace(
            "{port: 1, scheduler: default, tenant: tenant-a}",
            "{port: 1, scheduler: default, tenant: tenant-a, speed_gbps: 100}")
        intent = parse_intent_text(text, "t.yaml")
        [result] = reconcile_all(intent, pipeline)
        assert result.error is None, result.error
        # link rate, 8 weights, 1 queue rate, PFC on/off for 8 priorities
        assert result.tm_commands == 1 + 8 + 1 + 8
        port = tm.port(1)
        assert [port.queue_config(q).weight for q in range(8)] == [20, 5, 15, 30, 50, 0, 0, 0]
        assert port.queue_config(5).rate_pps == 200000
        assert port.link_rate_bps == 100e9
        # PFC only on the lossless classes' queues (hot KV 5, TP/PP + MoE 4, storage 3)
        assert {k: (t.xoff, t.xon) for k, t in tm.pfc.thresholds.items()} == {
            (1, 5): (48, 32), (1, 4): (48, 32), (1, 3): (48, 32)}
    finally:
        channel.stop()
    # an unreachable channel is this switch's error, reported, not raised
    [broken] = reconcile_all(intent, pipeline)
    assert broken.error and "runtime channel" in broken.error
