/*
 * tailcc: semantic traffic classification.
 *
 * One ternary/range table keyed on what the traffic *is* -- DSCP, protocol,
 * L4 ports, RoCE BTH opcode and destination QP range, packet length, VNI,
 * ingress port -- so that, e.g., a 200-byte scheduling signal and a 4 KB
 * hot KV-cache block of the same tenant land in different queues, and small
 * packets of latency-sensitive classes never wait behind bulk transfers
 * (small-packet promotion is a packet_length range in an entry).
 *
 * The action sets:
 *   meta.tc                        traffic class (TC_* in defines.p4)
 *   standard_metadata.priority     queue; BMv2 serves 7 first
 *   meta.ecn_profile               which ECN profile egress uses
 *   optionally a DSCP rewrite, so downstream hops see one DSCP per class.
 * Misses are best effort: class 0, queue 0, profile 0.
 *
 * The default queue map (controlplane/profiles/default.yaml, docs/pipeline.md)
 * follows the brief: control q7, CNP q6, hot KV / scheduling signals q5,
 * TP/PP and MoE q4, storage and weights q3, training bulk q2, cold KV q1,
 * front-end API and best effort q0.
 */
#ifndef _TAILCC_CLASSIFY_
#define _TAILCC_CLASSIFY_

#include "headers.p4"

control Classify(inout headers_t hdr,
                 inout local_metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    counter(NUM_TRAFFIC_CLASSES, CounterType.packets_and_bytes) class_counter;

    action set_class(TrafficClass_t tc, bit<3> queue, EcnProfile_t ecn_profile) {
        meta.tc = tc;
        standard_metadata.priority = queue;
        meta.ecn_profile = ecn_profile;
        meta.rewrite_dscp = 1w0;
    }

    action set_class_and_dscp(TrafficClass_t tc, bit<3> queue,
                              EcnProfile_t ecn_profile, bit<6> dscp) {
        meta.tc = tc;
        standard_metadata.priority = queue;
        meta.ecn_profile = ecn_profile;
        meta.rewrite_dscp = 1w1;
        meta.new_dscp = dscp;
    }

    action set_best_effort() {
        meta.tc = TC_BEST_EFFORT;
        standard_metadata.priority = 3w0;
        meta.ecn_profile = 4w0;
        meta.rewrite_dscp = 1w0;
    }

    table traffic_class {
        key = {
            standard_metadata.ingress_port : ternary @name("ingress_port");
            meta.lkp.vni                   : ternary @name("vni");
            meta.lkp.dscp                  : ternary @name("dscp");
            meta.lkp.ecn                   : ternary @name("ecn");
            meta.lkp.ip_proto              : ternary @name("ip_proto");
            meta.lkp.l4_sport              : range   @name("l4_sport");
            meta.lkp.l4_dport              : range   @name("l4_dport");
            meta.lkp.is_roce               : ternary @name("is_roce");
            meta.lkp.bth_opcode            : range   @name("bth_opcode");
            meta.lkp.bth_dst_qp            : range   @name("bth_dst_qp");
            standard_metadata.packet_length : range  @name("packet_length");
        }
        actions = {
            set_class;
            set_class_and_dscp;
            set_best_effort;
        }
        default_action = set_best_effort();
        size = TAILCC_TABLE_SIZE;
    }

    apply {
        traffic_class.apply();
        class_counter.count((bit<32>)meta.tc);
        if (meta.rewrite_dscp == 1w1) {
            if (hdr.ipv4.isValid()) {
                hdr.ipv4.dscp = meta.new_dscp;
            } else if (hdr.ipv6.isValid()) {
                hdr.ipv6.dscp = meta.new_dscp;
            }
        }
    }
}

#endif  /* _TAILCC_CLASSIFY_ */
