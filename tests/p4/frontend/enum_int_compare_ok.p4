// P4_16 spec 8.3 "Operations on serializable enums": in a comparison and in a select keyset
// an untyped integer is converted to the enum (its underlying type).
#include <core.p4>
#include <v1model.p4>
enum bit<8> E8 { A = 1, B = 2 }
header h_t { E8 kind; bit<8> v; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) { 2: accept; default: reject; }
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.kind == 2) { hdr.h.v = 7; }
        sm.egress_spec = 1;
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
