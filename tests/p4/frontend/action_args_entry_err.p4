// P4_16 spec 14.2.1.4 "Entries" with 18.1 "Compile-time known values": an entry's
// action arguments must be compile-time known.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { fwd; }
        const entries = {
            1 : fwd(1);
            2 : fwd(hdr.h.b ++ 1w0);  // error: action argument must be a compile-time constant
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
