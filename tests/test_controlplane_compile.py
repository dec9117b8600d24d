"""Intent -> tailcc.p4 entities: ternary expansion, the default profile's entries, and
the write order of a reconcile plan (members, groups, then the routes that use them)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from controlplane.compile import compile_switch
from controlplane.compile.ternary import range_to_ternary
from controlplane.intent import load_intent, parse_intent_text
from controlplane.p4rt import P4InfoIndex
from controlplane.p4rt.describe import entity_text
from controlplane.reconcile.diff import diff
from softswitch.frontend.compiler import compile_program
from softswitch.p4info import generate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tailcc() -> P4InfoIndex:
    return P4InfoIndex(generate(compile_program(str(ROOT / "p4src/tailcc.p4"))))


@pytest.mark.parametrize("width", [1, 3, 6])
def test_range_to_ternary_covers_exactly_the_range(width: int) -> None:
    top = (1 << width) - 1
    for low, high in itertools.combinations_with_replacement(range(top + 1), 2):
        pairs = range_to_ternary(low, high, width)
        covered = [v for v in range(top + 1) if any(v & m == val for val, m in pairs)]
        assert covered == list(range(low, high + 1)), (low, high, pairs)
        # blocks never overlap, so the count is the sum of block sizes
        assert sum(1 << (width - bin(m).count("1")) for _, m in pairs) == high - low + 1


def test_range_to_ternary_is_minimal_for_aligned_blocks() -> None:
    assert range_to_ternary(8, 15, 6) == [(8, 0x38)]
    assert range_to_ternary(0, 63, 6) == [(0, 0)]
    assert len(range_to_ternary(1, 6, 3)) == 4       # 1, 2-3, 4-5, 6


def _texts(index: P4InfoIndex, entities) -> list[str]:
    return [entity_text(index, e) for e in entities]


def _compiled_texts(intent_text: str, index: P4InfoIndex) -> list[str]:
    """The entries the intent's first switch compiles to, as text."""
    intent = parse_intent_text(intent_text)
    return _texts(index, compile_switch(intent, intent.switches[0], index).entities)


def test_default_profile_compiles_to_the_documented_entries(tailcc: P4InfoIndex) -> None:
    intent = load_intent(ROOT / "controlplane/examples/two_leaf.yaml")
    state = compile_switch(intent, intent.switch("leaf1"), tailcc)
    texts = _texts(tailcc, state.entities)
    classes = [t for t in texts if "classify.traffic_class" in t]
    assert len(classes) == 11          # 10 classes with rules, cnp has 2
    assert ("TailccIngress.classify.traffic_class dscp=56&&&0x3f priority=110 -> "
            "TailccIngress.classify.set_class(tc=10, queue=7, ecn_profile=5)") in classes
    hot = next(t for t in classes if "tc=8," in t)
    assert "is_roce=1&&&0x1" in hot and "bth_opcode=6..11" in hot and "l4_dport=4791..4791" in hot
    ecn = [t for t in texts if "set_ecn_profile" in t]
    assert any("ecn_profile=1&&&0xf" in t and "kmin_pkts=2, kmax_pkts=8, pmax_1024=512" in t
               for t in ecn)
    assert any("drop_not_ect_enable=1, drop_threshold_pkts=48" in t for t in ecn)
    # Fast CNP: one policy per lossless class, one clone session to the recirculation port
    policies = [t for t in texts if "fast_cnp_policy" in t]
    assert sorted(int(t.split("traffic_class=")[1].split("&")[0]) for t in policies) == \
        [4, 5, 6, 8]
    assert "clone session 1024 -> [510] cos=0" in texts
    assert sum(t.startswith("clone session") for t in texts) == 1
    assert all("cnp_priority=6" in t for t in policies)
    # tenant: VXLAN termination lands in the tenant's VRF, default deny, /24 rule
    assert ("TailccIngress.vxlan_decap.vxlan_termination outer_ipv4_dst=192.0.2.1 vni=5000 "
            "-> TailccIngress.vxlan_decap.terminate_vxlan(vrf=1)") in texts
    assert any("segment_default vrf=1 -> TailccIngress.segmentation.deny()" in t
               for t in texts)
    assert any("ipv4_src=10.1.1.0&&&0xffffff00" in t for t in texts)
    # VXLAN next hop carries the tunnel; ECMP route points at the group
    assert any("set_nexthop_vxlan(port=3" in t and "vtep_dst=192.0.2.2, vni=5000" in t
               for t in texts)
    assert any("ipv4_dst=10.0.2.0/24 -> TailccIngress.forwarding.set_ecmp_group(group_id=1)"
               in t for t in texts)
    defaults = _texts(tailcc, state.defaults)
    assert defaults[0].endswith("set_class(tc=0, queue=0, ecn_profile=5)")
    assert defaults[1].endswith("set_switch_id(id=1)")
    assert len({q.port for q in state.queue_settings}) == 4


def test_range_on_a_ternary_key_expands(tailcc: P4InfoIndex) -> None:
    texts = _compiled_texts(
        "switches: [{name: s, address: 'x:1', device_id: 1}]\n"
        "classes:\n  - {name: a, id: 1, queue: 1, dscp_rewrite: 26, "
        "match: {dscp: '1..6', l4_dst_port: '1000..2000'}}\n", tailcc)
    rules = [t for t in texts if "classify.traffic_class" in t]
    assert len(rules) == 4 and all("l4_dport=1000..2000" in t for t in rules)
    assert all("set_class_and_dscp(tc=1, queue=1, ecn_profile=0, dscp=26)" in t
               for t in rules)


def test_queue_ecn_profile_is_a_per_port_default(tailcc: P4InfoIndex) -> None:
    texts = _compiled_texts(
        "switches: [{name: s, address: 'x:1', device_id: 1,\n"
        "            ports: [{port: 5, scheduler: q}, {port: 6}]}]\n"
        "ecn_profiles: [{name: low, id: 2, kmin: 1, kmax: 4, pmax: 0.25}]\n"
        "schedulers: [{name: q, queues: {3: {mode: strict, ecn_profile: low}}}]\n", tailcc)
    ecn = [t for t in texts if "ecn_marking.ecn_profile" in t]
    assert ecn == [
        "TailccEgress.ecn_marking.ecn_profile ecn_profile=2&&&0xf priority=20 -> "
        "TailccEgress.ecn_marking.set_ecn_profile(kmin_pkts=1, kmax_pkts=4, pmax_1024=256, "
        "use_deq_qdepth=0, drop_not_ect_enable=0, drop_threshold_pkts=0)",
        "TailccEgress.ecn_marking.ecn_profile egress_port=5&&&0x1ff queue=3&&&0x7 "
        "priority=10 -> TailccEgress.ecn_marking.set_ecn_profile(kmin_pkts=1, kmax_pkts=4, "
        "pmax_1024=256, use_deq_qdepth=0, drop_not_ect_enable=0, drop_threshold_pkts=0)"]


def test_ipv6_routes_go_to_routing_v6(tailcc: P4InfoIndex) -> None:
    texts = _compiled_texts(
        "switches:\n  - name: s\n    address: 'x:1'\n    device_id: 1\n"
        "    next_hops: [{name: h, port: 1, dst_mac: '00:00:00:00:00:01'}]\n"
        "    routes: [{prefix: '2001:db8::/32', next_hop: h}, {prefix: 10.0.0.0/8, "
        "next_hop: h}]\n", tailcc)
    assert ("TailccIngress.forwarding.routing_v6 vrf=0 ipv6_dst=2001:db8::/32 -> "
            "TailccIngress.forwarding.set_nexthop(port=1, smac=00:00:00:00:00:00, "
            "dmac=00:00:00:00:00:01)") in texts
    assert any(t.startswith("TailccIngress.forwarding.routing_v4 vrf=0 ipv4_dst=10.0.0.0/8")
               for t in texts)


def test_plan_writes_ecmp_groups_before_the_routes_using_them(tailcc: P4InfoIndex) -> None:
    """ECMP is two exact tables (group -> member count, (group, index) -> next hop):
    a group's entries go in before any route that points at it, so no packet meets a
    route whose group is still empty."""
    intent = load_intent(ROOT / "controlplane/examples/two_leaf.yaml")
    state = compile_switch(intent, intent.switch("leaf1"), tailcc)
    plan = diff(state, [])
    texts = _texts(tailcc, [c.entity for c in plan.changes])
    groups = [i for i, t in enumerate(texts) if "forwarding.ecmp_group " in t]
    members = [i for i, t in enumerate(texts) if "forwarding.ecmp_member " in t]
    users = [i for i, t in enumerate(texts) if "set_ecmp_group(" in t]
    assert groups and members and users
    assert max(groups + members) < min(users)
    group = texts[groups[0]]
    count = int(group.split("count=")[1].rstrip(")"))
    gid = group.split("group_id=")[1].split()[0]
    assert sum(f"group_id={gid} " in texts[i] for i in members) == count
    assert all("action_profile" not in t for t in texts)
    assert [c.kind for c in plan.changes].count("MODIFY") == 2     # the two defaults
    # the same state read back: nothing to write
    assert not diff(state, state.entities + state.defaults)
