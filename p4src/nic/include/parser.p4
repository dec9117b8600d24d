/*
 * tailcc NIC: the main parser. Ethernet / IPv4 / UDP or TCP / RoCEv2 BTH (+ AETH
 * for ACKs). A packet re-entering from the loopback port is a receiver-CNP copy of a
 * RoCEv2 data packet: its payload (and old ICRC) is skipped, so the CNP built from
 * its headers carries none. Malformed input is a parser error that main_control
 * counts and drops (stats.p4).
 */
#ifndef _TAILCC_NIC_PARSER_
#define _TAILCC_NIC_PARSER_

#include "headers.p4"

parser NicParser(packet_in pkt, out headers_t hdr, inout nic_metadata_t meta,
                 in pna_main_parser_input_metadata_t istd) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5, error.HeaderTooShort);
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_TCP: parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.l4_sport = hdr.tcp.src_port;
        meta.l4_dport = hdr.tcp.dst_port;
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_sport = hdr.udp.src_port;
        meta.l4_dport = hdr.udp.dst_port;
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        meta.is_roce = 1;
        transition select(istd.loopedback, hdr.bth.opcode) {
            (true, _): skip_payload;
            (false, RC_ACKNOWLEDGE): parse_aeth;
            default: accept;
        }
    }
    state parse_aeth {
        pkt.extract(hdr.aeth);
        meta.aeth_syndrome = hdr.aeth.syndrome;
        transition accept;
    }
    state skip_payload {
        pkt.advance((pkt.length() - ROCE_HEADERS_LEN) << 3);
        transition accept;
    }
}

#endif
