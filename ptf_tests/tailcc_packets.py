"""Packets of the tailcc PTF suites, built from scratch with scapy.

Every expected packet is written out field by field (scapy computes the IPv4 and UDP
checksums and the RoCEv2 ICRC), never derived by applying the P4 program's rewrite to
the input, so a test compares the switch against an independent reference. The
addresses and helpers mirror ``tests/p4/gen_tailcc_stf.py`` on purpose:
``tests/test_ptf_suites.py`` checks that both build byte-identical packets for the
same scenarios, so the STF and PTF suites test the same thing.
"""

from __future__ import annotations

from scapy.contrib.mac_control import (
    MACControl,
    MACControlClassBasedFlowControl,
    MACControlPause,
)
from scapy.contrib.roce import BTH, CNPPadding, cnp
from scapy.fields import BitField, ByteField, FieldLenField, IntField, PacketListField, ShortField
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw, bind_layers

ROUTER_MAC = "00:00:00:00:aa:01"
HOST1_MAC = "00:00:00:00:01:01"     # behind port 1
HOST3_MAC = "00:00:00:00:01:02"     # a second sender, behind port 3
NH2_MAC = "00:00:00:00:02:02"       # next hop on port 2
NH3_MAC = "00:00:00:00:03:03"       # next hop on port 3
NH4_MAC = "00:00:00:00:04:04"       # next hop / bridged host on port 4

NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
ECN_NAME = {NOT_ECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE"}
# RFC 6040 section 4.2: RFC6040[inner][outer] -> inner ECN after decapsulation
# (None: the packet must be dropped).
RFC6040: dict[int, dict[int, int | None]] = {
    NOT_ECT: {NOT_ECT: NOT_ECT, ECT0: NOT_ECT, ECT1: NOT_ECT, CE: None},
    ECT0: {NOT_ECT: ECT0, ECT0: ECT0, ECT1: ECT1, CE: CE},
    ECT1: {NOT_ECT: ECT1, ECT0: ECT1, ECT1: ECT1, CE: CE},
    CE: {NOT_ECT: CE, ECT0: CE, ECT1: CE, CE: CE},
}
INT_UDP_PORT = 6765
# Fast CNP: the clone session (defines.p4 TAILCC_CNP_SESSION) and the port it points at
# (the intent's fast_cnp.recirculation_port), where the CNP is built and recirculated.
CNP_SESSION = 1024
CNP_RECIRCULATION_PORT = 510


def vxlan(vni: int) -> VXLAN:
    """A plain RFC 7348 VXLAN header (flags 0x08); scapy's default is VXLAN-GPE-style."""
    return VXLAN(vni=vni, flags=0x08, NextProtocol=0)


def roce(dst: str, qp: int, payload: int, *, src: str = "10.0.1.1", dscp: int = 26,
         ecn: int = ECT0, ttl: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC,
         sport: int = 49152, opcode: int = 0x04, psn: int = 5) -> Packet:
    """A RoCEv2 RC SEND-only (by default) with ``payload`` bytes and its ICRC."""
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=1, flags="DF")
            / UDP(sport=sport, dport=4791, chksum=0)
            / BTH(opcode=opcode, dqpn=qp, psn=psn, ackreq=1)
            / Raw(b"\x5a" * payload))


def udp(dst: str, dport: int, *, src: str = "10.0.1.1", dscp: int = 0, ecn: int = NOT_ECT,
        ttl: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC, size: int = 64,
        sport: int = 33333, ident: int = 7) -> Packet:
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=ident)
            / UDP(sport=sport, dport=dport)
            / Raw(b"\x11" * size))


def tcp(dst: str, dport: int, *, src: str = "10.0.1.1", dscp: int = 0, ttl: int = 64,
        smac: str = HOST1_MAC, dmac: str = ROUTER_MAC) -> Packet:
    return (Ether(src=smac, dst=dmac)
            / IP(src=src, dst=dst, tos=dscp << 2, ttl=ttl, id=9)
            / TCP(sport=40000, dport=dport, flags="S", seq=1000)
            / Raw(b"\x22" * 32))


def udp6(dst: str, dport: int, *, src: str = "2001:db8:1::1", dscp: int = 26, ecn: int = ECT0,
         hlim: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC) -> Packet:
    return (Ether(src=smac, dst=dmac)
            / IPv6(src=src, dst=dst, hlim=hlim, tc=(dscp << 2) | ecn)
            / UDP(sport=1000, dport=dport) / Raw(b"\x33" * 40))


def cnp_packet(dst_mac: str, src_ip: str, dst_ip: str, sport: int, sender_qp: int,
               vlan: int | None = None, dscp: int = 48) -> Packet:
    """The CNP the switch must send to the sender: scapy's ``cnp()`` (BTH opcode 0x81,
    BECN, P_Key 0xffff, 16 reserved bytes, ICRC) in IPv4/UDP from the receiver."""
    l2 = Ether(src=ROUTER_MAC, dst=dst_mac)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    return (l2
            / IP(src=src_ip, dst=dst_ip, tos=dscp << 2, ttl=64, id=0, flags="DF")
            / UDP(sport=sport, dport=4791, chksum=0)
            / cnp(sender_qp))


def cnp_packet_explicit(dst_mac: str, src_ip: str, dst_ip: str, sport: int,
                        sender_qp: int) -> Packet:
    """The same CNP spelled out with BTH fields (for the check that ``cnp()`` agrees)."""
    return (Ether(src=ROUTER_MAC, dst=dst_mac)
            / IP(src=src_ip, dst=dst_ip, tos=48 << 2, ttl=64, id=0, flags="DF")
            / UDP(sport=sport, dport=4791, chksum=0)
            / BTH(opcode=0x81, becn=1, dqpn=sender_qp, pkey=0xFFFF, psn=0)
            / CNPPadding())


def vxlan_outer(inner: Packet, *, outer_ecn: int, vni: int = 100, outer_dscp: int = 26,
                dst: str = "192.168.0.1", src: str = "192.168.0.9",
                smac: str = "00:00:00:00:0e:0e") -> Packet:
    return (Ether(src=smac, dst=ROUTER_MAC)
            / IP(src=src, dst=dst, tos=(outer_dscp << 2) | outer_ecn, ttl=60)
            / UDP(sport=50000, dport=4789, chksum=0)
            / vxlan(vni)
            / inner)


def tenant_inner(ecn: int, ttl: int, smac: str, dmac: str) -> Packet:
    """The tenant packet of the RFC 6040 tests (same as the STF suite's)."""
    return (Ether(src=smac, dst=dmac)
            / IP(src="172.16.1.1", dst="172.16.2.2", tos=(10 << 2) | ecn, ttl=ttl, id=3)
            / UDP(sport=1234, dport=5678)
            / Raw(b"\x44" * 48))


def vxlan_tunnel(inner: Packet, *, dscp: int, ecn: int, vni: int = 200,
                 vtep_src: str = "192.168.0.1", vtep_dst: str = "192.168.0.2",
                 dmac: str = NH3_MAC, sport: int = 0xC000) -> Packet:
    """What a VXLAN next hop emits: outer ECN/DSCP = inner (RFC 6040 normal mode)."""
    return (Ether(src=ROUTER_MAC, dst=dmac)
            / IP(src=vtep_src, dst=vtep_dst, tos=(dscp << 2) | ecn, ttl=64, id=0, flags="DF")
            / UDP(sport=sport, dport=4789, chksum=0)
            / vxlan(vni)
            / inner)


class IntHop(Packet):
    """One 16-byte hop record (``int_hop_t``, p4src/include/headers.p4): what a switch
    saw of the probe, newest record first."""

    name = "tailcc INT hop"
    fields_desc = [
        IntField("switch_id", 0),
        BitField("_pad0", 0, 7), BitField("ingress_port", 0, 9),
        BitField("_pad1", 0, 7), BitField("egress_port", 0, 9),
        BitField("_pad2", 0, 5), BitField("queue_id", 0, 3),
        BitField("_pad3", 0, 5), BitField("enq_qdepth", 0, 19),
        IntField("deq_timedelta", 0),          # microseconds
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s                          # a record has no payload of its own


class IntShim(Packet):
    """tailcc's INT shim (``int_shim_t``) in a UDP probe to port 6765: how many hop
    records follow (by default, as many as given), the sender's hop budget, then the
    records themselves."""

    name = "tailcc INT shim"
    fields_desc = [
        FieldLenField("hop_count", None, fmt="B", count_of="hops"),
        ByteField("max_hops", 4),
        ShortField("rsvd", 0),
        PacketListField("hops", [], IntHop, count_from=lambda pkt: pkt.hop_count),
    ]


bind_layers(UDP, IntShim, dport=INT_UDP_PORT)


def int_probe(records: list[IntHop], hop_count: int | None = None, max_hops: int = 4, *,
              ttl: int = 64, smac: str = HOST1_MAC, dmac: str = ROUTER_MAC,
              dst: str = "10.0.2.8", dscp: int = 0, ecn: int = NOT_ECT, ident: int = 21,
              sport: int = 40001) -> Packet:
    """A UDP INT probe: the shim (``hop_count`` defaults to the number of records),
    the records newest first, 24 bytes of payload."""
    return (Ether(src=smac, dst=dmac)
            / IP(src="10.0.1.1", dst=dst, ttl=ttl, id=ident, tos=(dscp << 2) | ecn)
            / UDP(sport=sport, dport=INT_UDP_PORT, chksum=0)
            / IntShim(hop_count=hop_count, max_hops=max_hops, hops=records)
            / Raw(b"\x77" * 24))


def int_record(switch_id: int, in_port: int, out_port: int, queue: int, qdepth: int = 0,
               delta_us: int = 0) -> IntHop:
    return IntHop(switch_id=switch_id, ingress_port=in_port, egress_port=out_port,
                  queue_id=queue, enq_qdepth=qdepth, deq_timedelta=delta_us)


# Offset of the first hop record in a probe that went through one switch (no VLAN,
# IPv4 without options): where a mask's don't-care bits start.
INT_RECORD_OFFSET = len(Ether() / IP() / UDP() / IntShim())


def parse_int_record(frame: bytes, index: int = 0) -> IntHop:
    """The ``index``-th hop record (0: the newest) of a received probe."""
    shim = Ether(frame).getlayer(IntShim)
    if shim is None:
        raise ValueError(f"not an INT probe: {frame.hex()}")
    return shim.hops[index]


def pfc_frame(enable: int = 0x21, quanta: int = 0xFFFF) -> Packet:
    """IEEE 802.1Qbb PFC (scapy's MAC control class-based flow control, opcode 0x0101):
    the priorities in ``enable`` paused, eight pause times of ``quanta``, padded to the
    60-byte minimum frame."""
    pfc = MACControlClassBasedFlowControl(
        **{f"c{i}_enabled": (enable >> i) & 1 for i in range(8)},
        **{f"c{i}_pause_time": quanta for i in range(8)})
    return Ether(src=HOST1_MAC, dst=MACControl.DEFAULT_DST_MAC) / pfc


def pause_frame(quanta: int = 0xFFFF) -> Packet:
    """IEEE 802.3x PAUSE (scapy's MAC control PAUSE, opcode 0x0001), padded to 60 bytes."""
    return Ether(src=HOST1_MAC, dst=MACControl.DEFAULT_DST_MAC) / MACControlPause(
        pause_time=quanta)
