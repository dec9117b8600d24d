/*
 * tailcc: VXLAN tunnels and ECN across them (RFC 6040).
 *
 * Decapsulation (ingress): if the outer IPv4 destination and VNI name a
 * tunnel this switch terminates, combine outer and inner ECN exactly as
 * RFC 6040 section 4.2 says, then move the inner headers into the outer
 * header slots so every later stage sees a plain packet in the tenant VRF.
 * Without the combine step a congested underlay marks only the outer header
 * and the end host never learns about it.
 *
 *   inner \ outer | Not-ECT  ECT(0)   ECT(1)   CE
 *   --------------+-------------------------------------
 *   Not-ECT       | Not-ECT  Not-ECT  Not-ECT  drop
 *   ECT(0)        | ECT(0)   ECT(0)   ECT(1)   CE
 *   ECT(1)        | ECT(1)   ECT(1)   ECT(1)   CE
 *   CE            | CE       CE       CE       CE
 *
 * Encapsulation (egress): a next hop chosen with set_nexthop_vxlan wraps the
 * IPv4 packet in Ethernet/IPv4/UDP/VXLAN and copies the inner ECN field to
 * the outer header (RFC 6040 "normal mode"), so a later hop's CE mark on
 * the outer header travels back into the inner one at decapsulation.
 *
 * Limits: only IPv4-in-IPv4 tunnels (inner IPv6 or non-IP frames are not
 * terminated and pass as transit traffic); INT probes must not take a VXLAN
 * next hop.
 */
#ifndef _TAILCC_VXLAN_
#define _TAILCC_VXLAN_

#include "headers.p4"

control VxlanDecap(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* index 0: packets decapsulated; 1: outer CE + inner Not-ECT dropped;
     * 2: CE carried from outer to inner; 3: ECT(1) carried to an ECT(0) inner. */
    counter(4, CounterType.packets_and_bytes) vxlan_decap_counter;

    action terminate_vxlan(Vrf_t vrf) {
        meta.vrf = vrf;
        meta.decapped = 1w1;
        meta.lkp.vni = hdr.vxlan.vni;
    }

    table vxlan_termination {
        key = {
            hdr.ipv4.dst_addr : exact @name("outer_ipv4_dst");
            hdr.vxlan.vni     : exact @name("vni");
        }
        actions = {
            terminate_vxlan;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.vxlan.isValid() && hdr.inner_ipv4.isValid()) {
            vxlan_termination.apply();
        }
        if (meta.decapped == 1w1) {
            /* RFC 6040 section 4.2. */
            if (hdr.ipv4.ecn == ECN_CE) {
                if (hdr.inner_ipv4.ecn == ECN_NOT_ECT) {
                    /* The inner transport cannot understand CE: the only
                     * signal left is loss. */
                    meta.drop = 1w1;
                    meta.drop_reason = (bit<8>)DROP_RFC6040;
                    vxlan_decap_counter.count(32w1);
                } else {
                    if (hdr.inner_ipv4.ecn != ECN_CE) {
                        vxlan_decap_counter.count(32w2);
                    }
                    hdr.inner_ipv4.ecn = ECN_CE;
                }
            } else if (hdr.ipv4.ecn == ECN_ECT1 && hdr.inner_ipv4.ecn == ECN_ECT0) {
                hdr.inner_ipv4.ecn = ECN_ECT1;
                vxlan_decap_counter.count(32w3);
            }

            if (meta.drop == 1w0) {
                vxlan_decap_counter.count(32w0);
                /* Inner headers take the outer slots. */
                hdr.ethernet = hdr.inner_ethernet;
                hdr.vlan.setInvalid();
                hdr.ipv4 = hdr.inner_ipv4;
                hdr.udp.setInvalid();
                if (hdr.inner_udp.isValid()) {
                    hdr.udp = hdr.inner_udp;
                }
                if (hdr.inner_tcp.isValid()) {
                    hdr.tcp = hdr.inner_tcp;
                }
                if (hdr.inner_bth.isValid()) {
                    hdr.bth = hdr.inner_bth;
                }
                hdr.vxlan.setInvalid();
                hdr.inner_ethernet.setInvalid();
                hdr.inner_ipv4.setInvalid();
                hdr.inner_udp.setInvalid();
                hdr.inner_tcp.setInvalid();
                hdr.inner_bth.setInvalid();
            }
        }
    }
}

control VxlanEncap(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    counter(1, CounterType.packets_and_bytes) vxlan_encap_counter;

    apply {
        if (meta.encap == 1w1 && hdr.ipv4.isValid() && !hdr.vxlan.isValid()) {
            vxlan_encap_counter.count(32w0);

            /* The routed frame becomes the inner frame. */
            hdr.inner_ethernet = hdr.ethernet;
            if (hdr.vlan.isValid()) {
                hdr.inner_ethernet.ether_type = hdr.vlan.ether_type;
                hdr.vlan.setInvalid();
            }
            hdr.inner_ipv4 = hdr.ipv4;
            if (hdr.udp.isValid()) {
                hdr.inner_udp = hdr.udp;
            }
            if (hdr.tcp.isValid()) {
                hdr.inner_tcp = hdr.tcp;
                hdr.tcp.setInvalid();
            }
            if (hdr.bth.isValid()) {
                /* AETH/RETH stay valid and are emitted after inner_bth. */
                hdr.inner_bth = hdr.bth;
                hdr.bth.setInvalid();
            }

            /* Outer headers.  MACs were set by the next hop in ingress. */
            hdr.ethernet.ether_type = ETHERTYPE_IPV4;

            hdr.ipv4.version = 4w4;
            hdr.ipv4.ihl = 4w5;
            /* Same DSCP so the underlay queues the tunnel like its payload;
             * ECN copied from inner: RFC 6040 normal-mode encapsulation. */
            hdr.ipv4.dscp = hdr.inner_ipv4.dscp;
            hdr.ipv4.ecn = hdr.inner_ipv4.ecn;
            hdr.ipv4.total_len = hdr.inner_ipv4.total_len + VXLAN_ENCAP_IP_BYTES;
            hdr.ipv4.identification = 16w0;
            hdr.ipv4.flags = 3w0b010;   /* DF: tunnels must not fragment */
            hdr.ipv4.frag_offset = 13w0;
            hdr.ipv4.ttl = 8w64;
            hdr.ipv4.protocol = IP_PROTO_UDP;
            hdr.ipv4.src_addr = meta.encap_src;
            hdr.ipv4.dst_addr = meta.encap_dst;

            hdr.udp.setValid();
            /* Source port from the flow hash: ECMP entropy for the underlay
             * (RFC 7348 section 5), in the dynamic range 49152-65535. */
            hdr.udp.src_port = 2w0b11 ++ meta.flow_hash[13:0];
            hdr.udp.dst_port = UDP_PORT_VXLAN;
            hdr.udp.length = hdr.inner_ipv4.total_len + VXLAN_ENCAP_UDP_BYTES;
            hdr.udp.checksum = 16w0;

            hdr.vxlan.setValid();
            hdr.vxlan.flags = VXLAN_FLAGS_VNI_VALID;
            hdr.vxlan.rsvd0 = 24w0;
            hdr.vxlan.vni = meta.encap_vni;
            hdr.vxlan.rsvd1 = 8w0;
        }
    }
}

#endif  /* _TAILCC_VXLAN_ */
