/*
 * tailcc: micro-segmentation inside a tenant.
 *
 * segment_acl holds allow/deny rules per VRF on IPv4 source and destination,
 * as host (/32 mask) or subnet (/24 mask) ternary entries; the control plane
 * gives more specific rules higher priority.  A packet no rule matches gets
 * its tenant's default from segment_default (allow unless the tenant says
 * otherwise).  Denied packets are counted per tenant and dropped.
 * (e.g. tenant A: A1<->A2 allowed by a host rule, A1->A5 denied by another,
 *  everything else by the tenant default.)
 */
#ifndef _TAILCC_SEGMENTATION_
#define _TAILCC_SEGMENTATION_

#include "headers.p4"

control Segmentation(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    counter(MAX_TENANTS, CounterType.packets_and_bytes) segment_deny_counter;

    action allow() {
        meta.segment_deny = 1w0;
    }

    action deny() {
        meta.segment_deny = 1w1;
    }

    table segment_acl {
        key = {
            meta.vrf          : exact   @name("vrf");
            hdr.ipv4.src_addr : ternary @name("ipv4_src");
            hdr.ipv4.dst_addr : ternary @name("ipv4_dst");
        }
        actions = {
            allow;
            deny;
        }
        default_action = allow();
        size = TAILCC_TABLE_SIZE;
    }

    table segment_default {
        key = {
            meta.vrf : exact @name("vrf");
        }
        actions = {
            allow;
            deny;
        }
        default_action = allow();
        size = MAX_TENANTS;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (!segment_acl.apply().hit) {
                segment_default.apply();
            }
            if (meta.segment_deny == 1w1) {
                segment_deny_counter.count((bit<32>)meta.vrf);
                meta.drop = 1w1;
                meta.drop_reason = (bit<8>)DROP_SEGMENT_DENY;
            }
        }
    }
}

#endif  /* _TAILCC_SEGMENTATION_ */
