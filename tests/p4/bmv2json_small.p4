// softswitch from p4c's BMv2 JSON over P4Runtime (tests/test_bmv2json_p4runtime.py): ids fixed by
// @id (the JSON keeps none, so the client's P4Info must be matched by names) and
// controller headers (which only the P4Info marks); an optional match and a
// @defaultonly action (the JSON writes the first as ternary and keeps no scope).
#include <core.p4>
#include <v1model.p4>

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { packet_in_t packet_in; packet_out_t packet_out; ethernet_t eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { 255: cpu; default: eth; }
    }
    state cpu { pkt.extract(hdr.packet_out); transition eth; }
    state eth { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    @id(0x01000abc) action fwd(bit<9> port) { sm.egress_spec = port; }
    action to_cpu() { sm.egress_spec = 255; }
    action drop() { mark_to_drop(sm); }
    @id(0x02000abc) table dmac {
        key = { hdr.eth.dst: exact @name("dst"); }
        actions = { fwd; to_cpu; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.eth.src: optional @name("src"); hdr.eth.etype: optional @name("etype"); }
        actions = { drop; @defaultonly NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            dmac.apply();
            acl.apply();
        }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 255) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
        }
    }
}
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.eth); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
