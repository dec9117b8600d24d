/*
 * tailcc: per-class ECN marking (egress).
 *
 * ecn_profile picks a RED-style profile for the (egress port, queue) and
 * the class's ECN profile id: Kmin, Kmax (packets), Pmax (in 1/1024), which
 * depth to use (enq_qdepth: depth the packet found; deq_qdepth: depth it
 * left behind), and an optional drop threshold for Not-ECT packets.
 *
 *   depth <= Kmin          : never mark
 *   Kmin < depth < Kmax    : mark with probability Pmax * (depth-Kmin)/(Kmax-Kmin)
 *   depth >= Kmax          : mark every ECT packet
 *
 * Only ECT(0)/ECT(1) packets are marked (set to CE); a packet already CE is
 * left alone.  Not-ECT packets at or above the drop threshold are dropped
 * when the profile enables it (a lossy class under pressure), counted per
 * (port, queue).  No profile entry: no marking, no drop.
 *
 * The probability test avoids division (BMv2 has no run-time divide):
 *   r in [0, 1023] uniform;  mark iff r * (Kmax-Kmin) < Pmax * (depth-Kmin)
 * Both products fit in 32 bits (19-bit depths times 11-bit factors).
 */
#ifndef _TAILCC_ECN_MARKING_
#define _TAILCC_ECN_MARKING_

#include "headers.p4"

control EcnMarking(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    counter(PORT_QUEUE_SLOTS, CounterType.packets) ecn_mark_counter;
    counter(PORT_QUEUE_SLOTS, CounterType.packets) ecn_drop_counter;

    QDepth_t kmin = 19w0;
    QDepth_t kmax = 19w0;
    bit<11>  pmax = 11w0;
    bit<1>   use_deq = 1w0;
    bit<1>   drop_not_ect = 1w0;
    QDepth_t drop_threshold = 19w0;

    action set_ecn_profile(QDepth_t kmin_pkts, QDepth_t kmax_pkts,
                           bit<11> pmax_1024, bit<1> use_deq_qdepth,
                           bit<1> drop_not_ect_enable, QDepth_t drop_threshold_pkts) {
        kmin = kmin_pkts;
        kmax = kmax_pkts;
        pmax = pmax_1024;
        use_deq = use_deq_qdepth;
        drop_not_ect = drop_not_ect_enable;
        drop_threshold = drop_threshold_pkts;
    }

    table ecn_profile {
        key = {
            standard_metadata.egress_port : ternary @name("egress_port");
            standard_metadata.priority    : ternary @name("queue");
            meta.ecn_profile              : ternary @name("ecn_profile");
        }
        actions = {
            set_ecn_profile;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_TABLE_SIZE;
    }

    apply {
        if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
            if (ecn_profile.apply().hit) {
                QDepth_t depth = standard_metadata.enq_qdepth;
                if (use_deq == 1w1) {
                    depth = standard_metadata.deq_qdepth;
                }
                bit<2> ecn;
                if (hdr.ipv4.isValid()) {
                    ecn = hdr.ipv4.ecn;
                } else {
                    ecn = hdr.ipv6.ecn;
                }
                bit<32> slot = ((bit<32>)standard_metadata.egress_port << 3)
                               | (bit<32>)standard_metadata.priority;

                if (ecn == ECN_NOT_ECT) {
                    if (drop_not_ect == 1w1 && depth >= drop_threshold) {
                        mark_to_drop(standard_metadata);
                        ecn_drop_counter.count(slot);
                    }
                } else if (ecn != ECN_CE && meta.suppress_mark == 1w0) {
                    bit<1> mark = 1w0;
                    if (depth >= kmax) {
                        mark = 1w1;
                    } else if (depth > kmin) {
                        bit<10> r;
                        random(r, 10w0, 10w1023);
                        bit<32> lhs = (bit<32>)r * (bit<32>)(kmax - kmin);
                        bit<32> rhs = (bit<32>)pmax * (bit<32>)(depth - kmin);
                        if (lhs < rhs) {
                            mark = 1w1;
                        }
                    }
                    if (mark == 1w1) {
                        if (hdr.ipv4.isValid()) {
                            hdr.ipv4.ecn = ECN_CE;
                        } else {
                            hdr.ipv6.ecn = ECN_CE;
                        }
                        ecn_mark_counter.count(slot);
                    }
                }
            }
        }
    }
}

#endif  /* _TAILCC_ECN_MARKING_ */
