/*
 * tailcc: PAUSE / PFC frames (EtherType 0x8808).
 *
 * MAC-control frames are link-local: a switch must never forward them.  We
 * count every one per ingress port, and PFC frames also per (port, priority)
 * for each priority whose enable bit is set, so operators can see pause
 * storms and which class is being paused (the brief's "innocent flows per
 * PFC pause" diagnostic starts here).  Then the frame is dropped.
 */
#ifndef _TAILCC_MAC_CONTROL_
#define _TAILCC_MAC_CONTROL_

#include "headers.p4"

control MacControl(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    counter(NUM_PORTS, CounterType.packets) mac_control_frame_counter;
    counter(PORT_QUEUE_SLOTS, CounterType.packets) pfc_priority_counter;

    apply {
        if (hdr.mac_control.isValid()) {
            mac_control_frame_counter.count((bit<32>)standard_metadata.ingress_port);
            if (hdr.pfc.isValid()) {
                bit<32> base = (bit<32>)standard_metadata.ingress_port << 3;
                if (hdr.pfc.class_enable[0:0] == 1w1) { pfc_priority_counter.count(base); }
                if (hdr.pfc.class_enable[1:1] == 1w1) { pfc_priority_counter.count(base | 32w1); }
                if (hdr.pfc.class_enable[2:2] == 1w1) { pfc_priority_counter.count(base | 32w2); }
                if (hdr.pfc.class_enable[3:3] == 1w1) { pfc_priority_counter.count(base | 32w3); }
                if (hdr.pfc.class_enable[4:4] == 1w1) { pfc_priority_counter.count(base | 32w4); }
                if (hdr.pfc.class_enable[5:5] == 1w1) { pfc_priority_counter.count(base | 32w5); }
                if (hdr.pfc.class_enable[6:6] == 1w1) { pfc_priority_counter.count(base | 32w6); }
                if (hdr.pfc.class_enable[7:7] == 1w1) { pfc_priority_counter.count(base | 32w7); }
            }
            meta.drop = 1w1;
            meta.drop_reason = (bit<8>)DROP_PFC;
        }
    }
}

#endif  /* _TAILCC_MAC_CONTROL_ */
