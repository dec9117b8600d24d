// P4_16 spec 12.11 "Parser Value Sets": the size is a compile-time known integer; a
// boolean is not one.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(true) pvs;  // error: value_set size must be constant
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { pvs: accept; default: accept; }
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
