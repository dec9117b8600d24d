/*
 * tailcc: the deparser.
 *
 * Emit order is wire order.  Two orders share one list:
 *  - RoCEv2:          ... udp, bth, aeth|reth (or the CNP body)
 *  - VXLAN (transit
 *    or encapsulated): ... udp, vxlan, inner_ethernet, inner_ipv4,
 *                       inner_udp|inner_tcp, inner_bth
 * When egress encapsulates a RoCE packet it moves the BTH into inner_bth and
 * leaves its AETH/RETH valid: they are emitted after inner_bth, which is
 * where they belong.  packet_out, mac_control and pfc are never emitted
 * (packet_out is stripped in ingress; MAC-control frames are dropped).
 */
#ifndef _TAILCC_DEPARSER_
#define _TAILCC_DEPARSER_

#include "headers.p4"

control TailccDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.int_shim);
        packet.emit(hdr.int_hops);
        packet.emit(hdr.vxlan);
        packet.emit(hdr.inner_ethernet);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_udp);
        packet.emit(hdr.inner_tcp);
        packet.emit(hdr.inner_bth);
        packet.emit(hdr.bth);
        packet.emit(hdr.aeth);
        packet.emit(hdr.reth);
        packet.emit(hdr.cnp_body);
    }
}

#endif  /* _TAILCC_DEPARSER_ */
