/*
 * tailcc NIC, receive side: which local QP a RoCEv2 packet from the network is for.
 * `local_qp`, keyed by the BTH destination QP (ours) and filled by the serving stack,
 * gives the QP's state slot (the same slot qp_class gives its transmit side, so CNPs
 * act on the rate and EV state of the QP they name) and the peer's QP, the
 * destination QP of the receiver CNPs this NIC sends back.
 */
#ifndef _TAILCC_NIC_QP_LOOKUP_
#define _TAILCC_NIC_QP_LOOKUP_

#include "headers.p4"

control RxQpLookup(in headers_t hdr, inout nic_metadata_t meta) {
    action set_local_qp(QpSlot_t slot, Qpn_t peer_qp, NicClass_t nic_class) {
        meta.qp_slot = slot;
        meta.peer_qp = peer_qp;
        meta.nic_class = nic_class;
        meta.has_qp = 1;
    }
    table local_qp {
        key = {
            hdr.bth.dst_qp : exact @name("local_qp");
        }
        actions = {
            set_local_qp;
            NoAction;
        }
        default_action = NoAction();
        size = NIC_TABLE_SIZE;
    }
    apply {
        if (meta.is_roce == 1) {
            local_qp.apply();
        }
    }
}

#endif
