/*
 * tailcc NIC: the deparser, in header order (invalid headers are not emitted).
 */
#ifndef _TAILCC_NIC_DEPARSER_
#define _TAILCC_NIC_DEPARSER_

#include "headers.p4"

control NicDeparser(packet_out pkt, in headers_t hdr, in nic_metadata_t meta,
                    in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.aeth);
        pkt.emit(hdr.cnp_body);
    }
}

#endif
