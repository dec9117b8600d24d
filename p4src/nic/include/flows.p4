/*
 * tailcc NIC: flow learning. `flows` is an add-on-miss table on the 5-tuple (taken
 * before the EV rewrites the UDP source port): the first packet of a flow allocates
 * a flow id (allocate_flow_id) and adds the flow under FLOW_EXPIRE_PROFILE, whose idle
 * timeout the controller sets; every later packet restarts the entry's expire timer
 * and is counted by the entry's direct counter. The flow id is in meta.flow_id.
 */
#ifndef _TAILCC_NIC_FLOWS_
#define _TAILCC_NIC_FLOWS_

#include "headers.p4"

control FlowLearning(in headers_t hdr, inout nic_metadata_t meta) {
    DirectCounter<bit<64>>(PNA_CounterType_t.PACKETS_AND_BYTES) flow_packets;

    action flow_known(FlowId_t flow_id) {
        flow_packets.count();
        restart_expire_timer();
        meta.flow_id = (bit<32>)(FlowIdUint_t)flow_id;
    }
    action flow_new() {
        FlowId_t flow_id = allocate_flow_id();
        add_entry(action_name = "flow_known", action_params = flow_id,
                  expire_time_profile_id = (ExpireTimeProfileId_t)FLOW_EXPIRE_PROFILE);
        meta.flow_id = (bit<32>)(FlowIdUint_t)flow_id;
    }
    table flows {
        key = {
            hdr.ipv4.src_addr : exact @name("src_addr");
            hdr.ipv4.dst_addr : exact @name("dst_addr");
            hdr.ipv4.protocol : exact @name("protocol");
            meta.l4_sport     : exact @name("l4_sport");
            meta.l4_dport     : exact @name("l4_dport");
        }
        actions = {
            @tableonly flow_known;
            @defaultonly flow_new;
        }
        const default_action = flow_new;
        add_on_miss = true;
        pna_direct_counter = flow_packets;
        size = NIC_FLOW_TABLE_SIZE;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            flows.apply();
        }
    }
}

#endif
