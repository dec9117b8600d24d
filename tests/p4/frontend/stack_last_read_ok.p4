// P4_16 spec 8.18 "Operations on header stacks": in a parser, hs.last and hs.lastIndex
// read the element extracted last; hs.next is where extract writes.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t[2] hs; }
struct meta_t { bit<8> first; bit<32> index; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.hs.next);
        m.first = hdr.hs.last.a;
        pkt.extract(hdr.hs.next);
        m.index = hdr.hs.lastIndex;
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.hs[1].a = m.first + (bit<8>)m.index;
        sm.egress_spec = 1;
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.hs); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
