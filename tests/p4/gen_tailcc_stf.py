"""Generate the STF tests of p4src/tailcc.p4 (tests/p4/*.stf).

Run ``.venv/bin/python tests/p4/gen_tailcc_stf.py`` after changing a test; the .stf
files are committed so the tests run without regenerating.

Expected packets are built from scratch with scapy, never by transforming the input the
way the P4 program does: scapy computes IPv4 checksums, UDP checksums and the RoCEv2 ICRC
(``scapy.contrib.roce``), so they are an independent reference for what the switch must
emit.

Every file runs under both ``softswitch stf`` and p4c's own BMv2 STF driver
(``bmv2-stf``, tests/test_tailcc_stf.py), so entries use only the syntax that driver's
grammar takes, with the same meaning in both:

* numbers are hex (``0x…``), binary (``0b…``) or decimal; no dotted IPv4, no MAC colons;
* a ternary key is a ``0x``/``0b`` literal whose ``*`` digits are wildcards; the mask is
  the digits written, so the literal spells every bit of the key (:func:`tern`);
* an LPM key is a literal whose trailing ``*`` digits give the prefix length (``0x0a0002**``
  is /24) (:func:`lpm`); no ``value/len``;
* ternary tables always get a priority: a higher STF priority wins (the driver passes
  ``10000 - PRIO`` to ``simple_switch_CLI``, where a lower value wins);
* control commands come before the packets: BMv2 reads its pcap inputs only once every
  input port has a packet queued or is closed, so on BMv2 a command written after a
  packet may take effect before that packet is processed;
* the switch runs with ``--priority-queues 8`` (as tailcc is deployed), and BMv2 may
  hold a burst of packets in its strict-priority queues at once, so the packets that
  leave by one port are written in non-increasing queue order (7 first): then strict
  priority and arrival order agree, and softswitch (which sends each packet before it
  takes the next) and BMv2 see the same order.

Range keys (``LOW..HIGH``) have no syntax in that driver at all: see
tests/test_tailcc_stf.py for what that means for the files that program ``traffic_class``.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from scapy.contrib.roce import BTH, CNPPadding
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw, raw

HERE = Path(__file__).resolve().parent

ROUTER_MAC = "00:00:00:00:aa:01"
HOST1_MAC = "00:00:00:00:01:01"   # behind port 1
NH2_MAC = "00:00:00:00:02:02"     # next hop on port 2
NH3_MAC = "00:00:00:00:03:03"     # next hop on port 3
L2_HOST4_MAC = "00:00:00:00:04:04"  # bridged host on port 4


def vxlan(vni: int):
    """A plain RFC 7348 VXLAN header (flags 0x08); scapy's default is VXLAN-GPE-style."""
    return VXLAN(vni=vni, flags=0x08, NextProtocol=0)


def mac_int(mac: str) -> str:
    return "0x" + mac.replace(":", "")


def ip4(addr: str) -> str:
    """An IPv4 address as a full-width hex literal (the STF grammar has no dotted form)."""
    return "0x" + bytes(int(part) for part in addr.split(".")).hex()


def _digits(value: int, mask: int, width: int) -> str:
    """``value`` under ``mask`` as a ``0x``/``0b`` literal spelling all ``width`` bits, with
    ``*`` for each digit whose bits are all wildcards: hex when every nibble of the mask is
    all-ones or all-zeros and ``width`` is a multiple of 4, binary otherwise."""
    if width % 4 == 0 and all((mask >> s) & 0xF in (0, 0xF) for s in range(0, width, 4)):
        return "0x" + "".join("*" if not (mask >> s) & 0xF else f"{(value >> s) & 0xF:x}"
                              for s in range(width - 4, -1, -4))
    return "0b" + "".join("*" if not (mask >> s) & 1 else str((value >> s) & 1)
                          for s in range(width - 1, -1, -1))


def tern(value: int, width: int, mask: int | None = None) -> str:
    """A ternary key value: exact unless ``mask`` is given."""
    full = (1 << width) - 1
    mask = full if mask is None else mask
    return _digits(value & mask, mask, width)


def lpm(prefix: str) -> str:
    """An IPv4 (``a.b.c.d/len``) or IPv6 (``x::/len``) prefix as a starred literal: the
    LPM key of that prefix, and the ternary key matching it (``tern_prefix``)."""
    net = ipaddress.ip_network(prefix)
    return _digits(int(net.network_address), int(net.netmask), net.max_prefixlen)


tern_prefix = lpm


def hexof(pkt) -> str:
    return raw(pkt).hex().upper()


def packet(port: int, pkt) -> str:
    return f"packet {port} {hexof(pkt)}"


def expect(port: int, pkt) -> str:
    return f"expect {port} {hexof(pkt)} $"


def expect_masked(port: int, pkt, wild: list[tuple[int, int]]) -> str:
    """``expect`` with the bytes [offset, offset+length) of each ``wild`` entry as '*'."""
    nibbles = list(hexof(pkt))
    for offset, length in wild:
        for i in range(2 * offset, 2 * (offset + length)):
            nibbles[i] = "*"
    return f"expect {port} {''.join(nibbles)} $"


def header(title: str) -> list[str]:
    return [f"# {title}", "# Generated by tests/p4/gen_tailcc_stf.py -- edit that, not this.", ""]


# Widths of the ternary keys (p4src/include): a ternary literal spells every bit.
W_IS_ROCE, W_IP_PROTO, W_DSCP, W_VNI, W_TC = 1, 8, 6, 24, 4
W_PORT, W_QUEUE, W_ECN_PROFILE = 9, 3, 4


def ecn_profile_key(port: int, queue: int, profile: int) -> str:
    return (f"egress_port:{tern(port, W_PORT)} queue:{tern(queue, W_QUEUE)} "
            f"ecn_profile:{tern(profile, W_ECN_PROFILE)}")


ROUTER_ENTRIES = [
    f"add my_station eth_dst:{mac_int(ROUTER_MAC)} set_router_mac()",
]


def nexthop(port: int, dmac: str) -> str:
    return f"set_nexthop(port:{port}, smac:{mac_int(ROUTER_MAC)}, dmac:{mac_int(dmac)})"


def roce(dst: str, qp: int, payload: int, *, src: str = "10.0.1.1", dscp: int = 26,
         ecn: int = 2, ttl: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC,
         sport: int = 49152, opcode: int = 0x04):
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=1, flags="DF")
            / UDP(sport=sport, dport=4791, chksum=0)
            / BTH(opcode=opcode, dqpn=qp, psn=5, ackreq=1)
            / Raw(b"\x5a" * payload))


def udp(dst: str, dport: int, *, src: str = "10.0.1.1", dscp: int = 0, ecn: int = 0,
        ttl: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC, size: int = 64):
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=7)
            / UDP(sport=33333, dport=dport)
            / Raw(b"\x11" * size))


def tcp(dst: str, dport: int, *, src: str = "10.0.1.1", dscp: int = 0, ttl: int = 64,
        smac: str = HOST1_MAC, dmac: str = ROUTER_MAC):
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=dscp << 2, ttl=ttl, id=9)
            / TCP(sport=40000, dport=dport, flags="S", seq=1000)
            / Raw(b"\x22" * 32))


# --------------------------------------------------------------------------- classify
def classify_stf() -> list[str]:
    lines = header("Semantic classification: class counters and DSCP rewrite.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.2.0/24')} {nexthop(2, NH2_MAC)}",
        # Hot KV-cache: small RoCE packets to the KV-transfer QP range (small-packet
        # promotion: the same QPs' big packets fall through to the storage class).
        f"add traffic_class 100 is_roce:{tern(1, W_IS_ROCE)} bth_dst_qp:0x100..0x1ff "
        "packet_length:0..1100 "
        "set_class(tc:8, queue:5, ecn_profile:1)",
        # Scheduling signals: UDP to the scheduler's port range, DSCP normalised to 46.
        f"add traffic_class 90 ip_proto:{tern(17, W_IP_PROTO)} l4_dport:9000..9099 "
        "set_class_and_dscp(tc:7, queue:5, ecn_profile:1, dscp:46)",
        # Cluster control by DSCP 56.
        f"add traffic_class 80 dscp:{tern(56, W_DSCP)} set_class(tc:10, queue:7, ecn_profile:0)",
        # MoE all-to-all of tenant VNI 300 crossing this switch inside VXLAN: classified
        # on the VNI and the inner DSCP; the (outer) DSCP is normalised to 34.
        f"add traffic_class 95 vni:{tern(300, W_VNI)} dscp:{tern(34, W_DSCP)} "
        "set_class_and_dscp(tc:5, queue:4, ecn_profile:2, dscp:34)",
        # Any other RoCE: storage / weights, DSCP 24.
        f"add traffic_class 50 is_roce:{tern(1, W_IS_ROCE)} "
        "set_class_and_dscp(tc:4, queue:3, ecn_profile:2, dscp:24)",
        "",
    ]
    # The packets leave in the order BMv2's strict-priority queues would send them even
    # if they all waited at once (queue 7, 5, 5, 4, 3, 0): see the module docstring.
    def transit(outer_dscp: int, ttl: int, smac: str, dmac: str):
        return (Ether(src=smac, dst=dmac)
                / IP(src="192.168.5.5", dst="10.0.2.77", tos=outer_dscp << 2, ttl=ttl, id=11)
                / UDP(sport=51000, dport=4789, chksum=0)
                / vxlan(300)
                / Ether(src="00:00:00:00:0a:0a", dst="00:00:00:00:0b:0b")
                / IP(src="172.16.1.1", dst="172.16.2.2", tos=(34 << 2) | 2, id=12)
                / UDP(sport=1111, dport=2222) / Raw(b"\x66" * 32))
    # control by DSCP (queue 7)
    lines.append("# DSCP 56 heartbeat -> control (class 10)")
    lines.append(packet(1, udp("10.0.2.9", 7000, dscp=56)))
    lines.append(expect(2, udp("10.0.2.9", 7000, dscp=56, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)))
    # small RoCE to QP 0x123: hot KV, DSCP untouched (queue 5)
    lines.append("# small RoCE SEND to QP 0x123 -> hot KV (class 8)")
    lines.append(packet(1, roce("10.0.2.5", 0x123, 64)))
    lines.append(expect(2, roce("10.0.2.5", 0x123, 64, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)))
    # scheduler signal (queue 5)
    lines.append("# UDP to port 9000 -> scheduling signal (class 7), DSCP 46")
    lines.append(packet(1, udp("10.0.2.9", 9000)))
    lines.append(expect(2, udp("10.0.2.9", 9000, ttl=63, dscp=46, smac=ROUTER_MAC, dmac=NH2_MAC)))
    # transit VXLAN (not terminated here): VNI 300, inner DSCP 34 -> MoE (queue 4)
    lines.append("# transit VXLAN, VNI 300, inner DSCP 34 -> MoE (class 5), outer DSCP 34")
    lines.append(packet(1, transit(0, 64, HOST1_MAC, ROUTER_MAC)))
    lines.append(expect(2, transit(34, 63, ROUTER_MAC, NH2_MAC)))
    # big RoCE to the same QP: storage, DSCP 26 -> 24 (queue 3)
    lines.append("# 1200-byte RoCE SEND to QP 0x123 -> storage (class 4), DSCP 24")
    lines.append(packet(1, roce("10.0.2.5", 0x123, 1200)))
    lines.append(expect(2, roce("10.0.2.5", 0x123, 1200, ttl=63, dscp=24,
                                smac=ROUTER_MAC, dmac=NH2_MAC)))
    # TCP API call: best effort (queue 0)
    lines.append("# TCP to port 80 -> best effort (class 0)")
    lines.append(packet(1, tcp("10.0.2.9", 80)))
    lines.append(expect(2, tcp("10.0.2.9", 80, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)))
    lines += [
        "",
        "check_counter class_counter(5) packets == 1",
        "check_counter class_counter(8) packets == 1",
        "check_counter class_counter(4) packets == 1",
        "check_counter class_counter(7) packets == 1",
        "check_counter class_counter(10) packets == 1",
        "check_counter class_counter(0) packets == 1",
    ]
    return lines


# ------------------------------------------------------------------------- forwarding
def forwarding_stf() -> list[str]:
    lines = header("LPM forwarding, TTL/hop-limit decrement, L2 fallback, drops.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.0.0/8')} {nexthop(3, NH3_MAC)}",
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.2.0/24')} {nexthop(2, NH2_MAC)}",
        f"add routing_v6 vrf:0 ipv6_dst:{lpm('2001:db8::/32')} "
        f"{nexthop(2, NH2_MAC)}",
        f"add l2_exact eth_dst:{mac_int(L2_HOST4_MAC)} l2_forward(port:4)",
        "",
    ]
    lines.append("# longest prefix: 10.0.2.7 -> /24 -> port 2, TTL 64 -> 63")
    lines.append(packet(1, udp("10.0.2.7", 5000)))
    lines.append(expect(2, udp("10.0.2.7", 5000, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)))
    lines.append("# 10.9.9.9 -> /8 -> port 3")
    lines.append(packet(1, udp("10.9.9.9", 5000, ttl=9)))
    lines.append(expect(3, udp("10.9.9.9", 5000, ttl=8, smac=ROUTER_MAC, dmac=NH3_MAC)))
    lines.append("# TTL 1: dropped, counted as DROP_TTL_EXPIRED (4)")
    lines.append(packet(1, udp("10.0.2.7", 5000, ttl=1)))
    v6 = (Ether(src=HOST1_MAC, dst=ROUTER_MAC)
          / IPv6(src="2001:db8:1::1", dst="2001:db8:2::2", hlim=64, tc=26 << 2 | 2)
          / UDP(sport=1000, dport=2000) / Raw(b"\x33" * 40))
    v6_out = (Ether(src=ROUTER_MAC, dst=NH2_MAC)
              / IPv6(src="2001:db8:1::1", dst="2001:db8:2::2", hlim=63, tc=26 << 2 | 2)
              / UDP(sport=1000, dport=2000) / Raw(b"\x33" * 40))
    lines.append("# IPv6 2001:db8::/32 -> port 2, hop limit 64 -> 63")
    lines.append(packet(1, v6))
    lines.append(expect(2, v6_out))
    lines.append("# not for the router MAC: L2 exact -> port 4, unchanged")
    bridged = udp("10.0.2.7", 5000, dmac=L2_HOST4_MAC)
    lines.append(packet(1, bridged))
    lines.append(expect(4, bridged))
    lines.append("# unknown MAC: dropped (DROP_NO_ROUTE, 5)")
    lines.append(packet(1, udp("10.0.2.7", 5000, dmac="00:00:00:00:09:09")))
    lines.append("# routed but no route: L2 fallback misses, dropped (DROP_NO_ROUTE, 5)")
    lines.append(packet(1, udp("20.0.0.1", 5000)))
    lines += [
        "",
        "check_counter ingress_drop_counter(4) packets == 1",
        "check_counter ingress_drop_counter(5) packets == 2",
    ]
    return lines


# ----------------------------------------------------------------------- segmentation
def segmentation_stf() -> list[str]:
    lines = header("Micro-segmentation: host/subnet rules, tenant default, deny counters.")
    lines += ROUTER_ENTRIES
    lines += [
        "add port_vrf ingress_port:1 set_port_vrf(vrf:5)",
        "add port_vrf ingress_port:6 set_port_vrf(vrf:6)",
        f"add routing_v4 vrf:5 ipv4_dst:{lpm('10.1.0.0/24')} {nexthop(2, NH2_MAC)}",
        f"add routing_v4 vrf:6 ipv4_dst:{lpm('10.1.0.0/24')} {nexthop(2, NH2_MAC)}",
        # tenant 5: A1 -> A5 denied (host rule), the subnet allowed, everything else
        # falls to the tenant default: deny.
        # The /24 rule goes in first: the /32 deny must win by its higher priority, not
        # by having been added first.
        f"add segment_acl 50 vrf:5 ipv4_src:{tern_prefix('10.1.0.0/24')} "
        f"ipv4_dst:{tern_prefix('10.1.0.0/24')} allow()",
        f"add segment_acl 100 vrf:5 ipv4_src:{tern_prefix('10.1.0.1/32')} "
        f"ipv4_dst:{tern_prefix('10.1.0.5/32')} deny()",
        "add segment_default vrf:5 deny()",
        "",
    ]
    lines.append("# tenant 5: A1 -> A2 allowed by the /24 rule")
    lines.append(packet(1, udp("10.1.0.2", 5000, src="10.1.0.1")))
    lines.append(expect(2, udp("10.1.0.2", 5000, src="10.1.0.1", ttl=63,
                               smac=ROUTER_MAC, dmac=NH2_MAC)))
    lines.append("# tenant 5: A1 -> A5 denied by the /32 rule")
    lines.append(packet(1, udp("10.1.0.5", 5000, src="10.1.0.1")))
    lines.append("# tenant 5: 10.1.9.9 -> A2 matches no rule: tenant default deny")
    lines.append(packet(1, udp("10.1.0.2", 5000, src="10.1.9.9")))
    lines.append("# tenant 6 has no rules and no default entry: allowed")
    lines.append(packet(6, udp("10.1.0.5", 5000, src="10.1.0.1")))
    lines.append(expect(2, udp("10.1.0.5", 5000, src="10.1.0.1", ttl=63,
                               smac=ROUTER_MAC, dmac=NH2_MAC)))
    lines += [
        "",
        "check_counter segment_deny_counter(5) packets == 2",
        "check_counter segment_deny_counter(6) packets == 0",
        "check_counter ingress_drop_counter(3) packets == 2",
    ]
    return lines


# ---------------------------------------------------------------------------- rfc6040
# RFC 6040 section 4.2, [inner][outer] -> result (None: drop)
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
RFC6040 = {
    NOT_ECT: {NOT_ECT: NOT_ECT, ECT0: NOT_ECT, ECT1: NOT_ECT, CE: None},
    ECT0: {NOT_ECT: ECT0, ECT0: ECT0, ECT1: ECT1, CE: CE},
    ECT1: {NOT_ECT: ECT1, ECT0: ECT1, ECT1: ECT1, CE: CE},
    CE: {NOT_ECT: CE, ECT0: CE, ECT1: CE, CE: CE},
}
ECN_NAME = {NOT_ECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE"}


def inner_packet(inner_ecn: int, ttl: int, smac: str, dmac: str):
    return (Ether(src=smac, dst=dmac)
            / IP(src="172.16.1.1", dst="172.16.2.2", tos=(10 << 2) | inner_ecn, ttl=ttl, id=3)
            / UDP(sport=1234, dport=5678)
            / Raw(b"\x44" * 48))


def rfc6040_stf() -> list[str]:
    lines = header("VXLAN decapsulation combines outer and inner ECN per RFC 6040 4.2.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add vxlan_termination outer_ipv4_dst:{ip4('192.168.0.1')} vni:100 "
        "terminate_vxlan(vrf:7)",
        f"add routing_v4 vrf:7 ipv4_dst:{lpm('172.16.0.0/16')} {nexthop(2, NH2_MAC)}",
        "",
    ]
    for inner in (NOT_ECT, ECT0, ECT1, CE):
        for outer in (NOT_ECT, ECT0, ECT1, CE):
            pkt = (Ether(src="00:00:00:00:0e:0e", dst=ROUTER_MAC)
                   / IP(src="192.168.0.9", dst="192.168.0.1", tos=(26 << 2) | outer, ttl=60)
                   / UDP(sport=50000, dport=4789, chksum=0)
                   / vxlan(100)
                   / inner_packet(inner, 64, HOST1_MAC, ROUTER_MAC))
            result = RFC6040[inner][outer]
            lines.append(f"# inner {ECN_NAME[inner]}, outer {ECN_NAME[outer]} -> "
                         f"{'drop' if result is None else ECN_NAME[result]}")
            lines.append(packet(1, pkt))
            if result is not None:
                lines.append(expect(2, inner_packet(result, 63, ROUTER_MAC, NH2_MAC)))
    lines += [
        "",
        "check_counter vxlan_decap_counter(0) packets == 15",
        "check_counter vxlan_decap_counter(1) packets == 1",
        "check_counter ingress_drop_counter(2) packets == 1",
    ]
    return lines


# -------------------------------------------------------------------------- robustness
def robustness_stf() -> list[str]:
    lines = header("Malformed packets end in a counted parser error; PFC is counted, "
                   "never forwarded.")
    lines += [
        f"add l2_exact eth_dst:{mac_int(L2_HOST4_MAC)} l2_forward(port:4)",
        "",
    ]
    full = udp("10.0.2.7", 5000, dmac=L2_HOST4_MAC)
    truncated = raw(full)[:14 + 10]
    lines.append("# IPv4 header cut after 10 bytes: PacketTooShort (code 1), default drop")
    lines.append(f"packet 1 {truncated.hex().upper()}")
    bad_version = bytearray(raw(full))
    bad_version[14] = 0x55  # version 5, IHL 5
    lines.append("# IP version 5 behind EtherType 0x0800: IPv4IncorrectVersion (code 5), drop")
    lines.append(f"packet 1 {bytes(bad_version).hex().upper()}")
    bad_csum = bytearray(raw(full))
    bad_csum[14 + 10] ^= 0xFF
    lines.append("# corrupted IPv4 header checksum: checksum error (code 8), drop")
    lines.append(f"packet 1 {bytes(bad_csum).hex().upper()}")
    pfc = (Ether(src=HOST1_MAC, dst="01:80:c2:00:00:01", type=0x8808)
           / Raw(bytes.fromhex("0101" "0021" + "ffff" * 8))
           / Raw(b"\x00" * 26))
    lines.append("# PFC pausing priorities 0 and 5: counted per port and priority, dropped")
    lines.append(packet(1, pfc))
    lines.append("# the well-formed frame goes to the L2 host on port 4: the drops above are "
                 "the parser's, and port 4 is watched")
    lines.append(packet(1, full))
    lines.append(expect(4, full))
    lines += [
        "",
        "check_counter parser_error_counter(1) packets == 1",
        "check_counter parser_error_counter(5) packets == 1",
        "check_counter parser_error_counter(8) packets == 1",
        "check_counter ingress_drop_counter(0) packets == 3",
        "check_counter mac_control_frame_counter(1) packets == 1",
        "check_counter pfc_priority_counter(8) packets == 1",
        "check_counter pfc_priority_counter(13) packets == 1",
        "check_counter pfc_priority_counter(9) packets == 0",
        "check_counter ingress_drop_counter(1) packets == 1",
    ]
    return lines


def parser_error_policy_stf() -> list[str]:
    # Its own file, not the end of robustness.stf: on BMv2 the policy entry could take
    # effect before that file's default-drop packets (see the module docstring).
    lines = header("parser_error_policy: a truncated packet is forwarded with what was "
                   "parsed instead of dropped.")
    lines += [
        f"add l2_exact eth_dst:{mac_int(L2_HOST4_MAC)} l2_forward(port:4)",
        "add parser_error_policy error_code:1 forward_malformed()",
        "",
    ]
    truncated = raw(udp("10.0.2.7", 5000, dmac=L2_HOST4_MAC))[:14 + 10]
    lines.append("# policy: forward truncated packets with what was parsed (L2 here)")
    lines.append(f"packet 1 {truncated.hex().upper()}")
    lines.append(f"expect 4 {truncated.hex().upper()} $")
    lines += [
        "",
        "check_counter parser_error_counter(1) packets == 1",
        "check_counter ingress_drop_counter(0) packets == 0",
    ]
    return lines


# --------------------------------------------------------------------------- fast CNP
def cnp_packet(dst_mac: str, src_ip: str, dst_ip: str, sport: int, sender_qp: int,
               vlan: int | None = None):
    l2 = Ether(src=ROUTER_MAC, dst=dst_mac)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    return (l2
            / IP(src=src_ip, dst=dst_ip, tos=48 << 2, ttl=64, id=0, flags="DF")
            / UDP(sport=sport, dport=4791, chksum=0)
            / BTH(opcode=0x81, becn=1, dqpn=sender_qp, pkey=0xFFFF, psn=0)
            / CNPPadding())


def fast_cnp_stf() -> list[str]:
    lines = header("Fast CNP: a RoCE data packet joining a congested queue makes the switch "
                   "send a CNP to the sender; rate limit, unresolved flows, keep_ce = 0.")
    # Egress publishes each (port, queue)'s depth in queue_depth on every dequeue, and
    # p4c's driver runs every command before the first packet (BMv2 reads its inputs
    # when all of them have a packet). So each scenario sends to its own port, whose
    # slot port*8+5 (hot KV, queue 5) is written once, up front, and read by that
    # scenario's packet before anything dequeues there.
    scenarios = {2: 20, 4: 20, 5: 20, 6: 5, 7: 20}     # egress port -> published depth
    lines += ROUTER_ENTRIES
    lines += [f"add routing_v4 vrf:0 ipv4_dst:{lpm(f'10.0.{port}.0/24')} "
              f"{nexthop(port, NH2_MAC)}" for port in scenarios]
    lines += [
        f"add traffic_class 100 is_roce:{tern(1, W_IS_ROCE)} "
        "set_class(tc:8, queue:5, ecn_profile:1)",
        # the class's queue marks every ECT packet (Kmax 0) on any port, so suppression
        # is visible
        f"add ecn_profile 10 egress_port:{tern(0, W_PORT, 0)} queue:{tern(5, W_QUEUE)} "
        f"ecn_profile:{tern(1, W_ECN_PROFILE)} "
        "set_ecn_profile(kmin_pkts:0, kmax_pkts:0, pmax_1024:1024, use_deq_qdepth:0, "
        "drop_not_ect_enable:0, drop_threshold_pkts:0)",
        # keep_ce 0: once the sender has its CNP the data packet is not marked as well;
        # a huge interval makes the rate limit deterministic in the test
        f"add fast_cnp_policy 10 traffic_class:{tern(8, W_TC)} "
        "enable_fast_cnp(qdepth_threshold:10, min_interval:1000000000, cnp_dscp:48, "
        "cnp_priority:6, keep_ce:0)",
        # flows to 10.0.2.5 and 10.0.4.5 share rate-limit slot 7 (one sender QP)
        f"add cnp_flow ipv4_src:{ip4('10.0.1.1')} ipv4_dst:{ip4('10.0.2.5')} dst_qp:0x123 "
        "set_sender_qp(sender_qp:0x456, flow_index:7)",
        f"add cnp_flow ipv4_src:{ip4('10.0.1.1')} ipv4_dst:{ip4('10.0.4.5')} dst_qp:0x123 "
        "set_sender_qp(sender_qp:0x456, flow_index:7)",
        f"add cnp_flow ipv4_src:{ip4('10.0.1.2')} ipv4_dst:{ip4('10.0.7.5')} dst_qp:0x124 "
        "set_sender_qp(sender_qp:0x789, flow_index:8)",
        # session CNP_SESSION (1024) goes to the recirculation port (510): the CNP is
        # built there and recirculated out of the data's ingress port
        "mirroring_add 1024 510",
    ]
    lines += [f"register_write queue_depth {port * 8 + 5} {depth}"
              for port, depth in scenarios.items()]
    lines.append("")

    def data_in(dst: str, qp: int):
        return roce(dst, qp, 256, sport=49999)

    def data_out(dst: str, qp: int, ecn: int):
        return roce(dst, qp, 256, sport=49999, ttl=63, ecn=ecn, smac=ROUTER_MAC,
                    dmac=NH2_MAC)

    lines.append("# 1. queue (2, 5) holds 20 packets (threshold 10): CNP to the sender, "
                 "data not marked (keep_ce 0)")
    lines.append(packet(1, data_in("10.0.2.5", 0x123)))
    lines.append(expect(2, data_out("10.0.2.5", 0x123, ECN_ECT0_VALUE)))
    cnp = cnp_packet(HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456)
    assert len(raw(cnp)) == 74
    lines.append(expect(1, cnp))

    lines.append("# 2. the same sender QP again within the interval (to 10.0.4.5, queue "
                 "(4, 5) also congested): rate-limited, so marked CE")
    lines.append(packet(1, data_in("10.0.4.5", 0x123)))
    lines.append(expect(4, data_out("10.0.4.5", 0x123, 3)))

    lines.append("# 3. unknown flow: nothing sent, counted as unresolved, marked CE")
    lines.append(packet(1, data_in("10.0.5.5", 0x999)))
    lines.append(expect(5, data_out("10.0.5.5", 0x999, 3)))

    lines.append("# 4. queue below the threshold: no CNP decision, marked CE by ECN")
    lines.append(packet(1, data_in("10.0.6.5", 0x123)))
    lines.append(expect(6, data_out("10.0.6.5", 0x123, 3)))

    lines.append("# 5. VLAN-tagged flow from port 3: a 78-byte tagged CNP goes back out of "
                 "port 3")

    def tagged(ttl: int, smac: str, dmac: str):
        return (Ether(src=smac, dst=dmac) / Dot1Q(vlan=10)
                / IP(src="10.0.1.2", dst="10.0.7.5", tos=(26 << 2) | 2, ttl=ttl, id=1,
                     flags="DF")
                / UDP(sport=50001, dport=4791, chksum=0)
                / BTH(opcode=0x0a, dqpn=0x124, psn=5)
                / Raw(bytes(16) + b"\x5a" * 64))   # RETH + data: RDMA WRITE only
    lines.append(packet(3, tagged(64, "00:00:00:00:01:02", ROUTER_MAC)))
    lines.append(expect(7, tagged(63, ROUTER_MAC, NH2_MAC)))
    tagged_cnp = cnp_packet("00:00:00:00:01:02", "10.0.7.5", "10.0.1.2", 50001, 0x789, vlan=10)
    assert len(raw(tagged_cnp)) == 78
    lines.append(expect(3, tagged_cnp))
    lines += [
        "",
        "check_counter fast_cnp_counter(0) packets == 2",
        "check_counter fast_cnp_counter(1) packets == 1",
        "check_counter fast_cnp_counter(2) packets == 1",
        "check_counter fast_cnp_built_counter(0) packets == 2",
    ]
    lines += [f"check_counter ecn_mark_counter({port * 8 + 5}) packets == 1"
              for port in (4, 5, 6)]
    return lines


ECN_ECT0_VALUE = 2


# ------------------------------------------------------------------------ ECN marking
def ecn_marking_stf() -> list[str]:
    lines = header("Per-class ECN marking in egress: ECT marked above Kmax, CE and Not-ECT "
                   "untouched, Not-ECT dropped above the drop threshold when enabled.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.2.0/24')} {nexthop(2, NH2_MAC)}",
        f"add routing_v6 vrf:0 ipv6_dst:{lpm('2001:db8::/32')} "
        f"{nexthop(2, NH2_MAC)}",
        "add traffic_class 10 l4_dport:7000..7999 set_class(tc:6, queue:4, ecn_profile:3)",
        "add traffic_class 10 l4_dport:8000..8999 set_class(tc:2, queue:3, ecn_profile:4)",
        # profile 3 on (port 2, queue 4): Kmax 0 -> every ECT packet is above Kmax
        f"add ecn_profile 10 {ecn_profile_key(2, 4, 3)} "
        "set_ecn_profile(kmin_pkts:0, kmax_pkts:0, pmax_1024:1024, use_deq_qdepth:0, "
        "drop_not_ect_enable:0, drop_threshold_pkts:0)",
        # profile 4 on (port 2, queue 3): Kmin 1000, so never marks here; drops Not-ECT
        f"add ecn_profile 10 {ecn_profile_key(2, 3, 4)} "
        "set_ecn_profile(kmin_pkts:1000, kmax_pkts:2000, pmax_1024:1024, use_deq_qdepth:1, "
        "drop_not_ect_enable:1, drop_threshold_pkts:0)",
        "",
    ]
    for ecn_in, ecn_out in ((ECT0, CE), (ECT1, CE), (CE, CE), (NOT_ECT, NOT_ECT)):
        lines.append(f"# profile 3: {ECN_NAME[ecn_in]} -> {ECN_NAME[ecn_out]}")
        lines.append(packet(1, udp("10.0.2.9", 7000, dscp=32, ecn=ecn_in)))
        lines.append(expect(2, udp("10.0.2.9", 7000, dscp=32, ecn=ecn_out, ttl=63,
                                   smac=ROUTER_MAC, dmac=NH2_MAC)))

    def v6(ecn: int, hlim: int, smac: str, dmac: str):
        return (Ether(src=smac, dst=dmac)
                / IPv6(src="2001:db8:1::1", dst="2001:db8:2::2", hlim=hlim, tc=32 << 2 | ecn)
                / UDP(sport=1000, dport=7001) / Raw(b"\x33" * 40))
    lines.append("# profile 3, IPv6: ECT(0) -> CE")
    lines.append(packet(1, v6(ECT0, 64, HOST1_MAC, ROUTER_MAC)))
    lines.append(expect(2, v6(CE, 63, ROUTER_MAC, NH2_MAC)))
    lines.append("# profile 4: ECT(0) below Kmin stays ECT(0)")
    lines.append(packet(1, udp("10.0.2.9", 8000, dscp=18, ecn=ECT0)))
    lines.append(expect(2, udp("10.0.2.9", 8000, dscp=18, ecn=ECT0, ttl=63,
                               smac=ROUTER_MAC, dmac=NH2_MAC)))
    lines.append("# profile 4: Not-ECT at the drop threshold is dropped")
    lines.append(packet(1, udp("10.0.2.9", 8000, dscp=18, ecn=NOT_ECT)))
    lines += [
        "",
        "check_counter ecn_mark_counter(20) packets == 3",
        "check_counter ecn_mark_counter(19) packets == 0",
        "check_counter ecn_drop_counter(19) packets == 1",
        "check_counter ecn_drop_counter(20) packets == 0",
    ]
    return lines


# ------------------------------------------------------------------------ VXLAN encap
def vxlan_encap_stf() -> list[str]:
    lines = header("VXLAN encapsulation: outer headers, ECN copied from inner (RFC 6040), "
                   "RoCE BTH and RETH kept in place inside the tunnel.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('172.16.9.0/24')} set_nexthop_vxlan(port:3, "
        f"smac:{mac_int(ROUTER_MAC)}, dmac:{mac_int(NH3_MAC)}, vtep_src:{ip4('192.168.0.1')}, "
        f"vtep_dst:{ip4('192.168.0.2')}, vni:200)",
        "",
    ]
    inner_len = {}

    def tunnel(inner_pkt, dscp: int, ecn: int):
        inner_len["n"] = len(raw(inner_pkt[IP]))
        return (Ether(src=ROUTER_MAC, dst=NH3_MAC)
                / IP(src="192.168.0.1", dst="192.168.0.2", tos=(dscp << 2) | ecn, ttl=64, id=0,
                     flags="DF")
                / UDP(sport=0xC000, dport=4789, chksum=0)
                / vxlan(200)
                / inner_pkt)
    # UDP source port = 0xC000 | flow_hash[13:0]: the two bytes after the outer IP header
    sport_bytes = [(14 + 20, 2)]
    for ecn in (ECT0, CE, NOT_ECT):
        lines.append(f"# UDP, inner {ECN_NAME[ecn]}: outer ECN {ECN_NAME[ecn]}, DSCP copied")
        inp = udp("172.16.9.9", 6000, dscp=10, ecn=ecn)
        inner = udp("172.16.9.9", 6000, dscp=10, ecn=ecn, ttl=63, smac=ROUTER_MAC,
                    dmac=NH3_MAC)
        lines.append(packet(1, inp))
        lines.append(expect_masked(3, tunnel(inner, 10, ecn), sport_bytes))
    lines.append("# RoCE RDMA WRITE only (BTH + RETH) inside the tunnel")
    inp = (Ether(src=HOST1_MAC, dst=ROUTER_MAC)
           / IP(src="10.0.1.1", dst="172.16.9.5", tos=(26 << 2) | 2, ttl=64, id=1, flags="DF")
           / UDP(sport=49152, dport=4791, chksum=0)
           / BTH(opcode=0x0a, dqpn=0x321, psn=9)
           / Raw(bytes(range(16)) + b"\x5a" * 64))
    inner = (Ether(src=ROUTER_MAC, dst=NH3_MAC)
             / IP(src="10.0.1.1", dst="172.16.9.5", tos=(26 << 2) | 2, ttl=63, id=1,
                  flags="DF")
             / UDP(sport=49152, dport=4791, chksum=0)
             / BTH(opcode=0x0a, dqpn=0x321, psn=9)
             / Raw(bytes(range(16)) + b"\x5a" * 64))
    lines.append(packet(1, inp))
    lines.append(expect_masked(3, tunnel(inner, 26, ECT0), sport_bytes))
    lines += [
        "",
        "check_counter vxlan_encap_counter(0) packets == 4",
    ]
    return lines


# ----------------------------------------------------------------- CPU port and INT
CPU_PORT = 255


def packetio_int_stf() -> list[str]:
    lines = header("CPU port packet-out/packet-in and INT-MD style hop records.")
    lines += ROUTER_ENTRIES
    lines += [
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.2.0/24')} {nexthop(2, NH2_MAC)}",
        f"add routing_v4 vrf:0 ipv4_dst:{lpm('10.0.9.0/24')} punt_to_cpu()",
        "setdefault int_config set_switch_id(id:0xabcd)",
        "",
    ]
    frame = udp("10.0.5.5", 5000, smac=ROUTER_MAC, dmac="00:00:00:00:07:07")
    lines.append("# packet-out to port 3 (egress_port 3 in the first 9 bits): sent as is")
    lines.append(f"packet {CPU_PORT} {(3 << 7).to_bytes(2, 'big').hex().upper()}{hexof(frame)}")
    lines.append(expect(3, frame))
    lines.append("# route to 10.0.9.0/24 punts: packet-in header with ingress port 1, "
                 "frame unchanged")
    punted = udp("10.0.9.1", 5000)
    lines.append(packet(1, punted))
    lines.append(f"expect {CPU_PORT} {(1 << 7).to_bytes(2, 'big').hex().upper()}"
                 f"{hexof(punted)} $")

    def probe(records: list[bytes], hop_count: int, max_hops: int, ttl: int, smac: str,
              dmac: str):
        shim = bytes([hop_count, max_hops, 0, 0])
        return (Ether(src=smac, dst=dmac)
                / IP(src="10.0.1.1", dst="10.0.2.8", ttl=ttl, id=21)
                / UDP(sport=40001, dport=6765, chksum=0)
                / Raw(shim + b"".join(records) + b"\x77" * 24))

    def record(switch_id: int, in_port: int, out_port: int, queue: int) -> bytes:
        return (switch_id.to_bytes(4, "big") + in_port.to_bytes(2, "big")
                + out_port.to_bytes(2, "big") + bytes([queue]) + bytes(3) + bytes(4))

    earlier = record(0x1111, 7, 8, 5)
    mine = record(0xABCD, 1, 2, 0)
    # enq_qdepth (3 bytes) and deq_timedelta (4 bytes) of the new record vary
    record_off = 14 + 20 + 8 + 4
    varying = [(record_off + 9, 7)]
    lines.append("# probe with no records: gets this switch's record")
    lines.append(packet(1, probe([], 0, 4, 64, HOST1_MAC, ROUTER_MAC)))
    lines.append(expect_masked(2, probe([mine], 1, 4, 63, ROUTER_MAC, NH2_MAC), varying))
    lines.append("# probe with one record: ours goes first")
    lines.append(packet(1, probe([earlier], 1, 4, 64, HOST1_MAC, ROUTER_MAC)))
    lines.append(expect_masked(2, probe([mine, earlier], 2, 4, 63, ROUTER_MAC, NH2_MAC),
                               varying))
    lines.append("# probe at its max_hops: forwarded without a new record")
    lines.append(packet(1, probe([earlier], 1, 1, 64, HOST1_MAC, ROUTER_MAC)))
    lines.append(expect(2, probe([earlier], 1, 1, 63, ROUTER_MAC, NH2_MAC)))
    return lines


TESTS = {
    "classify.stf": classify_stf,
    "forwarding.stf": forwarding_stf,
    "segmentation.stf": segmentation_stf,
    "rfc6040.stf": rfc6040_stf,
    "robustness.stf": robustness_stf,
    "parser_error_policy.stf": parser_error_policy_stf,
    "fast_cnp.stf": fast_cnp_stf,
    "ecn_marking.stf": ecn_marking_stf,
    "vxlan_encap.stf": vxlan_encap_stf,
    "packetio_int.stf": packetio_int_stf,
}


def main() -> None:
    for name, build in TESTS.items():
        (HERE / name).write_text("\n".join(build()) + "\n")
        print(f"wrote tests/p4/{name}")


if __name__ == "__main__":
    main()
