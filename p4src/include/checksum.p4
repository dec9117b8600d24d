/*
 * tailcc: IPv4 header checksums.
 *
 * Verification only sets standard_metadata.checksum_error (v1model never
 * drops for it); parser_error.p4 turns it into error code PERR_CHECKSUM and
 * the policy table decides.  The update recomputes every IPv4 header that
 * leaves: routed packets (TTL, DSCP, ECN changed), decapsulated inner
 * headers moved to the outer position, new VXLAN outer headers, and CNPs.
 *
 * L4 checksums: IPv4/IPv6 pseudo-headers cover neither TTL/hop limit nor
 * DSCP/ECN, so rewriting those leaves TCP/UDP checksums valid.  Headers this
 * program builds (VXLAN outer UDP, CNP UDP, INT-grown UDP) carry checksum 0,
 * which IPv4 allows.  The RoCE ICRC masks TTL, DSCP/ECN and the IP and UDP
 * checksums, so forwarding never invalidates it either.
 */
#ifndef _TAILCC_CHECKSUM_
#define _TAILCC_CHECKSUM_

#include "headers.p4"

control TailccVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.inner_ipv4.isValid(),
            { hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.total_len,
              hdr.inner_ipv4.identification, hdr.inner_ipv4.flags,
              hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl,
              hdr.inner_ipv4.protocol, hdr.inner_ipv4.src_addr,
              hdr.inner_ipv4.dst_addr },
            hdr.inner_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control TailccComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        /* A packet whose IPv4 header failed its checks (bad checksum, version or
         * IHL) and is forwarded or punted by parser_error_policy leaves with the
         * header it came with: recomputing would launder the corruption and hand
         * the controller a frame that is not the one that arrived. */
        bool ipv4_trusted = meta.parser_error_code != PERR_CHECKSUM
                            && meta.parser_error_code != PERR_IPV4_VERSION
                            && meta.parser_error_code != PERR_IPV4_IHL;
        update_checksum(hdr.ipv4.isValid() && ipv4_trusted,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.inner_ipv4.isValid()
                            && meta.parser_error_code != PERR_CHECKSUM
                            && meta.parser_error_code != PERR_IPV4_VERSION
                            && meta.parser_error_code != PERR_IPV4_IHL,
            { hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.total_len,
              hdr.inner_ipv4.identification, hdr.inner_ipv4.flags,
              hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl,
              hdr.inner_ipv4.protocol, hdr.inner_ipv4.src_addr,
              hdr.inner_ipv4.dst_addr },
            hdr.inner_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

#endif  /* _TAILCC_CHECKSUM_ */
