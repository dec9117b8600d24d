// P4_16 spec 12.8.2 "Variable width extraction", 12.8.4 "Skipping bits" and the
// parser errors of core.p4: a varbit size or an advance that is not a whole number of
// bytes is error.ParserInvalidArgument on BMv2 (before any other check), a header
// longer than what is left is error.PacketTooShort, a varbit size past the field's
// maximum error.HeaderTooShort. On v1model the parser stops, the error is in
// standard_metadata.parser_error and the packet goes on to ingress.
#include "include/v1model_head.p4"
header vl_t { bit<8> tag; varbit<32> data; }
struct vl_headers { h_t h; vl_t vl; }
parser P2(packet_in pkt, out vl_headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { 1: vl; 2: skip; default: accept; }
    }
    state vl { pkt.extract(hdr.vl, (bit<32>)hdr.h.b); transition accept; }
    state skip { pkt.advance((bit<32>)hdr.h.b); transition accept; }
}
control VC2(inout vl_headers hdr, inout meta_t m) { apply { } }
control I2(inout vl_headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) { sm.egress_spec = 1; }
        else if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 2; }
        else if (sm.parser_error == error.HeaderTooShort) { sm.egress_spec = 3; }
        else if (sm.parser_error == error.ParserInvalidArgument) { sm.egress_spec = 4; }
        else { sm.egress_spec = 5; }
    }
}
control E2(inout vl_headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC2(inout vl_headers hdr, inout meta_t m) { apply { } }
control D2(packet_out pkt, in vl_headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P2(), VC2(), I2(), E2(), CC2(), D2()) main;
