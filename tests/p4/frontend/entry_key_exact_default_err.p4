// P4_16 spec 14.2.1.4 "Entries": an exact key matches one value; `_` (any value) is
// not one.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; hdr.h.b : ternary; }
        actions = { fwd; }
        const entries = {
            (_, 0x01 &&& 0x0f) : fwd(1);  // error: invalid key expression
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
