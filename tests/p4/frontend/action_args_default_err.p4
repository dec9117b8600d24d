// P4_16 spec 14.2.1.3 "Default action" with 18.1 "Compile-time known values": the
// arguments of a table's default action that the control plane would supply
// (directionless parameters) must be compile-time known; a cast of a metadata field is
// not.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { fwd; }
        default_action = fwd((bit<9>)m.m);  // error: action argument must be a compile-time constant
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
