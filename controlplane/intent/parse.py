"""YAML tree -> :class:`~controlplane.intent.model.Intent`, checking every value.

This module checks each value on its own (type, range, required keys, unknown keys);
:mod:`controlplane.intent.crossref` then checks what spans several values (names that
must exist, duplicates, overlapping classification rules).
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from controlplane.intent import model as m
from controlplane.intent.reader import Node

TOP_KEYS = ("version", "base", "switches", "classes", "default_class", "ecn_profiles",
            "schedulers", "fast_cnp", "tenants", "nics")
IP_PROTOS = {"icmp": 1, "tcp": 6, "udp": 17}
MAX_EXPANDED_RULES = 64
T = TypeVar("T")


def parse_intent(root: Node) -> m.Intent:
    if not root.mapping(TOP_KEYS):
        return m.Intent()
    version = root.get("version", 1)
    if version is not None:
        version.integer(1, 1)
    classes = root.get("classes", [])
    class_nodes = list(classes.items()) if classes else []
    default_class = root.get("default_class", None)
    fast_cnp = root.get("fast_cnp", None)
    return m.Intent(
        switches=_each(root.get("switches", []), parse_switch),
        classes=tuple(c for i, n in enumerate(class_nodes)
                      if (c := parse_class(n, len(class_nodes) - i)) is not None),
        default_class=default_class.name() if default_class and default_class.value else None,
        ecn_profiles=_each(root.get("ecn_profiles", []), parse_ecn_profile),
        schedulers=_each(root.get("schedulers", []), parse_scheduler),
        fast_cnp=parse_fast_cnp(fast_cnp) if fast_cnp and fast_cnp.value is not None
        else m.FastCnp(),
        tenants=_each(root.get("tenants", []), parse_tenant),
        nics=_each(root.get("nics", []), parse_nic),
    )


def _each(node: Node | None, parse: Callable[[Node], T | None]) -> tuple[T, ...]:
    """Parse each list element, keeping the ones that parsed."""
    if node is None:
        return ()
    return tuple(x for x in (parse(n) for n in node.items()) if x is not None)


def _opt(node: Node, key: str, conv: Callable[..., T | None], *args: Any) -> T | None:
    """The converted optional child ``key`` (None when absent)."""
    child = node.get(key, None)
    if child is None or child.value is None:
        return None
    return conv(child, *args)


def _req(node: Node, key: str, conv: Callable[..., T | None], *args: Any) -> T | None:
    """The converted required child ``key`` (absent: reported, None)."""
    child = node.get(key)
    return None if child is None else conv(child, *args)


# --- classes -----------------------------------------------------------------------------
CLASS_KEYS = ("name", "id", "queue", "priority", "match", "ecn_profile", "dscp_rewrite",
              "lossless", "description")


def parse_class(node: Node, order_priority: int) -> m.TrafficClass | None:
    if not node.mapping(CLASS_KEYS):
        return None
    name = _req(node, "name", Node.name)
    tc_id = _req(node, "id", Node.integer, 0, 15)
    queue = _req(node, "queue", Node.integer, 0, 7)
    priority = _opt(node, "priority", Node.integer, 1, 65535)
    rules = parse_match(node.get("match", None))
    ecn = _opt(node, "ecn_profile", Node.name)
    rewrite = _opt(node, "dscp_rewrite", Node.integer, 0, 63)
    lossless = _opt(node, "lossless", Node.boolean)
    desc = node.get("description", None)
    if desc is not None and desc.value is not None:
        desc.string()
    if name is None or tc_id is None or queue is None or rules is None:
        return None
    return m.TrafficClass(name=name, id=tc_id, queue=queue,
                          priority=priority if priority is not None else order_priority * 10,
                          rules=rules, ecn_profile=ecn, dscp_rewrite=rewrite,
                          lossless=bool(lossless), path=node.path)


def parse_match(node: Node | None) -> tuple[m.MatchRule, ...] | None:
    """``match``: one rule (mapping) or a list of rules; absent = no rules."""
    if node is None or node.value is None:
        return ()
    if isinstance(node.value, list):
        rules: list[m.MatchRule] = []
        ok = True
        for item in node.items():
            got = parse_rule(item)
            ok = ok and got is not None
            rules.extend(got or ())
        return tuple(rules) if ok else None
    return parse_rule(node)


def parse_rule(node: Node) -> tuple[m.MatchRule, ...] | None:
    """One rule mapping; a list value for a field means "any of" and expands the rule."""
    if not node.mapping(tuple(m.MATCH_FIELDS)):
        return None
    if not node.value:
        node.error("empty match rule (it would match every packet; use default_class)")
        return None
    choices: dict[str, list[m.Range]] = {}
    ok = True
    for key in node.value:
        if key not in m.MATCH_FIELDS:
            continue
        child = node.get(key)
        assert child is not None
        values = list(child.items()) if isinstance(child.value, list) else [child]
        if not values:
            child.error("empty list matches nothing")
            ok = False
        got = [_match_value(v, key) for v in values]
        ok = ok and all(g is not None for g in got)
        choices[key] = [g for g in got if g is not None]
    if not ok:
        return None
    combos = list(itertools.islice(itertools.product(*choices.values()), MAX_EXPANDED_RULES + 1))
    if len(combos) > MAX_EXPANDED_RULES:
        node.error(f"expands to more than {MAX_EXPANDED_RULES} table entries; use ranges")
        return None
    return tuple(m.MatchRule(dict(zip(choices, combo, strict=True)), node.path)
                 for combo in combos)


def _match_value(node: Node, field: str) -> m.Range | None:
    if field == "ip_proto" and isinstance(node.value, str) and node.value.lower() in IP_PROTOS:
        value = IP_PROTOS[node.value.lower()]
        return (value, value)
    lo, hi = m.MATCH_FIELDS[field]
    return node.int_range(lo, hi)


# --- ECN profiles and schedulers --------------------------------------------------------
def parse_ecn_profile(node: Node) -> m.EcnProfile | None:
    if not node.mapping(("name", "id", "kmin", "kmax", "pmax", "drop_not_ect")):
        return None
    name = _req(node, "name", Node.name)
    pid = _req(node, "id", Node.integer, 1, 15)   # 0 = "no profile" in the pipeline
    kmin = _req(node, "kmin", Node.integer, 0, 2**19 - 1)
    kmax = _req(node, "kmax", Node.integer, 0, 2**19 - 1)
    pmax = _req(node, "pmax", Node.number, 0.0, 1.0)
    drop = _opt(node, "drop_not_ect", Node.integer, 1, 2**19 - 1)
    if kmin is not None and kmax is not None and kmin > kmax:
        node.problems.add(f"{node.path}.kmin", f"kmin {kmin} is above kmax {kmax}")
        return None
    if None in (name, pid, kmin, kmax, pmax):
        return None
    return m.EcnProfile(name, pid, kmin, kmax, pmax, drop)


def parse_scheduler(node: Node) -> m.Scheduler | None:
    if not node.mapping(("name", "queues", "pfc")):
        return None
    name = _req(node, "name", Node.name)
    pfc = _opt(node, "pfc", parse_pfc)
    queues_node = node.get("queues")
    queues: list[m.QueueSched] = []
    if queues_node is not None and isinstance(queues_node.value, dict):
        seen: set[int] = set()
        for key in queues_node.value:
            where = f"{queues_node.path}.{key}"
            number = _queue_number(key)
            if number is None:
                node.problems.add(where, f"{key!r} is not a queue: keys are the queue "
                                         "numbers 0..7")
                continue
            if number in seen:
                node.problems.add(where, f"queue {number} is given twice")
                continue
            seen.add(number)
            got = parse_queue(Node(queues_node.value[key], where, node.problems), number)
            if got is not None:
                queues.append(got)
    elif queues_node is not None:
        queues_node.mapping(())
    if name is None:
        return None
    return m.Scheduler(name, tuple(sorted(queues, key=lambda q: -q.queue)), pfc)


def _queue_number(key: object) -> int | None:
    """A queue key: 0..7 as a YAML integer or a decimal string; booleans are not
    numbers here (YAML's ``true`` would otherwise read as queue 1)."""
    if isinstance(key, bool):
        return None
    if isinstance(key, str) and key.isdecimal():
        key = int(key)
    return key if isinstance(key, int) and 0 <= key <= 7 else None


def parse_pfc(node: Node) -> m.Pfc | None:
    if not node.mapping(("xoff_pkts", "xon_pkts")):
        return None
    xoff = _req(node, "xoff_pkts", Node.integer, 1, 2**19 - 1)
    xon = _req(node, "xon_pkts", Node.integer, 0, 2**19 - 1)
    if xoff is not None and xon is not None and xon >= xoff:
        node.problems.add(f"{node.path}.xon_pkts", f"xon {xon} must be below xoff {xoff}")
        return None
    return None if xoff is None or xon is None else m.Pfc(xoff, xon)


def parse_queue(node: Node, queue: int) -> m.QueueSched | None:
    if not node.mapping(("mode", "weight", "rate_pps", "depth_pkts", "ecn_profile")):
        return None
    mode = _req(node, "mode", Node.choice, ("strict", "dwrr"))
    weight = _opt(node, "weight", Node.integer, 1, 1000)
    rate = _opt(node, "rate_pps", Node.integer, 1, 10**9)
    depth = _opt(node, "depth_pkts", Node.integer, 1, 2**19 - 1)
    if mode == "dwrr" and weight is None and not node.has("weight"):
        node.problems.add(f"{node.path}.weight", "a dwrr queue needs a weight")
        return None
    if mode == "strict" and weight is not None:
        node.problems.add(f"{node.path}.weight", "a strict-priority queue has no weight")
        return None
    if mode is None:
        return None
    return m.QueueSched(queue, mode, weight, rate, depth, _opt(node, "ecn_profile", Node.name))


# --- Fast CNP ------------------------------------------------------------------------------
def parse_fast_cnp(node: Node) -> m.FastCnp:
    keys = ("enabled", "dscp", "queue", "min_interval_us", "queue_threshold", "keep_ce",
            "learning", "classes", "qp_map", "recirculation_port")
    if not node.mapping(keys):
        return m.FastCnp()
    d = m.FastCnp()
    return m.FastCnp(
        enabled=_opt(node, "enabled", Node.boolean) or False,
        dscp=_or(_opt(node, "dscp", Node.integer, 0, 63), d.dscp),
        queue=_or(_opt(node, "queue", Node.integer, 0, 7), d.queue),
        min_interval_us=_or(_opt(node, "min_interval_us", Node.integer, 0, 10**6),
                            d.min_interval_us),
        queue_threshold=_or(_opt(node, "queue_threshold", Node.integer, 1, 2**19 - 1),
                            d.queue_threshold),
        keep_ce=_or(_opt(node, "keep_ce", Node.boolean), d.keep_ce),
        recirculation_port=_or(_opt(node, "recirculation_port", Node.integer, 0, 510),
                               d.recirculation_port),
        learning=_or(_opt(node, "learning", Node.boolean), d.learning),
        classes=_names(node.get("classes", None)),
        qp_map=_each(node.get("qp_map", []), parse_qp_entry),
    )


def _names(node: Node | None) -> tuple[str, ...] | None:
    if node is None or node.value is None:
        return None
    return tuple(n for n in (item.name() for item in node.items()) if n is not None)


def _or(value, default):
    return default if value is None else value


def parse_qp_entry(node: Node) -> m.QpMapEntry | None:
    if not node.mapping(("src", "dst", "dst_qp", "sender_qp")):
        return None
    src = _req(node, "src", Node.ipv4)
    dst = _req(node, "dst", Node.ipv4)
    dqp = _req(node, "dst_qp", Node.integer, 0, 2**24 - 1)
    sqp = _req(node, "sender_qp", Node.integer, 0, 2**24 - 1)
    if None in (src, dst, dqp, sqp):
        return None
    return m.QpMapEntry(src, dst, dqp, sqp)


# --- tenants / micro-segmentation ------------------------------------------------------
def parse_tenant(node: Node) -> m.Tenant | None:
    if not node.mapping(("name", "vrf", "vni", "default", "rules")):
        return None
    name = _req(node, "name", Node.name)
    vrf = _req(node, "vrf", Node.integer, 1, 4095)
    vni_node = node.get("vni", None)
    vnis: list[int] = []
    if vni_node is not None and vni_node.value is not None:
        items = vni_node.items() if isinstance(vni_node.value, list) else [vni_node]
        vnis = [v for v in (n.integer(1, 2**24 - 1) for n in items) if v is not None]
    default = _or(_opt(node, "default", Node.choice, ("allow", "deny")), "deny")
    rules_node = node.get("rules", [])
    rule_nodes = list(rules_node.items()) if rules_node else []
    rules = tuple(r for i, n in enumerate(rule_nodes)
                  if (r := parse_seg_rule(n, len(rule_nodes) - i)) is not None)
    if name is None or vrf is None:
        return None
    return m.Tenant(name, vrf, tuple(vnis), default, rules)


def parse_seg_rule(node: Node, order_priority: int) -> m.SegRule | None:
    if not node.mapping(("src", "dst", "action", "priority")):
        return None
    src = _or(_opt(node, "src", Node.ipv4_net), None)
    dst = _or(_opt(node, "dst", Node.ipv4_net), None)
    action = _req(node, "action", Node.choice, ("allow", "deny"))
    prio = _opt(node, "priority", Node.integer, 1, 65535)
    if not node.has("src") and not node.has("dst"):
        node.error("a rule needs src, dst or both")
        return None
    if action is None or (node.has("src") and src is None) or (node.has("dst") and dst is None):
        return None
    anyaddr = ipaddress.IPv4Network("0.0.0.0/0")
    return m.SegRule(src or anyaddr, dst or anyaddr, action,
                     prio if prio is not None else order_priority * 10, node.path)


# --- switches ----------------------------------------------------------------------------
TARGETS = ("softswitch", "bmv2")
"""What runs the switch: it decides how ``runtime_address`` (the process's
``--thrift-port``) is spoken — softswitch's JSON-lines runtime channel, or BMv2's
Thrift API — and which traffic-manager settings exist there."""
SWITCH_KEYS = ("name", "address", "device_id", "election_id", "cpu_port", "switch_id",
               "router_mac", "runtime_address", "target", "ports", "tunnels", "next_hops",
               "ecmp_groups", "routes", "tls", "runtime_token_file")


def _device(node: Node) -> tuple[str | None, str | None, int | None]:
    """A switch's or NIC's name, P4Runtime address and device id (None where refused)."""
    return (_req(node, "name", Node.name), _req(node, "address", Node.address),
            _req(node, "device_id", Node.integer, 0, 2**64 - 1))


def parse_switch(node: Node) -> m.Switch | None:
    if not node.mapping(SWITCH_KEYS):
        return None
    name, address, device_id = _device(node)
    election = _or(_opt(node, "election_id", Node.integer, 1, 2**64 - 1), 1)
    cpu_port = _or(_opt(node, "cpu_port", Node.integer, 0, 511), 255)
    switch_id = _or(_opt(node, "switch_id", Node.integer, 0, 2**32 - 1), 0)
    router_mac = _or(_opt(node, "router_mac", Node.mac), "00:00:00:00:00:00")
    groups_node = node.get("ecmp_groups", [])
    group_nodes = list(groups_node.items()) if groups_node else []
    result = m.Switch(
        name=name or "", address=address or "", device_id=device_id or 0,
        election_id=election, cpu_port=cpu_port, switch_id=switch_id, router_mac=router_mac,
        runtime_address=_opt(node, "runtime_address", Node.address),
        target=_or(_opt(node, "target", Node.choice, TARGETS), "softswitch"),
        tls=_opt(node, "tls", parse_tls),
        runtime_token_file=_opt(node, "runtime_token_file", Node.string),
        ports=_each(node.get("ports", []), parse_port),
        tunnels=_each(node.get("tunnels", []), parse_tunnel),
        next_hops=_each(node.get("next_hops", []), lambda n: parse_next_hop(n, router_mac)),
        ecmp_groups=tuple(g for i, n in enumerate(group_nodes)
                          if (g := parse_ecmp(n, i + 1)) is not None),
        routes=_each(node.get("routes", []), parse_route),
    )
    return None if name is None or address is None or device_id is None else result


# --- NICs ----------------------------------------------------------------------------------
NIC_KEYS = ("name", "address", "device_id", "election_id", "cpu_port", "runtime_address",
            "tls", "runtime_token_file", "host_port", "net_port", "loopback_port",
            "scheduler", "qps", "app_tags", "class_meters", "receiver_cnp", "nak_fast_path",
            "trim_dscp")


def parse_nic(node: Node) -> m.Nic | None:
    """A NIC running p4src/nic/tailcc_nic.p4 (docs/nic.md)."""
    if not node.mapping(NIC_KEYS):
        return None
    name, address, device_id = _device(node)
    host_port = _req(node, "host_port", Node.integer, 0, 511)
    net_port = _req(node, "net_port", Node.integer, 0, 511)
    loop = node.get("loopback_port", None)
    loopback = (9 if loop is None else None if loop.value is None
                else loop.integer(0, 511))
    result = m.Nic(
        name=name or "", address=address or "", device_id=device_id or 0,
        election_id=_or(_opt(node, "election_id", Node.integer, 1, 2**64 - 1), 1),
        cpu_port=_or(_opt(node, "cpu_port", Node.integer, 0, 511), 255),
        runtime_address=_opt(node, "runtime_address", Node.address),
        tls=_opt(node, "tls", parse_tls),
        runtime_token_file=_opt(node, "runtime_token_file", Node.string),
        host_port=host_port or 0, net_port=net_port or 0, loopback_port=loopback,
        scheduler=_opt(node, "scheduler", Node.name),
        qps=_each(node.get("qps", []), parse_nic_qp),
        app_tags=_each(node.get("app_tags", []), parse_app_tag),
        class_meters=_each(node.get("class_meters", []), parse_nic_meter),
        receiver_cnp=_or(_opt(node, "receiver_cnp", Node.boolean), True),
        nak_fast_path=_or(_opt(node, "nak_fast_path", Node.boolean), True),
        trim_dscp=_opt(node, "trim_dscp", Node.integer, 0, 63),
    )
    if None in (name, address, device_id, host_port, net_port):
        return None
    return result


def parse_nic_qp(node: Node) -> m.NicQp | None:
    keys = ("local_qp", "peer_qp", "class", "slot", "ev_count", "ev_base",
            "urgent_max_len", "max_rate", "min_rate", "burst")
    if not node.mapping(keys):
        return None
    local = _req(node, "local_qp", Node.integer, 0, 2**24 - 1)
    peer = _req(node, "peer_qp", Node.integer, 0, 2**24 - 1)
    cls = _req(node, "class", Node.name)
    slot = _req(node, "slot", Node.integer, 0, 1023)
    ev_base = _or(_opt(node, "ev_base", Node.integer, 0, 0xFFF0), 0xC000)
    if ev_base % 16:
        node.get("ev_base").error(f"must be a multiple of 16, got {ev_base}")
        return None
    if None in (local, peer, cls, slot):
        return None
    return m.NicQp(local, peer, cls, slot,
                   _or(_opt(node, "ev_count", Node.integer, 1, 16), 1), ev_base,
                   _or(_opt(node, "urgent_max_len", Node.integer, 0, 65535), 0),
                   _or(_opt(node, "max_rate", Node.integer, 0, 2**32 - 1), 0),
                   _or(_opt(node, "min_rate", Node.integer, 1, 2**32 - 1), 1),
                   _or(_opt(node, "burst", Node.integer, 1, 2**32 - 1), 4096))


def parse_nic_meter(node: Node) -> m.NicMeter | None:
    if not node.mapping(("class", "cir", "cburst", "pir", "pburst")):
        return None
    cls = _req(node, "class", Node.name)
    vals = [_req(node, k, Node.integer, 1, 2**40) for k in ("cir", "cburst", "pir", "pburst")]
    if cls is None or None in vals:
        return None
    cir, cburst, pir, pburst = (int(v) for v in vals if v is not None)
    if cir > pir:
        node.error(f"cir {cir} exceeds pir {pir}")
        return None
    return m.NicMeter(cls, cir, cburst, pir, pburst)


def parse_app_tag(node: Node) -> m.NicAppTag | None:
    if not node.mapping(("protocol", "dport", "tag", "class", "priority")):
        return None
    proto_node = node.get("protocol")
    proto = None
    if proto_node is not None:
        proto = (IP_PROTOS.get(proto_node.value) if isinstance(proto_node.value, str)
                 else proto_node.integer(0, 255))
        if proto is None and isinstance(proto_node.value, str):
            proto_node.error(f"unknown protocol {proto_node.value!r} "
                             f"(one of {', '.join(IP_PROTOS)} or a number)")
    cls = _req(node, "class", Node.name)
    if proto is None or cls is None:
        return None
    return m.NicAppTag(proto, cls, _opt(node, "dport", Node.integer, 0, 65535),
                       _opt(node, "tag", Node.integer, 0, 63),
                       _or(_opt(node, "priority", Node.integer, 1, 2**31 - 1), 1))


def parse_tls(node: Node) -> m.Tls | None:
    """``tls: {ca, cert, key, server_name}``; ``tls: true`` trusts the system's CAs."""
    if node.value is True:
        return m.Tls()
    if not node.mapping(("ca", "cert", "key", "server_name")):
        return None
    tls = m.Tls(_opt(node, "ca", Node.string), _opt(node, "cert", Node.string),
                _opt(node, "key", Node.string), _opt(node, "server_name", Node.string))
    if (tls.cert is None) != (tls.key is None):
        node.error("a client certificate needs its key and the key its certificate "
                   "(cert and key: both or neither)")
        return None
    return tls


def parse_port(node: Node) -> m.Port | None:
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        number = node.integer(0, 511)
        return None if number is None else m.Port(number)
    if not node.mapping(("port", "name", "scheduler", "speed_gbps", "tenant")):
        return None
    number = _req(node, "port", Node.integer, 0, 511)
    if number is None:
        return None
    return m.Port(number, _opt(node, "name", Node.string), _opt(node, "scheduler", Node.name),
                  _opt(node, "speed_gbps", Node.number, 0.001, 10000.0),
                  _opt(node, "tenant", Node.name))


def parse_tunnel(node: Node) -> m.Tunnel | None:
    if not node.mapping(("name", "src", "dst", "vni")):
        return None
    name = _req(node, "name", Node.name)
    src = _req(node, "src", Node.ipv4)
    dst = _req(node, "dst", Node.ipv4)
    vni = _req(node, "vni", Node.integer, 1, 2**24 - 1)
    if None in (name, src, dst, vni):
        return None
    return m.Tunnel(name, src, dst, vni)


def parse_next_hop(node: Node, router_mac: str) -> m.NextHop | None:
    if not node.mapping(("name", "port", "dst_mac", "src_mac", "tunnel")):
        return None
    name = _req(node, "name", Node.name)
    port = _req(node, "port", Node.integer, 0, 511)
    dst_mac = _req(node, "dst_mac", Node.mac)
    src_mac = _or(_opt(node, "src_mac", Node.mac), router_mac)
    tunnel = _opt(node, "tunnel", Node.name)
    if None in (name, port, dst_mac):
        return None
    return m.NextHop(name, port, dst_mac, src_mac, tunnel)


def parse_ecmp(node: Node, default_id: int) -> m.EcmpGroup | None:
    if not node.mapping(("name", "id", "members")):
        return None
    name = _req(node, "name", Node.name)
    gid = _or(_opt(node, "id", Node.integer, 1, 65535), default_id)
    members_node = node.get("members")
    members = [x for x in (n.name() for n in members_node.items()) if x] if members_node else []
    if members_node is not None and isinstance(members_node.value, list) and not members:
        members_node.error("an ECMP group needs at least one member")
        return None
    if name is None or not members:
        return None
    return m.EcmpGroup(name, gid, tuple(members))


def parse_route(node: Node) -> m.Route | None:
    if not node.mapping(("vrf", "prefix", "next_hop", "ecmp_group")):
        return None
    vrf = _or(_opt(node, "vrf", Node.integer, 0, 4095), 0)
    prefix = _req(node, "prefix", Node.ip_net)
    nh = _opt(node, "next_hop", Node.name)
    group = _opt(node, "ecmp_group", Node.name)
    if node.has("next_hop") == node.has("ecmp_group"):
        node.error("a route needs exactly one of next_hop and ecmp_group")
        return None
    if prefix is None or (nh is None and group is None):
        return None
    return m.Route(vrf, prefix, nh, group)
