// P4_16 spec 8.18 "Operations on header stacks": "Some implementations may impose the
// constraint that the index expression must be a compile-time known value." BMv2 does
// for stacks of header unions: p4c flattens such a stack into one union per index and
// turns a run-time index into constant ones in controls, but not in a parser.
// p4test differs: p4test 1.2.5.16 accepts (it only flattens union stacks with
// --loopsUnroll, and then crashes on this; later p4c reports this error), and
// p4c-bm2-ss 1.2.5.16 crashes on it (SIGSEGV).
#include "include/v1model_head.p4"
parser P2(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.us[hdr.h.a].h);  // error: Target expects constant array indices
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P2(), VC(), I(), E(), CC(), D()) main;
