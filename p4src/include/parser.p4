/*
 * tailcc: the parser.
 *
 * Every path ends in accept or in a parser error (PacketTooShort from a
 * truncated extract, NoMatch never: every select has a default, the errors
 * declared below from verify(), StackOutOfBounds from too many INT records).
 * On v1model a parser error does not drop the packet: ingress still runs
 * with standard_metadata.parser_error set and the headers extracted so far
 * valid, and parser_error_policy (parser_error.p4) decides what happens.
 */
#ifndef _TAILCC_PARSER_
#define _TAILCC_PARSER_

#include "headers.p4"

error {
    IPv4IncorrectVersion,
    IPv4OptionsNotSupported,
    IPv6IncorrectVersion
}

parser TailccParser(packet_in packet,
                    out headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default:  parse_ethernet;
        }
    }

    /* Packets from the controller start with the packet_out header. */
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN:        parse_vlan;
            ETHERTYPE_IPV4:        parse_ipv4;
            ETHERTYPE_IPV6:        parse_ipv6;
            ETHERTYPE_MAC_CONTROL: parse_mac_control;
            default:               accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default:        accept;
        }
    }

    /* PAUSE/PFC: parsed only so that ingress can count them per port. */
    state parse_mac_control {
        packet.extract(hdr.mac_control);
        transition select(hdr.mac_control.opcode) {
            MAC_CONTROL_OPCODE_PFC: parse_pfc;
            default:                accept;
        }
    }

    state parse_pfc {
        packet.extract(hdr.pfc);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4w4, error.IPv4IncorrectVersion);
        /* Options would shift every later header; RoCE and VXLAN senders
         * never use them.  Such packets reach the policy table with only
         * the IPv4 header parsed. */
        verify(hdr.ipv4.ihl == 4w5, error.IPv4OptionsNotSupported);
        /* Non-first fragments have no L4 header. */
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (13w0, IP_PROTO_UDP): parse_udp;
            (13w0, IP_PROTO_TCP): parse_tcp;
            default:              accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        verify(hdr.ipv6.version == 4w6, error.IPv6IncorrectVersion);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_TCP: parse_tcp;
            default:      accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2:     parse_bth;
            UDP_PORT_VXLAN:      parse_vxlan;
            UDP_PORT_TAILCC_INT: parse_int_shim;
            default:             accept;
        }
    }

    state parse_bth {
        packet.extract(hdr.bth);
        transition select(hdr.bth.opcode) {
            RC_RDMA_WRITE_FIRST:         parse_reth;
            RC_RDMA_WRITE_ONLY:          parse_reth;
            RC_RDMA_WRITE_ONLY_IMM:      parse_reth;
            RC_RDMA_READ_REQUEST:        parse_reth;
            RC_RDMA_READ_RESPONSE_FIRST: parse_aeth;
            RC_RDMA_READ_RESPONSE_LAST:  parse_aeth;
            RC_RDMA_READ_RESPONSE_ONLY:  parse_aeth;
            RC_ACKNOWLEDGE:              parse_aeth;
            RC_ATOMIC_ACKNOWLEDGE:       parse_aeth;
            default:                     accept;
        }
    }

    state parse_reth {
        packet.extract(hdr.reth);
        transition accept;
    }

    state parse_aeth {
        packet.extract(hdr.aeth);
        transition accept;
    }

    /* Telemetry probe: a shim, then hop_count records, newest first. */
    state parse_int_shim {
        packet.extract(hdr.int_shim);
        meta.int_remaining = hdr.int_shim.hop_count;
        transition select(hdr.int_shim.hop_count) {
            8w0:     accept;
            default: parse_int_hop;
        }
    }

    state parse_int_hop {
        /* More than MAX_INT_HOPS records ends in error.StackOutOfBounds. */
        packet.extract(hdr.int_hops.next);
        meta.int_remaining = meta.int_remaining - 8w1;
        transition select(meta.int_remaining) {
            8w0:     accept;
            default: parse_int_hop;
        }
    }

    /* VXLAN: the inner frame is parsed so that classification and ECN
     * decapsulation see what the tenant traffic is. */
    state parse_vxlan {
        packet.extract(hdr.vxlan);
        transition parse_inner_ethernet;
    }

    state parse_inner_ethernet {
        packet.extract(hdr.inner_ethernet);
        transition select(hdr.inner_ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_inner_ipv4;
            default:        accept;
        }
    }

    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        verify(hdr.inner_ipv4.version == 4w4, error.IPv4IncorrectVersion);
        verify(hdr.inner_ipv4.ihl == 4w5, error.IPv4OptionsNotSupported);
        transition select(hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.protocol) {
            (13w0, IP_PROTO_UDP): parse_inner_udp;
            (13w0, IP_PROTO_TCP): parse_inner_tcp;
            default:              accept;
        }
    }

    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        transition select(hdr.inner_udp.dst_port) {
            UDP_PORT_ROCEV2: parse_inner_bth;
            default:         accept;
        }
    }

    state parse_inner_tcp {
        packet.extract(hdr.inner_tcp);
        transition accept;
    }

    state parse_inner_bth {
        packet.extract(hdr.inner_bth);
        transition accept;
    }
}

#endif  /* _TAILCC_PARSER_ */
