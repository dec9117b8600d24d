/*
 * PNA sample: flow learning and per-flow state. Packet tests: tests/test_pna_samples.py.
 *
 * - `flows` is an add_on_miss table: a miss allocates a flow id (allocate_flow_id) and
 *   adds the flow with add_entry under expire-time profile 1, and sends a digest;
 * - a hit counts the flow (DirectCounter), meters it (DirectMeter: RED drops), moves
 *   the entry to the expire-time profile the packet's DSCP names
 *   (set_entry_expire_time) and restarts its timer (restart_expire_timer);
 * - an indexed Meter polices per DSCP before the lookup (RED drops);
 * - the flow id travels in the IPv4 identification field.
 */
#include <core.p4>
#include <pna.p4>
#include "common_headers.p4"

struct meta_t {
    bit<8> profile;
}

struct flow_digest_t {
    bit<32> src;
    bit<32> dst;
}

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ip);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout meta_t meta,
                       in pna_pre_input_metadata_t istd,
                       inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control MainControlImpl(inout headers_t hdr, inout meta_t meta,
                        in pna_main_input_metadata_t istd,
                        inout pna_main_output_metadata_t ostd) {
    DirectCounter<bit<64>>(PNA_CounterType_t.PACKETS_AND_BYTES) flow_packets;
    DirectMeter(PNA_MeterType_t.PACKETS) flow_meter;
    Meter<bit<6>>(64, PNA_MeterType_t.PACKETS) dscp_police;
    Digest<flow_digest_t>() new_flows;

    action flow_hit(FlowId_t flow) {
        flow_packets.count();
        set_entry_expire_time((ExpireTimeProfileId_t)meta.profile);
        restart_expire_timer();
        hdr.ip.id = (bit<16>)(FlowIdUint_t)flow;
        if (flow_meter.execute() == PNA_MeterColor_t.RED) {
            drop_packet();
        } else {
            send_to_port((PortId_t)1);
        }
    }
    action flow_miss() {
        FlowId_t flow = allocate_flow_id();
        add_entry(action_name = "flow_hit", action_params = flow,
                  expire_time_profile_id = (ExpireTimeProfileId_t)1);
        hdr.ip.id = (bit<16>)(FlowIdUint_t)flow;
        send_to_port((PortId_t)1);
    }
    table flows {
        key = {
            hdr.ip.src : exact;
            hdr.ip.dst : exact;
        }
        actions = {
            @tableonly flow_hit;
            @defaultonly flow_miss;
        }
        const default_action = flow_miss;
        add_on_miss = true;
        pna_direct_counter = flow_packets;
        pna_direct_meter = flow_meter;
        size = 4;
    }
    apply {
        meta.profile = (bit<8>)hdr.ip.dscp;
        if (dscp_police.execute(hdr.ip.dscp) == PNA_MeterColor_t.RED) {
            drop_packet();
            return;
        }
        if (flows.apply().miss) {
            new_flows.pack({hdr.ip.src, hdr.ip.dst});
        }
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in meta_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
    }
}

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
