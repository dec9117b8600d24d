"""Tenants, tunnels, routes and ECMP -> tenant/vxlan/segmentation/forwarding entries."""

from __future__ import annotations

from controlplane.compile import names as n
from controlplane.intent import model as m
from controlplane.p4rt.entities import EntityBuilder


def tenant_entries(intent: m.Intent, switch: m.Switch, b: EntityBuilder) -> list:
    out = []
    for port in switch.ports:
        if port.tenant is not None:
            out.append(b.table_entity(n.PORT_VRF, match={"ingress_port": port.number},
                                     action=n.SET_PORT_VRF,
                                     params={"vrf": intent.tenant(port.tenant).vrf}))
    vrf_of_vni = {vni: t.vrf for t in intent.tenants for vni in t.vnis}
    for tunnel in switch.tunnels:
        out.append(b.table_entity(n.VXLAN_TERMINATION,
                                 match={"outer_ipv4_dst": str(tunnel.src), "vni": tunnel.vni},
                                 action=n.TERMINATE_VXLAN,
                                 params={"vrf": vrf_of_vni.get(tunnel.vni, 0)}))
    for tenant in intent.tenants:
        out.append(b.table_entity(n.SEGMENT_DEFAULT, match={"vrf": tenant.vrf},
                                 action=tenant.default))
        for rule in tenant.rules:
            match: dict[str, str | int] = {"vrf": tenant.vrf}
            if rule.src.prefixlen:
                match["ipv4_src"] = f"{rule.src.network_address}&&&{rule.src.netmask}"
            if rule.dst.prefixlen:
                match["ipv4_dst"] = f"{rule.dst.network_address}&&&{rule.dst.netmask}"
            out.append(b.table_entity(n.SEGMENT_ACL, match=match, action=rule.action,
                                     priority=rule.priority))
    return out


def forwarding_entries(switch: m.Switch, b: EntityBuilder) -> list:
    """my_station, ECMP groups (member count) and members (one next hop per index:
    a next hop listed twice gets twice the flows), routes."""
    out = [b.table_entity(n.MY_STATION, match={"eth_dst": switch.router_mac},
                         action=n.SET_ROUTER_MAC)]
    hops = {h.name: h for h in switch.next_hops}
    tunnels = {t.name: t for t in switch.tunnels}
    for group in switch.ecmp_groups:
        out.append(b.table_entity(n.ECMP_GROUP, match={"group_id": group.id},
                                  action=n.SET_ECMP_MEMBERS,
                                  params={"count": len(group.members)}))
        for index, name in enumerate(group.members):
            action, params = _hop_action(hops[name], tunnels)
            out.append(b.table_entity(n.ECMP_MEMBER,
                                      match={"group_id": group.id, "member": index},
                                      action=action, params=params))
    groups = {g.name: g.id for g in switch.ecmp_groups}
    for route in switch.routes:
        v6 = route.prefix.version == 6
        match = {"vrf": route.vrf, "ipv6_dst" if v6 else "ipv4_dst": str(route.prefix)}
        if route.ecmp_group is not None:
            action, params = n.SET_ECMP_GROUP, {"group_id": groups[route.ecmp_group]}
        else:
            action, params = _hop_action(hops[route.next_hop or ""], tunnels)
        out.append(b.table_entity(n.ROUTING_V6 if v6 else n.ROUTING_V4, match=match,
                                  action=action, params=params))
    return out


def _hop_action(hop: m.NextHop, tunnels: dict[str, m.Tunnel]) -> tuple[str, dict]:
    params: dict[str, int | str] = {"port": hop.port, "smac": hop.src_mac, "dmac": hop.dst_mac}
    if hop.tunnel is None:
        return n.SET_NEXTHOP, params
    t = tunnels[hop.tunnel]
    return n.SET_NEXTHOP_VXLAN, {**params, "vtep_src": str(t.src), "vtep_dst": str(t.dst),
                                 "vni": t.vni}


def int_config_entry(switch: m.Switch, b: EntityBuilder):
    return b.table_entity(n.INT_CONFIG, default=True, action=n.SET_SWITCH_ID,
                         params={"id": switch.switch_id})
