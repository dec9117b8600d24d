/*
 * tailcc NIC: the IPv4 header checksum, recomputed after the NIC rewrote DSCP/ECN or
 * built a CNP.
 */
#ifndef _TAILCC_NIC_IPV4_CHECKSUM_
#define _TAILCC_NIC_IPV4_CHECKSUM_

#include "headers.p4"

control Ipv4Checksum(inout headers_t hdr) {
    InternetChecksum() ck;
    apply {
        if (hdr.ipv4.isValid()) {
            ck.clear();
            ck.add({hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                    hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                    hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                    hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
            hdr.ipv4.hdr_checksum = ck.get();
        }
    }
}

#endif
