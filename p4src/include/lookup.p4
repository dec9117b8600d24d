/*
 * tailcc: the lookup view (meta.lkp) and the flow hash.
 *
 * meta.lkp describes what the traffic *is*, from the innermost headers the
 * parser understood: the tenant packet of a transit VXLAN tunnel (with its
 * VNI), otherwise the packet itself (after any decapsulation).  Every field
 * defaults to 0 so classification never keys on an invalid header.
 *
 * meta.flow_hash is computed over the *outer* 5-tuple, because that is what
 * the underlay's ECMP must spread: for RoCEv2 the UDP source port is the
 * sender's per-QP entropy, for VXLAN the tunnel's source port.
 */
#ifndef _TAILCC_LOOKUP_
#define _TAILCC_LOOKUP_

#include "headers.p4"

control LookupInit(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        /* meta.lkp.vni is set by VXLAN termination and kept. */
        meta.lkp.is_ipv4 = 1w0;
        meta.lkp.is_ipv6 = 1w0;
        meta.lkp.is_vxlan = 1w0;
        meta.lkp.is_roce = 1w0;
        meta.lkp.dscp = 6w0;
        meta.lkp.ecn = 2w0;
        meta.lkp.ip_proto = 8w0;
        meta.lkp.l4_sport = 16w0;
        meta.lkp.l4_dport = 16w0;
        meta.lkp.bth_opcode = 8w0;
        meta.lkp.bth_dst_qp = 24w0;

        if (hdr.vxlan.isValid() && hdr.inner_ipv4.isValid()) {
            /* Transit VXLAN: classify on the tenant packet. */
            meta.lkp.is_vxlan = 1w1;
            meta.lkp.vni = hdr.vxlan.vni;
            meta.lkp.is_ipv4 = 1w1;
            meta.lkp.dscp = hdr.inner_ipv4.dscp;
            meta.lkp.ecn = hdr.inner_ipv4.ecn;
            meta.lkp.ip_proto = hdr.inner_ipv4.protocol;
            if (hdr.inner_udp.isValid()) {
                meta.lkp.l4_sport = hdr.inner_udp.src_port;
                meta.lkp.l4_dport = hdr.inner_udp.dst_port;
            } else if (hdr.inner_tcp.isValid()) {
                meta.lkp.l4_sport = hdr.inner_tcp.src_port;
                meta.lkp.l4_dport = hdr.inner_tcp.dst_port;
            }
            if (hdr.inner_bth.isValid()) {
                meta.lkp.is_roce = 1w1;
                meta.lkp.bth_opcode = hdr.inner_bth.opcode;
                meta.lkp.bth_dst_qp = hdr.inner_bth.dst_qp;
            }
        } else {
            if (hdr.ipv4.isValid()) {
                meta.lkp.is_ipv4 = 1w1;
                meta.lkp.dscp = hdr.ipv4.dscp;
                meta.lkp.ecn = hdr.ipv4.ecn;
                meta.lkp.ip_proto = hdr.ipv4.protocol;
            } else if (hdr.ipv6.isValid()) {
                meta.lkp.is_ipv6 = 1w1;
                meta.lkp.dscp = hdr.ipv6.dscp;
                meta.lkp.ecn = hdr.ipv6.ecn;
                meta.lkp.ip_proto = hdr.ipv6.next_hdr;
            }
            if (hdr.udp.isValid()) {
                meta.lkp.l4_sport = hdr.udp.src_port;
                meta.lkp.l4_dport = hdr.udp.dst_port;
            } else if (hdr.tcp.isValid()) {
                meta.lkp.l4_sport = hdr.tcp.src_port;
                meta.lkp.l4_dport = hdr.tcp.dst_port;
            }
            if (hdr.bth.isValid()) {
                meta.lkp.is_roce = 1w1;
                meta.lkp.bth_opcode = hdr.bth.opcode;
                meta.lkp.bth_dst_qp = hdr.bth.dst_qp;
            }
        }

        /* Outer 5-tuple hash for ECMP and VXLAN source-port entropy. */
        bit<16> sport = 16w0;
        bit<16> dport = 16w0;
        if (hdr.udp.isValid()) {
            sport = hdr.udp.src_port;
            dport = hdr.udp.dst_port;
        } else if (hdr.tcp.isValid()) {
            sport = hdr.tcp.src_port;
            dport = hdr.tcp.dst_port;
        }
        meta.flow_hash = 32w0;
        if (hdr.ipv4.isValid()) {
            hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   sport, dport },
                 64w4294967296);
        } else if (hdr.ipv6.isValid()) {
            hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr,
                   4w0, hdr.ipv6.flow_label, sport, dport },   /* byte-aligned: 320 bits */
                 64w4294967296);
        }
    }
}

#endif  /* _TAILCC_LOOKUP_ */
