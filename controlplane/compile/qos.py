"""Classes, ECN profiles and Fast CNP -> classify/ecn_marking/fast_cnp table entries."""

from __future__ import annotations

import itertools

from controlplane.compile import names as n
from controlplane.compile.ternary import range_to_ternary
from controlplane.intent import model as m
from controlplane.p4rt.entities import EntityBuilder

# intent match field -> (pipeline key name, key width, ternary?)
CLASS_KEYS: dict[str, tuple[str, int, bool]] = {
    "dscp": ("dscp", 6, True),
    "ecn": ("ecn", 2, True),
    "ip_proto": ("ip_proto", 8, True),
    "vni": ("vni", 24, True),
    "l4_src_port": ("l4_sport", 16, False),
    "l4_dst_port": ("l4_dport", 16, False),
    "bth_opcode": ("bth_opcode", 8, False),
    "dst_qp": ("bth_dst_qp", 24, False),
    "packet_size": ("packet_length", 32, False),
}
ROCE_FIELDS = ("bth_opcode", "dst_qp")
ECN_PROFILE_PRIORITY = 20        # a class's own profile ...
QUEUE_ECN_PRIORITY = 10          # ... wins over its queue's default on that port
FAST_CNP_PRIORITY = 10


def class_entries(intent: m.Intent, b: EntityBuilder) -> list:
    """One traffic_class entry per rule (more when a range must split into ternaries)."""
    profiles = {p.name: p.id for p in intent.ecn_profiles}
    out = []
    for tc in intent.classes:
        action, params = _class_action(tc, profiles)
        for rule in tc.rules:
            for match in _rule_matches(rule):
                out.append(b.table_entity(n.TRAFFIC_CLASS, match=match, action=action,
                                         params=params, priority=tc.priority))
    return out


def default_class_entry(intent: m.Intent, b: EntityBuilder):
    """The table's default action: the intent's default class (or plain best effort)."""
    if intent.default_class is None:
        return b.table_entity(n.TRAFFIC_CLASS, default=True, action="set_best_effort")
    tc = next(c for c in intent.classes if c.name == intent.default_class)
    action, params = _class_action(tc, {p.name: p.id for p in intent.ecn_profiles})
    return b.table_entity(n.TRAFFIC_CLASS, default=True, action=action, params=params)


def _class_action(tc: m.TrafficClass, profiles: dict[str, int]) -> tuple[str, dict]:
    params = {"tc": tc.id, "queue": tc.queue,
              "ecn_profile": profiles.get(tc.ecn_profile or "", 0)}
    if tc.dscp_rewrite is not None:
        return n.SET_CLASS_AND_DSCP, {**params, "dscp": tc.dscp_rewrite}
    return n.SET_CLASS, params


def _rule_matches(rule: m.MatchRule) -> list[dict[str, str]]:
    """Key dicts for one rule; ternary keys of a range rule expand into a product."""
    choices: list[list[tuple[str, str]]] = []
    for field, (lo, hi) in rule.fields.items():
        key, width, ternary = CLASS_KEYS[field]
        if ternary:
            choices.append([(key, f"{v}&&&{mask}") for v, mask in
                            range_to_ternary(lo, hi, width)])
        else:
            choices.append([(key, f"{lo}..{hi}")])
    if any(f in rule.fields for f in ROCE_FIELDS):
        choices.append([("is_roce", "1&&&1")])
    return [dict(combo) for combo in itertools.product(*choices)]


def _ecn_params(p: m.EcnProfile) -> dict[str, int]:
    return {"kmin_pkts": p.kmin, "kmax_pkts": p.kmax,
            "pmax_1024": min(1024, round(p.pmax * 1024)), "use_deq_qdepth": 0,
            "drop_not_ect_enable": int(p.drop_not_ect is not None),
            "drop_threshold_pkts": p.drop_not_ect or 0}


def ecn_entries(intent: m.Intent, switch: m.Switch, b: EntityBuilder) -> list:
    """One entry per class profile (any port, any queue), then per-(port, queue)
    defaults from the ports' schedulers for packets whose class names no profile."""
    out = []
    for p in intent.ecn_profiles:
        out.append(b.table_entity(n.ECN_PROFILE, match={"ecn_profile": f"{p.id}&&&0xf"},
                                  action=n.SET_ECN_PROFILE, params=_ecn_params(p),
                                  priority=ECN_PROFILE_PRIORITY))
    for port in switch.ports:
        if port.scheduler is None:
            continue
        for q in intent.scheduler(port.scheduler).queues:
            if q.ecn_profile is None:
                continue
            out.append(b.table_entity(
                n.ECN_PROFILE, match={"egress_port": port.number, "queue": q.queue},
                action=n.SET_ECN_PROFILE, params=_ecn_params(intent.ecn_profile(q.ecn_profile)),
                priority=QUEUE_ECN_PRIORITY))
    return out


def fast_cnp_entries(intent: m.Intent, switch: m.Switch, b: EntityBuilder) -> list:
    """Policy per covered class, the controller's QP map, and the one clone session:
    to the recirculation port, where egress turns the clone into a CNP and recirculates
    it to leave by the sender's port in the CNP queue (the policy's ``cnp_priority``)."""
    cnp = intent.fast_cnp
    if not cnp.enabled:
        return []
    out = []
    params = {"qdepth_threshold": cnp.queue_threshold, "min_interval": cnp.min_interval_us,
              "cnp_dscp": cnp.dscp, "cnp_priority": cnp.queue, "keep_ce": int(cnp.keep_ce)}
    for tc in intent.fast_cnp_classes():
        out.append(b.table_entity(n.FAST_CNP_POLICY, match={"traffic_class": f"{tc.id}&&&0xf"},
                                 action=n.ENABLE_FAST_CNP, params=params,
                                 priority=FAST_CNP_PRIORITY))
    for index, flow in enumerate(cnp.qp_map):
        out.append(b.table_entity(n.CNP_FLOW, match={"ipv4_src": str(flow.src_ip),
                                                    "ipv4_dst": str(flow.dst_ip),
                                                    "dst_qp": flow.dst_qp},
                                 action=n.SET_SENDER_QP,
                                 params={"sender_qp": flow.sender_qp, "flow_index": index}))
    out.append(b.clone_session(n.CNP_SESSION, [cnp.recirculation_port]))
    return out
