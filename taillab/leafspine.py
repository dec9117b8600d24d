"""The leaf-spine fabric: addresses, ports, routes with ECMP, and each scheme's switch
configuration, written in the ``simple_switch_CLI`` language softswitch's runtime
channel speaks (the same lines would program BMv2 for everything BMv2 has).

Ports: leaf L's hosts are on ports 0..H-1 and its uplink to spine S on port H+S;
spine S reaches leaf L on port L. Host h (leaf h // H, slot h % H) is 10.0.L.(slot+1).
Traffic to another leaf is spread over the spines by tailcc.p4's ECMP (flow hash over
the 5-tuple, which includes the RoCE UDP source port each QP picks).

Schemes, on identical offered traffic:
*baseline*: one lossless queue for all RDMA (PFC on it), RED-ECN on its depth, CNPs
from the receivers at strict priority; *priority-only*: the semantic classes in their
own queues, the same RED everywhere, receiver CNPs; *tailcc*: the classes, per-class
ECN thresholds and switch-generated Fast CNPs for the elephant classes; *tailcc-nic*:
the tailcc switches, and host NICs that run tailcc_nic.p4 with per-class transmit
queues (taillab/p4nic.py) instead of the class-blind NIC of the other three;
*tailcc-srpt*: tailcc-nic's switches and NICs under the transport of taillab/srpt_nic.py
(its switches weight the large hot KV blocks' queue where MoE runs: taillab/runner.py).
"""

from __future__ import annotations

from taillab.classes import FAST_CNP_QDEPTH_PKTS, role
from taillab.scenario import Buffers, Topology

RECEIVER_QP_OFFSET = 0x100000
CNP_DSCP = 48
CNP_QUEUE = 7                    # strict, above every data class (classes.ROLES)
BASELINE_QUEUE = 3
CNP_SESSION = 1024               # defines.p4 TAILCC_CNP_SESSION
CNP_RECIRCULATION_PORT = 510


def sender_qp(spec: int, sender: int, receiver: int) -> int:
    """One QP per (traffic spec, sender, receiver): spec index + 1 in bits 12..19, hosts
    below (64 hosts at most)."""
    return (spec + 1) << 12 | sender << 6 | receiver


def receiver_qp(spec: int, sender: int, receiver: int) -> int:
    return sender_qp(spec, sender, receiver) + RECEIVER_QP_OFFSET


def udp_sport(qp: int) -> int:
    """The RoCE UDP source port of a QP: ECMP entropy, never RECEIVER_CNP_SPORT."""
    return 49153 + qp % 16000


RECEIVER_CNP_SPORT = 49152


class Fabric:
    """Names, addresses and wiring of a leaf-spine topology."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.H = topo.hosts_per_leaf

    def leaf_of(self, host: int) -> int:
        return host // self.H

    def host_ip(self, host: int) -> str:
        return f"10.0.{self.leaf_of(host)}.{host % self.H + 1}"

    def host_of_ip(self, ip: str) -> int:
        _, _, leaf, slot = ip.split(".")
        return int(leaf) * self.H + int(slot) - 1

    @staticmethod
    def host_mac(host: int) -> str:
        return f"02:00:00:00:{host >> 8:02x}:{host & 0xff:02x}"

    @staticmethod
    def switch_mac(name: str) -> str:
        kind, idx = name[0], int(name[1:])
        return f"02:00:00:ff:{0 if kind == 'l' else 1:02x}:{idx:02x}"

    def switches(self) -> list[str]:
        return [f"l{i}" for i in range(self.topo.leaves)] + \
               [f"s{i}" for i in range(self.topo.spines)]

    def links(self) -> list[tuple[tuple[str, int], tuple[str, int], float]]:
        """Every link once: (node, port), (node, port), rate in bits/s. Hosts are
        ``h<N>`` on port 0."""
        t = self.topo
        out = []
        for h in range(t.num_hosts):
            out.append(((f"h{h}", 0), (f"l{self.leaf_of(h)}", h % self.H), t.host_gbps * 1e9))
        for leaf in range(t.leaves):
            for s in range(t.spines):
                out.append(((f"l{leaf}", self.H + s), (f"s{s}", leaf), t.fabric_gbps * 1e9))
        return out

    def port_rate(self, name: str, port: int) -> float:
        t = self.topo
        if name.startswith("l") and port < self.H:
            return t.host_gbps * 1e9
        return t.fabric_gbps * 1e9

    def path_rates(self, src: int, dst: int) -> list[float]:
        """Link rates along a path (every ECMP path has the same)."""
        t = self.topo
        if self.leaf_of(src) == self.leaf_of(dst):
            return [t.host_gbps * 1e9] * 2
        return [t.host_gbps * 1e9, t.fabric_gbps * 1e9, t.fabric_gbps * 1e9,
                t.host_gbps * 1e9]

    # --- switch configuration -----------------------------------------------------
    def routes(self, name: str) -> list[str]:
        mac = _mac_int(self.switch_mac(name))
        lines = [f"add my_station eth_dst:{mac} set_router_mac()"]
        t = self.topo
        if name.startswith("s"):
            for leaf in range(t.leaves):
                dmac = _mac_int(self.switch_mac(f"l{leaf}"))
                lines.append(f"add routing_v4 vrf:0 ipv4_dst:10.0.{leaf}.0/24 set_nexthop("
                             f"port:{leaf}, smac:{mac}, dmac:{dmac})")
            return lines
        leaf = int(name[1:])
        for slot in range(self.H):
            h = leaf * self.H + slot
            lines.append(f"add routing_v4 vrf:0 ipv4_dst:{self.host_ip(h)}/32 set_nexthop("
                         f"port:{slot}, smac:{mac}, dmac:{_mac_int(self.host_mac(h))})")
        lines.append("add routing_v4 vrf:0 ipv4_dst:10.0.0.0/16 set_ecmp_group(group_id:1)")
        lines.append(f"add ecmp_group group_id:1 set_ecmp_members(count:{t.spines})")
        for s in range(t.spines):
            lines.append(f"add ecmp_member group_id:1 member:{s} set_nexthop(port:{self.H + s}, "
                         f"smac:{mac}, dmac:{_mac_int(self.switch_mac(f's{s}'))})")
        return lines

    def ports(self, name: str) -> list[int]:
        t = self.topo
        return list(range(t.leaves)) if name.startswith("s") else list(range(self.H + t.spines))


def _mac_int(mac: str) -> str:
    return "0x" + mac.replace(":", "")


def _ecn_line(queue: int, profile: int, kmin: int, kmax: int, pmax: float) -> str:
    return (f"add ecn_profile 10 egress_port:0&&&0 queue:{queue}&&&0x7 "
            f"ecn_profile:{profile}&&&0xf set_ecn_profile(kmin_pkts:{kmin}, kmax_pkts:{kmax}, "
            f"pmax_1024:{round(pmax * 1024)}, use_deq_qdepth:0, drop_not_ect_enable:0, "
            f"drop_threshold_pkts:0)")


def _qp_range(spec: int) -> str:
    lo = ((spec + 1) << 12) + RECEIVER_QP_OFFSET
    return f"{lo:#x}..{lo + 0xfff:#x}"


# Schemes whose switches are configured as another's (they differ at the hosts).
SWITCHES_AS = {"tailcc-nic": "tailcc", "tailcc-srpt": "tailcc"}


def switch_scheme(scheme: str) -> str:
    """The scheme whose switch configuration ``scheme`` uses."""
    return SWITCHES_AS.get(scheme, scheme)


def scheme_commands(scheme: str, classes: list[str], buffers: Buffers,
                    ecn_scale: dict[int, int] | None = None) -> list[str]:
    """Classification, ECN and Fast CNP policy of one scheme's switches (routes come
    separately). ``classes``: the semantic class of each traffic spec, by spec index;
    ``ecn_scale``: queue -> factor on its class's ECN thresholds (in packets)."""
    scheme = switch_scheme(scheme)
    scale = ecn_scale or {}
    cnp = (f"add traffic_class 200 is_roce:1&&&1 dscp:{CNP_DSCP}&&&0x3f "
           f"set_class(tc:15, queue:{CNP_QUEUE}, ecn_profile:0)")
    base_ecn = (buffers.ecn_kmin_pkts, buffers.ecn_kmax_pkts, buffers.ecn_pmax)
    if scheme == "baseline":
        return [cnp, f"add traffic_class 10 is_roce:1&&&1 set_class(tc:3, "
                     f"queue:{BASELINE_QUEUE}, ecn_profile:1)",
                _ecn_line(BASELINE_QUEUE, 1, *base_ecn)]
    lines = [cnp]
    profiles: dict[int, tuple[int, int, float]] = {}
    for i, cls in enumerate(classes):
        r = role(cls)
        lines.append(f"add traffic_class {100 - i} is_roce:1&&&1 bth_dst_qp:{_qp_range(i)} "
                     f"set_class(tc:{r.tc}, queue:{r.queue}, ecn_profile:{r.queue})")
        profiles[r.queue] = r.ecn if scheme == "tailcc" else base_ecn
    lines += [_ecn_line(q, q, e[0] * scale.get(q, 1), e[1] * scale.get(q, 1), e[2])
              for q, e in sorted(profiles.items())]
    if scheme == "tailcc":
        triggers = {role(c).tc: FAST_CNP_QDEPTH_PKTS.get(c, buffers.fast_cnp_qdepth_pkts)
                    for c in classes if role(c).fast_cnp}
        for tc, qdepth in sorted(triggers.items()):
            lines.append(f"add fast_cnp_policy 10 traffic_class:{tc}&&&0xf enable_fast_cnp("
                         f"qdepth_threshold:{qdepth}, "
                         f"min_interval:{buffers.fast_cnp_interval_us}, "
                         f"cnp_dscp:{CNP_DSCP}, "
                         f"cnp_priority:{CNP_QUEUE}, keep_ce:0)")
    return lines


def data_queue(scheme: str, cls: str) -> int:
    """The queue (and PFC priority) a class's data uses under a scheme; hosts use it to
    honour pauses, as their NICs map DSCP/class of service to a priority."""
    return BASELINE_QUEUE if scheme == "baseline" else role(cls).queue


def lossless_queues(scheme: str, classes: list[str]) -> list[int]:
    if switch_scheme(scheme) == "baseline":
        return [BASELINE_QUEUE]
    return sorted({role(c).queue for c in classes})


def cnp_flow_commands(fabric: Fabric, elephant_flows: list[tuple[int, int, int]]) -> list[str]:
    """The Fast CNP flow table: (sender IP, receiver IP, receiver QP) -> sender QP, as
    the controller learns it from connection set-up."""
    lines = []
    for index, (spec, s, d) in enumerate(elephant_flows):
        lines.append(f"add cnp_flow ipv4_src:{fabric.host_ip(s)} ipv4_dst:{fabric.host_ip(d)} "
                     f"dst_qp:{receiver_qp(spec, s, d):#x} "
                     f"set_sender_qp(sender_qp:{sender_qp(spec, s, d):#x}, flow_index:{index})")
    return lines
