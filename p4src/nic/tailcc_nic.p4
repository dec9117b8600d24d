/*
 * tailcc_nic.p4 -- the NIC side of tailcc: a Pollara-style NIC program in P4.org's
 * Portable NIC Architecture (p4c's generic pna.p4), run by softswitch's PNA target.
 *
 * Transmit (HOST_TO_NET): flow learning, classification by QP / opcode / length or by
 * the application's tag, DSCP + ECT(0) stamping, the transmit queue (small urgent
 * messages first; cold KV migration paced in the background queue), the entropy
 * value in the UDP source port (spraying, skipping EVs seen with CE), per-QP pacing
 * whose rate CNPs cut, per-class meters.
 * Receive (NET_TO_HOST): CNPs (from switches or receivers) update the QP's rate and
 * EV state and end here; NAKs and trimmed packets take the fast path to the host;
 * CE-marked RoCEv2 data triggers the receiver's CNP (one per QP per 50 us), built on
 * a loopback pass; parser errors are dropped and counted.
 * One concern per file in include/; see docs/nic.md for the tables the controller
 * fills and the tests that show each feature.
 */
#include <core.p4>
#include <pna.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/pre_control.p4"
#include "include/qp_lookup.p4"
#include "include/classify.p4"
#include "include/entropy.p4"
#include "include/rate_control.p4"
#include "include/receiver_cnp.p4"
#include "include/rx_fastpath.p4"
#include "include/flows.p4"
#include "include/forwarding.p4"
#include "include/ipv4_checksum.p4"
#include "include/stats.p4"
#include "include/deparser.p4"

control NicMain(inout headers_t hdr, inout nic_metadata_t meta,
                in pna_main_input_metadata_t istd,
                inout pna_main_output_metadata_t ostd) {
    RxQpLookup() rx_qp;
    TxClassify() classify;
    EntropyValue() entropy;
    RateControl() rate;
    ReceiverCnp() receiver_cnp;
    CnpBuilder() cnp_builder;
    RxFastPath() fast_path;
    FlowLearning() flow_learning;
    PortForwarding() forwarding;
    Ipv4Checksum() ipv4_checksum;
    NicStats() stats;

    apply {
        bit<64> now = (bit<64>)(TimestampUint_t)istd.timestamp;
        bool to_host = istd.direction == PNA_Direction_t.NET_TO_HOST;
        bool drop = false;
        if (istd.parser_error != error.NoError) {
            stats.apply(meta, to_host, true, NIC_DROP_PARSER_ERROR);
            drop_packet();
            return;
        }
        if (istd.loopedback) {
            /* a receiver-CNP copy: becomes the CNP to the data's sender */
            rx_qp.apply(hdr, meta);
            cnp_builder.apply(hdr, meta);
            meta.queue = QUEUE_URGENT;
        } else if (!to_host) {
            flow_learning.apply(hdr, meta);
            classify.apply(hdr, meta);
            entropy.apply(hdr, meta, now, false);
            rate.apply(hdr, meta, now, false, drop);
            if (drop) {
                stats.apply(meta, to_host, true, NIC_DROP_POLICER);
                drop_packet();
                return;
            }
        } else {
            rx_qp.apply(hdr, meta);
            if (meta.is_roce == 1 && hdr.bth.opcode == BTH_OPCODE_CNP) {
                entropy.apply(hdr, meta, now, true);
                rate.apply(hdr, meta, now, true, drop);
                stats.apply(meta, to_host, true, NIC_DROP_CNP_CONSUMED);
                drop_packet();
                return;
            }
            fast_path.apply(hdr, meta);
            if (meta.fast_path == 0) {
                flow_learning.apply(hdr, meta);
                receiver_cnp.apply(hdr, meta, now);
            }
        }
        forwarding.apply(istd.input_port);
        ipv4_checksum.apply(hdr);
        stats.apply(meta, to_host, false, 0);
        ostd.class_of_service = (ClassOfService_t)meta.queue;
    }
}

PNA_NIC(NicParser(), NicPreControl(), NicMain(), NicDeparser()) main;
