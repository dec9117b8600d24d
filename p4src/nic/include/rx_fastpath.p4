/*
 * tailcc NIC, receive side: the fast path to the host for packets that tell the
 * host's transport to act now: NAKs (an ACK whose AETH syndrome says NAK) and
 * trimmed packets (UEC packet trimming: a switch cut the payload and re-marked the
 * DSCP). `rx_fast_path` (ternary on DSCP, BTH opcode and AETH syndrome, filled from
 * the intent file) picks them; they go in the urgent queue and skip flow learning.
 */
#ifndef _TAILCC_NIC_RX_FASTPATH_
#define _TAILCC_NIC_RX_FASTPATH_

#include "headers.p4"

control RxFastPath(in headers_t hdr, inout nic_metadata_t meta) {
    Counter<bit<64>, bit<1>>(1, PNA_CounterType_t.PACKETS_AND_BYTES) fast_path_packets;

    action fast_path() {
        meta.fast_path = 1;
        meta.queue = QUEUE_URGENT;
        fast_path_packets.count(0);
    }
    table rx_fast_path {
        key = {
            hdr.ipv4.dscp      : ternary @name("dscp");
            hdr.bth.opcode     : ternary @name("bth_opcode");
            meta.aeth_syndrome : ternary @name("aeth_syndrome");
        }
        actions = {
            fast_path;
            NoAction;
        }
        default_action = NoAction();
        size = 64;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            rx_fast_path.apply();
        }
    }
}

#endif
