// P4_16 spec 8.18 "Operations on header stacks": hs.last names the element extracted last;
// it is not an l-value, so it cannot be the out argument of extract (hs.next is).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t[2] hs; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.hs.next);
        pkt.extract(hdr.hs.last);  // error: Read-only value used for out parameter
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.hs); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
