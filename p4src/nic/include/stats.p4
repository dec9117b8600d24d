/*
 * tailcc NIC: counters. Packets and bytes per direction and class (index
 * direction * 16 + class; direction 0 = to the network, 1 = to the host), packets
 * dropped on a parser error, and drops by the class policers.
 */
#ifndef _TAILCC_NIC_STATS_
#define _TAILCC_NIC_STATS_

#include "headers.p4"

const bit<2> NIC_DROP_PARSER_ERROR = 0;
const bit<2> NIC_DROP_POLICER      = 1;
const bit<2> NIC_DROP_CNP_CONSUMED = 2;   /* CNPs end at the NIC's reaction point */

control NicStats(in nic_metadata_t meta, in bool to_host, in bool dropped,
                 in bit<2> drop_reason) {
    Counter<bit<64>, bit<5>>(32, PNA_CounterType_t.PACKETS_AND_BYTES) class_packets;
    Counter<bit<64>, bit<2>>(4, PNA_CounterType_t.PACKETS) nic_drops;

    apply {
        if (dropped) {
            nic_drops.count(drop_reason);
            return;
        }
        bit<1> d = 0;
        if (to_host) {
            d = 1;
        }
        class_packets.count(d ++ meta.nic_class);
    }
}

#endif
