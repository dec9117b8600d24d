/*
 * tailcc NIC, transmit side: classification and marking.
 *
 * - RoCEv2: `qp_class`, keyed by the destination QP and filled by the serving stack,
 *   gives the QP's class, its EV count and base, its state slot and the size at or
 *   below which a SEND/WRITE-only message is "small and urgent";
 * - other UDP/TCP: `app_class`, keyed by protocol, destination port and the DSCP the
 *   application tagged the packet with (ternary), gives the class;
 * - `class_policy` stamps the class's DSCP, sets ECT(0) on Not-ECT traffic of
 *   ECN-capable classes and picks its transmit queue. A small urgent message goes to
 *   QUEUE_URGENT whatever its class, so it never waits behind the host's own bulk;
 *   cold KV migration is a class whose queue (QUEUE_BACKGROUND) the NIC's traffic
 *   manager paces.
 */
#ifndef _TAILCC_NIC_CLASSIFY_
#define _TAILCC_NIC_CLASSIFY_

#include "headers.p4"

/* RC SEND-only and RDMA WRITE-only (with and without immediate): one-packet messages. */
const bit<8> RC_SEND_ONLY           = 0x04;
const bit<8> RC_SEND_ONLY_IMM       = 0x05;
const bit<8> RC_RDMA_WRITE_ONLY     = 0x0a;
const bit<8> RC_RDMA_WRITE_ONLY_IMM = 0x0b;

control TxClassify(inout headers_t hdr, inout nic_metadata_t meta) {
    action set_qp_class(NicClass_t nic_class, bit<8> ev_count, bit<16> ev_base,
                        QpSlot_t slot, bit<16> urgent_max_len) {
        meta.nic_class = nic_class;
        meta.ev_count = ev_count;
        meta.ev_base = ev_base;
        meta.qp_slot = slot;
        meta.has_qp = 1;
        meta.urgent_max_len = urgent_max_len;
        meta.classified = 1;
    }
    table qp_class {
        key = {
            hdr.bth.dst_qp : exact @name("dst_qp");
        }
        actions = {
            set_qp_class;
            NoAction;
        }
        default_action = NoAction();
        size = NIC_TABLE_SIZE;
    }

    action set_app_class(NicClass_t nic_class) {
        meta.nic_class = nic_class;
        meta.classified = 1;
    }
    table app_class {
        key = {
            hdr.ipv4.protocol : exact @name("protocol");
            meta.l4_dport     : ternary @name("l4_dport");
            hdr.ipv4.dscp     : ternary @name("app_tag");
        }
        actions = {
            set_app_class;
            NoAction;
        }
        default_action = NoAction();
        size = NIC_TABLE_SIZE;
    }

    action set_class_policy(bit<6> dscp, bool ecn_capable, bit<8> queue) {
        hdr.ipv4.dscp = dscp;
        if (ecn_capable && hdr.ipv4.ecn == ECN_NOT_ECT) {
            hdr.ipv4.ecn = ECN_ECT0;
        }
        meta.queue = queue;
    }
    table class_policy {
        key = {
            meta.nic_class : exact @name("nic_class");
        }
        actions = {
            set_class_policy;
            NoAction;
        }
        default_action = NoAction();
        size = NIC_CLASSES;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            return;
        }
        if (meta.is_roce == 1) {
            qp_class.apply();
            bit<8> op = hdr.bth.opcode;
            bool one_packet = op == RC_SEND_ONLY || op == RC_SEND_ONLY_IMM ||
                              op == RC_RDMA_WRITE_ONLY || op == RC_RDMA_WRITE_ONLY_IMM;
            if (meta.has_qp == 1 && one_packet && hdr.ipv4.total_len <= meta.urgent_max_len) {
                meta.urgent = 1;
            }
        } else {
            app_class.apply();
        }
        if (meta.classified == 1) {
            class_policy.apply();
        }
        if (meta.urgent == 1) {
            meta.queue = QUEUE_URGENT;
        }
    }
}

#endif
