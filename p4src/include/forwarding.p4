/*
 * tailcc: forwarding.
 *
 *   my_station hit (frame addressed to the router MAC)
 *     -> routing_v4 / routing_v6: LPM per VRF
 *          -> set_nexthop / set_nexthop_vxlan      (one next hop)
 *          -> set_ecmp_group -> ecmp_group (member count) -> member index =
 *             flow hash mod count -> ecmp_member (one next hop per member)
 *          -> punt_to_cpu / drop
 *   not routed (no router MAC, or no route)
 *     -> l2_exact on the destination MAC, else drop
 *
 * Routed packets get TTL / hop limit decremented; a packet that arrives with
 * TTL <= 1 is dropped and counted instead (no ICMP generation in the data
 * plane).  ECMP picks a member by meta.flow_hash, which covers the outer
 * 5-tuple including the RoCEv2 UDP source port (lookup.p4), so one flow (one
 * RoCE QP) stays on one path.
 *
 * ECMP is two exact tables rather than a v1model action_selector: p4c's BMv2
 * back end warns on every table with an action profile, and plain tables are
 * written the same way on every target.  A member listed k times in a group
 * gets k/count of the flows (weighted ECMP by replication).
 */
#ifndef _TAILCC_FORWARDING_
#define _TAILCC_FORWARDING_

#include "headers.p4"

control Forwarding(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* ---- router MAC ---- */
    action set_router_mac() {
        meta.is_router_mac = 1w1;
    }

    table my_station {
        key = {
            hdr.ethernet.dst_addr : exact @name("eth_dst");
        }
        actions = {
            set_router_mac;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_TABLE_SIZE;
    }

    /* ---- next hops ---- */
    action set_nexthop(PortId_t port, MacAddr_t smac, MacAddr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        meta.routed = 1w1;
    }

    /* Next hop behind a VXLAN tunnel; egress (vxlan.p4) builds the outer
     * headers.  smac/dmac are the outer (underlay) MACs. */
    action set_nexthop_vxlan(PortId_t port, MacAddr_t smac, MacAddr_t dmac,
                             Ipv4Addr_t vtep_src, Ipv4Addr_t vtep_dst, Vni_t vni) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        meta.routed = 1w1;
        meta.encap = 1w1;
        meta.encap_src = vtep_src;
        meta.encap_dst = vtep_dst;
        meta.encap_vni = vni;
    }

    action set_ecmp_group(bit<16> group_id) {
        meta.use_ecmp = 1w1;
        meta.ecmp_group = group_id;
    }

    action punt_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
        meta.bypass = 1w1;
    }

    action drop() {
        meta.drop = 1w1;
        meta.drop_reason = (bit<8>)DROP_NO_ROUTE;
    }

    table routing_v4 {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv4.dst_addr : lpm   @name("ipv4_dst");
        }
        actions = {
            set_nexthop;
            set_nexthop_vxlan;
            set_ecmp_group;
            punt_to_cpu;
            drop;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_ROUTE_SIZE;
    }

    table routing_v6 {
        key = {
            meta.vrf          : exact @name("vrf");
            hdr.ipv6.dst_addr : lpm   @name("ipv6_dst");
        }
        actions = {
            set_nexthop;
            set_ecmp_group;
            punt_to_cpu;
            drop;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_ROUTE_SIZE;
    }

    /* ---- ECMP: group -> member count; (group, member index) -> next hop ---- */
    action set_ecmp_members(bit<16> count) {
        meta.ecmp_count = count;
    }

    table ecmp_group {
        key = {
            meta.ecmp_group : exact @name("group_id");
        }
        actions = {
            set_ecmp_members;
            NoAction;
        }
        default_action = NoAction();
        size = ECMP_GROUP_TABLE_SIZE;
    }

    table ecmp_member {
        key = {
            meta.ecmp_group  : exact @name("group_id");
            meta.ecmp_member : exact @name("member");
        }
        actions = {
            set_nexthop;
            set_nexthop_vxlan;
            NoAction;
        }
        default_action = NoAction();
        size = ECMP_MEMBER_TABLE_SIZE;
    }
    /* ---- L2 fallback ---- */
    action l2_forward(PortId_t port) {
        standard_metadata.egress_spec = port;
    }

    table l2_exact {
        key = {
            hdr.ethernet.dst_addr : exact @name("eth_dst");
        }
        actions = {
            l2_forward;
            drop;
        }
        default_action = drop();
        size = TAILCC_TABLE_SIZE;
    }

    apply {
        my_station.apply();
        if (meta.is_router_mac == 1w1) {
            if (hdr.ipv4.isValid()) {
                routing_v4.apply();
            } else if (hdr.ipv6.isValid()) {
                routing_v6.apply();
            }
            if (meta.use_ecmp == 1w1) {
                ecmp_group.apply();
                if (meta.ecmp_count != 16w0) {
                    hash(meta.ecmp_member, HashAlgorithm.identity, 16w0,
                         { meta.flow_hash }, (bit<32>)meta.ecmp_count);
                    ecmp_member.apply();
                }
            }
        }

        if (meta.routed == 1w1) {
            if (hdr.ipv4.isValid()) {
                if (hdr.ipv4.ttl <= 8w1) {
                    meta.drop = 1w1;
                    meta.drop_reason = (bit<8>)DROP_TTL_EXPIRED;
                } else {
                    hdr.ipv4.ttl = hdr.ipv4.ttl - 8w1;
                }
            } else if (hdr.ipv6.isValid()) {
                if (hdr.ipv6.hop_limit <= 8w1) {
                    meta.drop = 1w1;
                    meta.drop_reason = (bit<8>)DROP_TTL_EXPIRED;
                } else {
                    hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 8w1;
                }
            }
        } else if (meta.bypass == 1w0 && meta.drop == 1w0) {
            l2_exact.apply();
        }
    }
}

#endif  /* _TAILCC_FORWARDING_ */
