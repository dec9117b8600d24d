// P4_16 spec 18.1 "Compile-time known values": constants, arithmetic, casts and
// concatenations of them are compile-time known, so they may be the action arguments
// of a default action and of entries; a directional parameter's argument is bound at
// run time and need not be.
#include "include/v1model_head.p4"
const bit<8> BASE = 3;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action tag(inout bit<8> field, bit<8> value) { field = value; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { fwd; tag(hdr.h.b); }
        default_action = fwd((bit<9>)BASE + 1);
        const entries = {
            1 : fwd(1w1 ++ 8w2);
            2 : tag(hdr.h.b, BASE * 2);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
