"""Malformed packets, PFC frames, the CPU port (PacketIn/PacketOut) and INT probes."""

from __future__ import annotations

import ptf.mask
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from tailcc_base import TailccTest
from tailcc_packets import (
    INT_RECORD_OFFSET,
    NH2_MAC,
    NH4_MAC,
    ROUTER_MAC,
    int_probe,
    int_record,
    parse_int_record,
    pause_frame,
    pfc_frame,
    udp,
)

PERR_TOO_SHORT, PERR_STACK_OOB, PERR_IPV4_VERSION, PERR_IPV4_IHL, PERR_CHECKSUM = 1, 3, 5, 6, 8
DROP_PARSER_ERROR, DROP_PFC = 0, 1


def ipv4_changed(frame: bytes, **fields: int) -> bytes:
    """``frame`` with IPv4 header fields set as given (the header checksum is
    recomputed unless ``chksum`` is one of them)."""
    pkt = Ether(frame)
    del pkt[IP].chksum
    for name, value in fields.items():
        setattr(pkt[IP], name, value)
    return bytes(pkt)


class MalformedDropTest(TailccTest):
    """Truncated IPv4, IP version 5, IPv4 options, a bad header checksum, runt frames,
    an INT probe with nine records (stack overflow) and one cut inside its records are
    counted per parser error and dropped by default; nothing leaves."""

    def runTest(self) -> None:
        self.insert("l2_exact", {"eth_dst": NH4_MAC}, "l2_forward", {"port": 4})
        full = bytes(udp("10.0.2.7", 5000, dmac=NH4_MAC))
        truncated = full[:14 + 10]
        bad_version = ipv4_changed(full, version=5)
        bad_csum = ipv4_changed(full, chksum=Ether(full)[IP].chksum ^ 0xFF00)
        options = bytes(Ether(src="00:00:00:00:01:01", dst=NH4_MAC)
                        / IP(src="10.0.1.1", dst="10.0.2.7", options=b"\x01\x01\x01\x00")
                        / UDP(sport=1, dport=2) / Raw(b"x" * 20))
        runt = full[:14 + 2]           # EtherType IPv4 and two bytes of header
        nine_hops = bytes(int_probe([int_record(i, 1, 2, 0) for i in range(9)], 9, 16,
                                    dmac=NH4_MAC))                # more than 8 INT records
        # a shim announcing three records, cut after the first one and a quarter
        short_int = bytes(int_probe([int_record(1, 1, 2, 0)], 3, 4,
                                    dmac=NH4_MAC))[:INT_RECORD_OFFSET + 20]
        for frame in (truncated, bad_version, bad_csum, options, runt, nine_hops, short_int):
            self.send(1, frame)
        self.expect_nothing()
        self.assertEqual(self.wait_counter("ingress_drop_counter", DROP_PARSER_ERROR, 7), 7)
        self.assertEqual(self.packets("parser_error_counter", PERR_TOO_SHORT), 3)
        self.assertEqual(self.packets("parser_error_counter", PERR_IPV4_VERSION), 1)
        self.assertEqual(self.packets("parser_error_counter", PERR_IPV4_IHL), 1)
        self.assertEqual(self.packets("parser_error_counter", PERR_CHECKSUM), 1)
        self.assertEqual(self.packets("parser_error_counter", PERR_STACK_OOB), 1)
        # a well-formed frame still goes through: the switch survived them
        self.send(1, full)
        self.expect(full, 4)


class MalformedPolicyTest(TailccTest):
    """parser_error_policy: forward what was parsed, or punt to the controller with the
    ingress port in the PacketIn metadata."""

    def runTest(self) -> None:
        self.insert("l2_exact", {"eth_dst": NH4_MAC}, "l2_forward", {"port": 4})
        full = bytes(udp("10.0.2.7", 5000, dmac=NH4_MAC))
        truncated = full[:14 + 10]
        self.insert("parser_error_policy", {"error_code": PERR_TOO_SHORT},
                    "forward_malformed")
        self.send(1, truncated)
        self.expect(truncated, 4)
        bad_version = ipv4_changed(full, version=5)
        self.insert("parser_error_policy", {"error_code": PERR_IPV4_VERSION},
                    "punt_malformed")
        self.send(3, bad_version)
        message = self.packet_in()
        self.assertEqual(message.payload, bad_version)
        self.assertEqual(self.metadata_value(message, "ingress_port"), 3)
        self.expect_nothing()


class PfcCountedTest(TailccTest):
    """A PFC frame pausing priorities 0 and 5 is counted per port and per priority, an
    802.3x PAUSE frame per port only; neither is forwarded."""

    def runTest(self) -> None:
        self.send(1, pfc_frame(enable=0x21))
        self.send(2, pause_frame(quanta=0x100))
        self.expect_nothing()
        self.assertEqual(self.wait_counter("ingress_drop_counter", DROP_PFC, 2), 2)
        self.assertEqual(self.packets("mac_control_frame_counter", 1), 1)
        self.assertEqual(self.packets("mac_control_frame_counter", 2), 1)
        self.assertEqual(self.packets("pfc_priority_counter", 1 * 8 + 0), 1)
        self.assertEqual(self.packets("pfc_priority_counter", 1 * 8 + 5), 1)
        self.assertEqual(self.packets("pfc_priority_counter", 1 * 8 + 1), 0)
        self.assertEqual([self.packets("pfc_priority_counter", 2 * 8 + q) for q in range(8)],
                         [0] * 8)


class PacketOutInTest(TailccTest):
    """PacketOut with egress_port metadata leaves that port unchanged; a punt route
    sends the packet to the controller with its ingress port."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.insert("routing_v4", {"vrf": 0, "ipv4_dst": "10.0.9.0/24"}, "punt_to_cpu")
        frame = bytes(udp("10.0.5.5", 5000, smac=ROUTER_MAC, dmac="00:00:00:00:07:07"))
        out_md = next(c for c in self.index.all("controller_packet_metadata")
                      if c.preamble.name == "packet_out")
        ids = {m.name: m.id for m in out_md.metadata}
        self.client.send_packet_out(frame, [(ids["egress_port"], b"\x03"),
                                            (ids["_pad"], b"\x00")])
        self.expect(frame, 3)
        punted = bytes(udp("10.0.9.1", 5000))
        self.send(2, punted)
        message = self.packet_in()
        self.assertEqual(message.payload, punted)
        self.assertEqual(self.metadata_value(message, "ingress_port"), 2)
        self.expect_nothing()


class IntProbeTest(TailccTest):
    """An INT probe gets this switch's 16-byte hop record first (switch id, ports,
    queue), older records kept behind it; a probe at max_hops gets none."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.route("10.0.2.0/24", 2, ROUTER_MAC, NH2_MAC)
        self.set_default("int_config", "set_switch_id", {"id": 0xABCD})
        earlier = int_record(0x1111, 7, 8, 5)
        mine = int_record(0xABCD, 1, 2, 0)
        varying_bits = (8 * (INT_RECORD_OFFSET + 9), 8 * 7)  # enq_qdepth + deq_timedelta

        for records, hops in (([], 0), ([earlier], 1)):
            self.send(1, int_probe(records, hops, 4))
            expected = ptf.mask.Mask(int_probe([mine, *records], hops + 1, 4, ttl=63,
                                               smac=ROUTER_MAC, dmac=NH2_MAC))
            expected.set_do_not_care(*varying_bits)
            self.expect(expected, 2)
        self.send(1, int_probe([earlier], 1, 1))
        self.expect(int_probe([earlier], 1, 1, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC), 2)
        self.expect_nothing()
        # the record parser used by the queueing suites reads what the switch wrote
        self.send(1, int_probe([], 0, 4))
        got = self.collect(2, 1)
        self.assertEqual(len(got), 1)
        hop = parse_int_record(got[0][1])
        self.assertEqual((hop.switch_id, hop.ingress_port, hop.egress_port, hop.queue_id),
                         (0xABCD, 1, 2, 0))
