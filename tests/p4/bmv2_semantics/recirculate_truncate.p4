/*
 * What BMv2 simple_switch does with an ingress clone that egress truncates and
 * recirculates (tailcc's Fast CNP path), measured with p4c's STF driver on BMv2
 * 1.15.5 and required of softswitch by tests/test_bmv2_semantics.py:
 *  - a clone session may point at a port with no interface: egress still runs;
 *  - truncate() before recirculate is dropped: the recirculated packet is the whole
 *    deparsed packet (Packet::get_data_size is only applied at transmit);
 *  - the recirculated pass has instance_type RECIRC (4) in ingress, NORMAL (0) in
 *    egress, packet_length = the full length, and only the field list's metadata.
 * Each header byte records one observation (see recirculate_truncate.stf).
 */
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> marker;            /* 0xcc once egress has seen the clone */
    bit<8> clone_egress_port;
    bit<8> recirc_instance_type;
    bit<8> recirc_packet_length;
    bit<8> clone_priority;
    bit<8> second_egress_instance_type;
    bit<8> kept_port;         /* preserved through recirculation */
    bit<8> second_egress_priority;
}

struct headers_t { probe_t p; }

struct meta_t {
    @field_list(1) bit<8> cloned;
    @field_list(2) bit<8> released;
    @field_list(2) bit<9> port;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.released == 8w1) {
            sm.egress_spec = 2;
            hdr.p.recirc_instance_type = (bit<8>)sm.instance_type;
            hdr.p.recirc_packet_length = (bit<8>)sm.packet_length;
            hdr.p.kept_port = (bit<8>)meta.port;
        } else {
            sm.egress_spec = 1;
            meta.cloned = 8w1;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 32w1) {
            hdr.p.marker = 0xcc;
            hdr.p.clone_egress_port = (bit<8>)sm.egress_port;
            hdr.p.clone_priority = (bit<8>)sm.priority;
            meta.released = 8w1;
            meta.port = 9w3;
            truncate(8);
            recirculate_preserving_field_list(2);
        } else if (meta.released == 8w1) {
            hdr.p.second_egress_instance_type = (bit<8>)sm.instance_type;
            hdr.p.second_egress_priority = (bit<8>)sm.priority;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
