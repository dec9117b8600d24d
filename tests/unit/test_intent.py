"""Intent validation: the shipped files are valid; each malformed intent is rejected with
a message naming the path (and line) and the reason, and every problem is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from controlplane.intent import IntentError, load_intent, parse_intent_text

ROOT = Path(__file__).resolve().parents[2]

SWITCH = """
switches:
  - name: s1
    address: 127.0.0.1:9559
    device_id: 1
    ports: [1, 2]
    next_hops:
      - {name: h1, port: 1, dst_mac: "00:00:00:00:00:01"}
"""

CLASS = """
classes:
  - {name: a, id: 1, queue: 3, match: {dscp: 10}}
"""


def _errors(text: str) -> list[str]:
    with pytest.raises(IntentError) as info:
        parse_intent_text(textwrap.dedent(text), "t.yaml")
    return [p.format("t.yaml") for p in info.value.problems]


# (intent text, expected substring of one of the formatted messages)
MALFORMED = [
    # wrong types
    ("classes:\n  - {name: a, id: 1, queue: three, match: {dscp: 1}}\n",
     "t.yaml:2: classes[0].queue: expected an integer, got a string 'three'"),
    ("classes: {name: a}\n", "t.yaml:1: classes: expected a list, got a mapping"),
    ("switches:\n  - name: s1\n    address: 127.0.0.1:1\n    device_id: [1]\n",
     "t.yaml:4: switches[0].device_id: expected an integer, got a list"),
    ("fast_cnp: {enabled: maybe}\n",
     "fast_cnp.enabled: expected true or false, got a string 'maybe'"),
    # out-of-range values
    ("classes:\n  - {name: a, id: 1, queue: 3}\n  - {name: b, id: 2, queue: 1}\n"
     "  - name: c\n    id: 3\n    queue: 2\n    match: {dscp: 70}\n",
     "t.yaml:7: classes[2].match.dscp: 70 is not in 0..63"),
    ("classes:\n  - {name: a, id: 1, queue: 8, match: {dscp: 1}}\n",
     "classes[0].queue: 8 is not in 0..7"),
    ("classes:\n  - {name: a, id: 1, queue: 1, match: {dst_qp: \"0..0x1000000\"}}\n",
     "classes[0].match.dst_qp: range 0..16777216 is not within 0..16777215"),
    ("classes:\n  - {name: a, id: 1, queue: 1, match: {packet_size: \"1500..64\"}}\n",
     "classes[0].match.packet_size: empty range 1500..64"),
    ("ecn_profiles:\n  - {name: p, id: 1, kmin: 30, kmax: 10, pmax: 0.1}\n",
     "ecn_profiles[0].kmin: kmin 30 is above kmax 10"),
    ("ecn_profiles:\n  - {name: p, id: 1, kmin: 1, kmax: 10, pmax: 1.5}\n",
     "ecn_profiles[0].pmax: 1.5 is not in 0.0..1.0"),
    ("fast_cnp: {dscp: 64}\n", "fast_cnp.dscp: 64 is not in 0..63"),
    ("switches:\n  - {name: s1, address: \"localhost\", device_id: 1}\n",
     "switches[0].address: 'localhost' is not host:port"),
    ("tenants:\n  - {name: t, vrf: 1, rules: [{src: 10.0.0.5/24, action: allow}]}\n",
     "tenants[0].rules[0].src: 10.0.0.5/24 has host bits set (did you mean 10.0.0.0/24?)"),
    (SWITCH.replace('"00:00:00:00:00:01"', '"00:00:00:00:01"'),
     "switches[0].next_hops[0].dst_mac: '00:00:00:00:01' is not a MAC address"),
    # unknown names and keys
    (CLASS.replace("queue: 3", "queue: 3, ecn_profile: nope"),
     "classes[0].ecn_profile: unknown ECN profile 'nope' (none defined)"),
    (CLASS.replace("dscp: 10", "dscpp: 10"),
     "classes[0].match.dscpp: unknown key (expected one of: dscp, ecn, ip_proto"),
    (SWITCH + "    routes:\n      - {prefix: 10.0.0.0/8, next_hop: h9}\n",
     "t.yaml:10: switches[0].routes[0].next_hop: unknown next hop 'h9' (known: h1)"),
    (SWITCH + "    ecmp_groups:\n      - {name: g, members: [h1, h2]}\n",
     "switches[0].ecmp_groups[0].members[1]: unknown next hop 'h2'"),
    (SWITCH.replace("port: 1,", "port: 7,"),
     "switches[0].next_hops[0].port: port 7 is not among the switch's ports"),
    ("default_class: nobody\n" + CLASS, "default_class: unknown class 'nobody' (known: a)"),
    ("base: gold\n", "base: no profile or file 'gold' (shipped profiles: default)"),
    ("colour: blue\n", "colour: unknown key (expected one of: version, base, switches"),
    (SWITCH + "    ports_: [3]\n", "switches[0].ports_: unknown key"),
    # duplicates and overlapping rules
    (CLASS + "  - {name: a, id: 2, queue: 1, match: {dscp: 11}}\n",
     "classes[1]: duplicate class name 'a' (also classes[0])"),
    ("classes:\n  - {name: a, id: 1, queue: 3, priority: 5, match: {dscp: \"8..15\"}}\n"
     "  - {name: b, id: 2, queue: 1, priority: 5, match: {dscp: 12, ip_proto: tcp}}\n",
     "classes[1].match: overlaps classes[0].match (class 'a') at the same priority 5"),
    ("classes:\n  - {name: a, id: 1, queue: 3, match: {dscp: \"8..15\"}}\n"
     "  - {name: b, id: 2, queue: 1, match: [{dscp: 40}, {dscp: 12, ip_proto: udp}]}\n",
     "classes[1].match[1]: never matches: shadowed by classes[0].match (class 'a'"),
    ("tenants:\n  - name: t\n    vrf: 1\n    rules:\n"
     "      - {src: 10.0.0.1, dst: 10.0.0.2, action: allow, priority: 5}\n"
     "      - {src: 10.0.0.1, dst: 10.0.0.2, action: deny, priority: 5}\n",
     "t.yaml:6: tenants[0].rules[1]: contradicts tenants[0].rules[0] (same src, dst"),
    ("tenants:\n  - {name: t, vrf: 1, vni: 7}\n  - {name: u, vrf: 2, vni: [8, 7]}\n",
     "tenants[1].vni: VNI 7 already belongs to tenant 't'"),
    (SWITCH + "    routes:\n      - {prefix: 10.0.0.0/8, next_hop: h1}\n"
     "      - {prefix: 10.0.0.0/8, next_hop: h1}\n",
     "switches[0].routes[1]: duplicate route 0 10.0.0.0/8"),
    (SWITCH + "    routes:\n      - {prefix: '2001:db8::1/32', next_hop: h1}\n",
     "switches[0].routes[0].prefix: 2001:db8::1/32 has host bits set (did you mean "
     "2001:db8::/32?)"),
    (SWITCH + "    routes:\n      - {prefix: 10.0.0.0/8, next_hop: h1, ecmp_group: g}\n",
     "switches[0].routes[0]: a route needs exactly one of next_hop and ecmp_group"),
    ("schedulers:\n  - name: s\n    queues: {3: {mode: dwrr}}\n",
     "schedulers[0].queues.3.weight: a dwrr queue needs a weight"),
    ("schedulers:\n  - {name: s, queues: {}, pfc: {xoff_pkts: 8, xon_pkts: 8}}\n",
     "schedulers[0].pfc.xon_pkts: xon 8 must be below xoff 8"),
    ("schedulers:\n  - name: s\n    queues: {3: {mode: strict, ecn_profile: low}}\n",
     "schedulers[0].queues.3.ecn_profile: unknown ECN profile 'low' (none defined)"),
    ("classes:\n  - {name: a, id: 1, queue: 3}\n",
     "classes[0].match: required key is missing (only default_class may have no match"),
    ("switches:\n  - {name: s1, device_id: 1}\n",
     "switches[0].address: required key is missing"),
    # YAML syntax errors with line numbers
    ("classes:\n  - name: a\n    id: 1\n   queue: 3\n", "t.yaml:4: YAML syntax error"),
    ("classes: [\n  {name: a,\n", "t.yaml:3: YAML syntax error"),
    ("classes:\n  - name: a\n    name: b\n", "t.yaml:3: classes[0].name: duplicate key"),
    ("switches:\n\t- name: s1\n", "t.yaml:2: YAML syntax error"),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED,
                         ids=[f"case{i}" for i in range(len(MALFORMED))])
def test_malformed_intent_names_path_and_reason(text: str, expected: str) -> None:
    errors = _errors(text)
    assert any(expected in e for e in errors), "\n".join(errors)


def test_enough_malformed_cases() -> None:
    assert len(MALFORMED) >= 20


def test_all_problems_are_reported_not_just_the_first() -> None:
    errors = _errors("classes:\n  - {name: a, id: 99, queue: 9, match: {dscp: 64}}\n"
                     "fast_cnp: {dscp: -1}\n")
    assert len(errors) == 4, errors
    assert [e.split(": ")[1] for e in errors] == [
        "classes[0].id", "classes[0].queue", "classes[0].match.dscp", "fast_cnp.dscp"]


def test_default_profile_is_valid_and_has_the_converged_map() -> None:
    intent = load_intent(ROOT / "controlplane/profiles/default.yaml")
    by_name = {c.name: c for c in intent.classes}
    # BRIEF §2: DSCP 56 -> queue 7, 48 -> 6, 32 -> 4, 24 -> 3, 0 -> 0
    for name, dscp, queue in [("control", 56, 7), ("cnp", 48, 6), ("tp_pp", 32, 4),
                              ("storage", 24, 3), ("frontend_api", 0, 0)]:
        assert by_name[name].queue == queue
        assert any(r.fields.get("dscp") == (dscp, dscp) for r in by_name[name].rules)
    for name in ("hot_kv", "sched_signal", "moe_a2a", "cold_kv", "training_bulk",
                 "best_effort"):
        assert name in by_name
    assert intent.default_class == "best_effort"
    hot = intent.ecn_profile(by_name["hot_kv"].ecn_profile or "")
    bulk = intent.ecn_profile(by_name["training_bulk"].ecn_profile or "")
    assert hot.kmax < bulk.kmin, "inference queues must mark long before bulk ones"
    assert intent.fast_cnp.enabled and intent.fast_cnp.dscp == 48


def test_example_intent_extends_default() -> None:
    intent = load_intent(ROOT / "controlplane/examples/two_leaf.yaml")
    assert [s.name for s in intent.switches] == ["leaf1", "leaf2"]
    assert len(intent.classes) == 11
    leaf1 = intent.switch("leaf1")
    assert leaf1.next_hops[0].src_mac == "00:aa:00:00:00:01"   # defaults to router_mac
    assert leaf1.ecmp_groups[0].members == ("sp1", "sp2")


def test_list_value_expands_into_one_rule_per_choice() -> None:
    intent = parse_intent_text("classes:\n  - {name: a, id: 1, queue: 1, "
                               "match: {dscp: [24, 26], ip_proto: [udp, tcp]}}\n")
    assert len(intent.classes[0].rules) == 4


def test_unreadable_file_is_an_intent_error(tmp_path: Path) -> None:
    with pytest.raises(IntentError, match="cannot read"):
        load_intent(tmp_path / "missing.yaml")
