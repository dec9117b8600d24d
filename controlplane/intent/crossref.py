"""Checks that span several values: references, duplicates, rule overlaps.

A classification rule that can never match (shadowed by a higher-priority rule of
another class) or two classes claiming the same packets at the same priority are
operator mistakes that table writes would silently accept, so they are errors here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from controlplane.intent import model as m
from controlplane.intent.problems import Problems


def check_intent(intent: m.Intent, problems: Problems) -> None:
    _unique(problems, "classes", intent.classes, lambda c: c.name, "class name")
    _unique(problems, "classes", intent.classes, lambda c: c.id, "class id")
    _unique(problems, "ecn_profiles", intent.ecn_profiles, lambda p: p.name, "profile name")
    _unique(problems, "ecn_profiles", intent.ecn_profiles, lambda p: p.id, "profile id")
    _unique(problems, "schedulers", intent.schedulers, lambda s: s.name, "scheduler name")
    _unique(problems, "tenants", intent.tenants, lambda t: t.name, "tenant name")
    _unique(problems, "tenants", intent.tenants, lambda t: t.vrf, "tenant vrf")
    _unique(problems, "switches", intent.switches, lambda s: s.name, "switch name")
    _unique(problems, "switches", intent.switches, lambda s: (s.address, s.device_id),
            "switch address and device_id")
    _check_classes(intent, problems)
    _check_vnis(intent, problems)
    for tenant_index, tenant in enumerate(intent.tenants):
        _check_seg_rules(tenant, f"tenants[{tenant_index}]", problems)
    schedulers = {s.name for s in intent.schedulers}
    tenants = {t.name for t in intent.tenants}
    for index, switch in enumerate(intent.switches):
        _check_switch(switch, f"switches[{index}]", schedulers, problems)
        for i, port in enumerate(switch.ports):
            if port.tenant is not None and port.tenant not in tenants:
                problems.add(f"switches[{index}].ports[{i}].tenant",
                             f"unknown tenant {port.tenant!r}{_known(tenants)}")
    _check_scheduler_profiles(intent, problems)
    _check_fast_cnp(intent, problems)
    _check_nics(intent, problems)


def _check_nics(intent: m.Intent, problems: Problems) -> None:
    """NIC names/addresses are unique among all devices; the classes, scheduler and
    ports a NIC names exist and differ; its QP slots and QPs are unique."""
    names = {s.name for s in intent.switches}
    places = {(s.address, s.device_id) for s in intent.switches}
    _unique(problems, "nics", intent.nics, lambda n: n.name, "NIC name")
    classes = {c.name: c for c in intent.classes}
    schedulers = {s.name for s in intent.schedulers}
    for i, nic in enumerate(intent.nics):
        path = f"nics[{i}]"
        if nic.name in names:
            problems.add(path, f"{nic.name!r} is also a switch name")
        if (nic.address, nic.device_id) in places:
            problems.add(path, f"a switch has address {nic.address} and device_id "
                         f"{nic.device_id} too")
        ports = [nic.host_port, nic.net_port, nic.loopback_port]
        if len({p for p in ports if p is not None}) != len([p for p in ports if p is not None]):
            problems.add(path, "host_port, net_port and loopback_port must differ")
        if nic.scheduler is not None and nic.scheduler not in schedulers:
            problems.add(f"{path}.scheduler",
                         f"unknown scheduler {nic.scheduler!r}{_known(schedulers)}")
        _unique(problems, f"{path}.qps", nic.qps, lambda q: q.local_qp, "local_qp")
        _unique(problems, f"{path}.qps", nic.qps, lambda q: q.peer_qp, "peer_qp")
        _unique(problems, f"{path}.qps", nic.qps, lambda q: q.slot, "slot")
        refs = [(f"{path}.qps[{j}].class", q.nic_class) for j, q in enumerate(nic.qps)]
        refs += [(f"{path}.app_tags[{j}].class", t.nic_class)
                 for j, t in enumerate(nic.app_tags)]
        refs += [(f"{path}.class_meters[{j}].class", c.nic_class)
                 for j, c in enumerate(nic.class_meters)]
        _unique(problems, f"{path}.class_meters", nic.class_meters, lambda c: c.nic_class,
                "class")
        for where, name in refs:
            tc = classes.get(name)
            if tc is None:
                problems.add(where, f"unknown class {name!r}{_known(set(classes))}")
            elif tc.stamped_dscp() is None:
                problems.add(where, f"class {name!r} matches no single DSCP and has no "
                             "dscp_rewrite: the NIC stamps its classes' DSCP, give it one")
        if nic.receiver_cnp and nic.loopback_port is None:
            problems.add(f"{path}.receiver_cnp", "receiver CNPs need a loopback_port")


def _unique(problems: Problems, path: str, items: Iterable[Any],
            key: Callable[[Any], Any], what: str) -> None:
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        k = key(item)
        if k in seen:
            problems.add(f"{path}[{index}]", f"duplicate {what} {_show(k)} "
                         f"(also {path}[{seen[k]}])")
        else:
            seen[k] = index


def _show(key: Any) -> str:
    if isinstance(key, tuple):
        return " ".join(map(str, key))
    return repr(key) if isinstance(key, str) else str(key)


# --- classes -----------------------------------------------------------------------------
def _check_classes(intent: m.Intent, problems: Problems) -> None:
    profiles = {p.name for p in intent.ecn_profiles}
    names = {c.name for c in intent.classes}
    for c in intent.classes:
        if c.ecn_profile is not None and c.ecn_profile not in profiles:
            problems.add(f"{c.path}.ecn_profile", f"unknown ECN profile {c.ecn_profile!r}"
                         f"{_known(profiles)}")
        if not c.rules and c.name != intent.default_class:
            problems.add(f"{c.path}.match", "required key is missing (only default_class "
                         "may have no match rules)")
    if intent.default_class is not None and intent.default_class not in names:
        problems.add("default_class", f"unknown class {intent.default_class!r}{_known(names)}")
    _check_overlaps(intent.classes, problems)


def _known(names: set[str]) -> str:
    return f" (known: {', '.join(sorted(names))})" if names else " (none defined)"


def _check_overlaps(classes: tuple[m.TrafficClass, ...], problems: Problems) -> None:
    """Rules of different classes: same priority + overlap, or fully shadowed."""
    rules = [(c, r) for c in classes for r in c.rules]
    reported: set[str] = set()
    for i, (ca, ra) in enumerate(rules):
        for cb, rb in rules[i + 1:]:
            if ca.name == cb.name or not _intersects(ra, rb):
                continue
            if ca.priority == cb.priority:
                _once(problems, reported, rb.path, f"overlaps {ra.path} (class {ca.name!r}) at "
                      f"the same priority {ca.priority}: which class wins is undefined")
                continue
            (hi_c, hi_r), (lo_c, lo_r) = sorted(((ca, ra), (cb, rb)),
                                                key=lambda x: -x[0].priority)
            if _contains(hi_r, lo_r):
                _once(problems, reported, lo_r.path, f"never matches: shadowed by {hi_r.path} "
                      f"(class {hi_c.name!r}, priority {hi_c.priority} > {lo_c.priority})")


def _once(problems: Problems, reported: set[str], path: str, message: str) -> None:
    if path not in reported:
        reported.add(path)
        problems.add(path, message)


def _intersects(a: m.MatchRule, b: m.MatchRule) -> bool:
    for name in m.MATCH_FIELDS:
        (alo, ahi), (blo, bhi) = a.get(name), b.get(name)
        if ahi < blo or bhi < alo:
            return False
    return True


def _contains(outer: m.MatchRule, inner: m.MatchRule) -> bool:
    for name in m.MATCH_FIELDS:
        (olo, ohi), (ilo, ihi) = outer.get(name), inner.get(name)
        if not (olo <= ilo and ihi <= ohi):
            return False
    return True


# --- tenants -------------------------------------------------------------------------------
def _check_vnis(intent: m.Intent, problems: Problems) -> None:
    owner: dict[int, str] = {}
    for index, tenant in enumerate(intent.tenants):
        for vni in tenant.vnis:
            if vni in owner:
                problems.add(f"tenants[{index}].vni", f"VNI {vni} already belongs to tenant "
                             f"{owner[vni]!r}")
            owner[vni] = tenant.name


def _check_seg_rules(tenant: m.Tenant, path: str, problems: Problems) -> None:
    seen: dict[tuple[Any, ...], m.SegRule] = {}
    for rule in tenant.rules:
        key = (rule.src, rule.dst, rule.priority)
        other = seen.get(key)
        if other is not None:
            verdict = "contradicts" if other.action != rule.action else "duplicates"
            problems.add(rule.path, f"{verdict} {other.path} (same src, dst and priority)")
        seen[key] = rule


# --- switches ------------------------------------------------------------------------------
def _check_switch(sw: m.Switch, path: str, schedulers: set[str], problems: Problems) -> None:
    _unique(problems, f"{path}.ports", sw.ports, lambda p: p.number, "port")
    _unique(problems, f"{path}.tunnels", sw.tunnels, lambda t: t.name, "tunnel name")
    _unique(problems, f"{path}.next_hops", sw.next_hops, lambda h: h.name, "next hop name")
    _unique(problems, f"{path}.ecmp_groups", sw.ecmp_groups, lambda g: g.name, "group name")
    _unique(problems, f"{path}.ecmp_groups", sw.ecmp_groups, lambda g: g.id, "group id")
    _unique(problems, f"{path}.routes", sw.routes, lambda r: (r.vrf, r.prefix), "route")
    ports = {p.number for p in sw.ports}
    for i, port in enumerate(sw.ports):
        if port.scheduler is not None and port.scheduler not in schedulers:
            problems.add(f"{path}.ports[{i}].scheduler",
                         f"unknown scheduler {port.scheduler!r}{_known(schedulers)}")
        if port.number == sw.cpu_port:
            problems.add(f"{path}.ports[{i}]", f"port {port.number} is the CPU port")
    tunnels = {t.name for t in sw.tunnels}
    hops = {h.name for h in sw.next_hops}
    groups = {g.name for g in sw.ecmp_groups}
    for i, hop in enumerate(sw.next_hops):
        if ports and hop.port not in ports:
            problems.add(f"{path}.next_hops[{i}].port",
                         f"port {hop.port} is not among the switch's ports")
        if hop.tunnel is not None and hop.tunnel not in tunnels:
            problems.add(f"{path}.next_hops[{i}].tunnel",
                         f"unknown tunnel {hop.tunnel!r}{_known(tunnels)}")
    for i, group in enumerate(sw.ecmp_groups):
        for j, member in enumerate(group.members):
            if member not in hops:
                problems.add(f"{path}.ecmp_groups[{i}].members[{j}]",
                             f"unknown next hop {member!r}{_known(hops)}")
    tunnel_hops = {h.name for h in sw.next_hops if h.tunnel is not None}
    for i, route in enumerate(sw.routes):
        if route.prefix.version == 6 and route.next_hop in tunnel_hops:
            problems.add(f"{path}.routes[{i}].next_hop", f"next hop {route.next_hop!r} is a "
                         "VXLAN tunnel: tailcc tunnels carry IPv4 only")
        if route.next_hop is not None and route.next_hop not in hops:
            problems.add(f"{path}.routes[{i}].next_hop",
                         f"unknown next hop {route.next_hop!r}{_known(hops)}")
        if route.ecmp_group is not None and route.ecmp_group not in groups:
            problems.add(f"{path}.routes[{i}].ecmp_group",
                         f"unknown ECMP group {route.ecmp_group!r}{_known(groups)}")


def _check_scheduler_profiles(intent: m.Intent, problems: Problems) -> None:
    profiles = {p.name for p in intent.ecn_profiles}
    for i, sched in enumerate(intent.schedulers):
        for q in sched.queues:
            if q.ecn_profile is not None and q.ecn_profile not in profiles:
                problems.add(f"schedulers[{i}].queues.{q.queue}.ecn_profile",
                             f"unknown ECN profile {q.ecn_profile!r}{_known(profiles)}")


def _check_fast_cnp(intent: m.Intent, problems: Problems) -> None:
    names = {c.name for c in intent.classes}
    for i, name in enumerate(intent.fast_cnp.classes or ()):
        if name not in names:
            problems.add(f"fast_cnp.classes[{i}]", f"unknown class {name!r}{_known(names)}")
    _unique(problems, "fast_cnp.qp_map", intent.fast_cnp.qp_map,
            lambda e: (str(e.src_ip), str(e.dst_ip), e.dst_qp), "flow (src dst dst_qp)")
    if not intent.fast_cnp.enabled:
        return
    port = intent.fast_cnp.recirculation_port
    for i, switch in enumerate(intent.switches):
        if port == switch.cpu_port:
            problems.add("fast_cnp.recirculation_port",
                         f"{port} is switch {switch.name!r}'s CPU port (switches[{i}]): CNPs "
                         "would reach the controller; pick a port number no link uses")
        elif any(p.number == port for p in switch.ports):
            problems.add("fast_cnp.recirculation_port",
                         f"{port} is a port of switch {switch.name!r} (switches[{i}]): its "
                         "traffic would delay CNPs; pick a port number no link uses")
