"""RoCEv2 packet bytes for the lab: built with ``struct`` (fast), checked against scapy.

The lab sends tens of thousands of packets per run; building each with scapy would
dominate the run time, so templates are packed here and a unit test proves the bytes
equal scapy's ``Ether()/IP()/UDP()/BTH()`` for the same fields.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from functools import lru_cache

ROCEV2_PORT = 4791
OPCODE_RC_SEND_ONLY = 0x04
OPCODE_RC_WRITE_FIRST = 0x06
OPCODE_RC_WRITE_MIDDLE = 0x07
OPCODE_RC_WRITE_LAST = 0x08
OPCODE_RC_WRITE_ONLY = 0x0A
OPCODE_CNP = 0x81
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
ETH_IP_UDP_BTH_ICRC = 14 + 20 + 8 + 12 + 4
BTH_OPCODE_OFFSET = 14 + 20 + 8       # where a RoCEv2 packet's BTH starts
PAUSE_QUANTA = 0xFFFF                 # the longest PFC pause, in 512-bit quanta


def wire_bytes(size: int, mtu: int) -> int:
    """Bytes a ``size``-byte message puts on the wire in ``mtu``-byte payloads."""
    return size + -(-size // mtu) * ETH_IP_UDP_BTH_ICRC


@lru_cache(maxsize=4096)
def _ip(addr: str) -> bytes:
    return ipaddress.IPv4Address(addr).packed


@lru_cache(maxsize=4096)
def _mac(addr: str) -> bytes:
    return bytes.fromhex(addr.replace(":", ""))


@lru_cache(maxsize=4096)
def _ip_text(packed: bytes) -> str:
    """Dotted quad of 4 address bytes; cached (a lab run sees a few dozen hosts, and
    ``ipaddress`` per packet is a large share of the fabric's run time)."""
    return str(ipaddress.IPv4Address(packed))


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class RoceFlowAddr:
    """Addresses of one RoCEv2 flow (one QP pair)."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    src_port: int      # UDP source port (ECMP entropy)
    dest_qp: int       # the receiver's QP


def build_roce(addr: RoceFlowAddr, opcode: int, psn: int, payload_len: int,
               dscp: int, ecn: int = ECN_ECT0, ttl: int = 64, becn: bool = False,
               pkey: int = 0xFFFF) -> bytes:
    """Ether/IPv4/UDP(4791)/BTH/payload/ICRC. The ICRC is left zero: the lab's receivers
    do not verify it (the Fast CNP tests check real ICRCs with scapy)."""
    return _headers(addr, payload_len, (dscp << 2) | ecn, ttl) + struct.pack(
        "!BBHI I", opcode, 0, pkey, (0x40 if becn else 0) << 24 | addr.dest_qp,
        psn & 0xFFFFFF) + bytes(payload_len + 4)


@lru_cache(maxsize=65536)
def _headers(addr: RoceFlowAddr, payload_len: int, tos: int, ttl: int) -> bytes:
    """Ether/IPv4/UDP of one flow, packet length and TOS: the same for every packet of
    a QP but its last, so packed (and checksummed) once."""
    udp_len = 8 + 12 + payload_len + 4
    ip_total = 20 + udp_len
    ip_wo_csum = struct.pack("!BBHHHBBH4s4s", 0x45, tos, ip_total, 0, 0x4000,
                             ttl, 17, 0, _ip(addr.src_ip), _ip(addr.dst_ip))
    ip = ip_wo_csum[:10] + struct.pack("!H", ipv4_checksum(ip_wo_csum)) + ip_wo_csum[12:]
    udp = struct.pack("!HHHH", addr.src_port, ROCEV2_PORT, udp_len, 0)
    eth = _mac(addr.dst_mac) + _mac(addr.src_mac) + b"\x08\x00"
    return eth + ip + udp


@dataclass(frozen=True)
class RoceView:
    """The fields of a received RoCEv2 packet the lab's hosts act on."""

    src_ip: str
    dst_ip: str
    dscp: int
    ecn: int
    opcode: int
    dest_qp: int
    psn: int
    becn: bool
    length: int


def parse_roce(data: bytes) -> RoceView | None:
    """Decode Ether/IPv4/UDP 4791/BTH; None for anything else (the lab ignores it)."""
    if len(data) < 14 + 20 + 8 + 12 or data[12:14] != b"\x08\x00":
        return None
    ihl = (data[14] & 0x0F) * 4
    if data[14 + 9] != 17:
        return None
    udp = 14 + ihl
    if struct.unpack_from("!H", data, udp + 2)[0] != ROCEV2_PORT:
        return None
    bth = udp + 8
    opcode = data[bth]
    flags_qp, psn = struct.unpack_from("!II", data, bth + 4)
    tos = data[15]
    return RoceView(
        src_ip=_ip_text(data[26:30]), dst_ip=_ip_text(data[30:34]),
        dscp=tos >> 2, ecn=tos & 3, opcode=opcode, dest_qp=flags_qp & 0xFFFFFF,
        psn=psn & 0xFFFFFF, becn=bool(flags_qp >> 30 & 1), length=len(data))
